/**
 * One writer of an organization's registry at a time: applies, validation
 * evidence and the trust sweep take this transaction-scoped advisory lock
 * first, so each reads the state the previous one left. Readers take no lock.
 *
 * A writer that runs in a {@link registryWriterTurn} (the HTTP write routes,
 * src/registry/write-queue.ts) only tries the lock: when another transaction
 * holds it, its own transaction fails at once with {@link RegistryLockBusy},
 * which gives its connection back to the pool, and the queue tries again
 * later. A waiter blocked in `pg_advisory_xact_lock` would hold a pooled
 * connection for as long as it waits, and the pool's statement_timeout would
 * end its wait as a failure. Other writers (the CLI, the sweep) wait in the
 * database as before. The holder names itself in its session's
 * `application_name` for as long as its transaction runs, so that a writer
 * on any instance can say who holds the lock and since when.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Prisma } from '../generated/prisma/client.js';

/** What a queued writer tells the lock: the label its transaction shows while it holds the lock. */
export interface RegistryWriterTurn {
  /** at most 63 bytes of ASCII (PostgreSQL's `application_name`) */
  label: string;
  /** called once the lock is this transaction's */
  locked(): void;
}

const turns = new AsyncLocalStorage<RegistryWriterTurn>();

/** Runs `attempt` as a queued writer: its lockRegistry() tries the lock instead of waiting for it. */
export function registryWriterTurn<T>(turn: RegistryWriterTurn, attempt: () => Promise<T>): Promise<T> {
  return turns.run(turn, attempt);
}

/** Who holds an organization's registry lock, as the holder's session shows it. */
export interface RegistryLockHolder {
  /** the holder's label; null when its writer is not a queued one (the CLI, the sweep) */
  label: string | null;
  /** when the holder's transaction began */
  since: Date;
}

/** The lock was held by another transaction; this one has been rolled back. */
export class RegistryLockBusy extends Error {
  constructor(readonly holder: RegistryLockHolder | null) {
    super('the registry lock of this organization is held by another transaction');
  }
}

const lockKey = (orgId: string) => `registry:${orgId}`;

export async function lockRegistry(tx: Prisma.TransactionClient, orgId: string): Promise<void> {
  const turn = turns.getStore();
  if (!turn) {
    await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended(${lockKey(orgId)}, 0))`;
    return;
  }
  const [row] = await tx.$queryRaw<{ locked: boolean }[]>`
    SELECT pg_try_advisory_xact_lock(hashtextextended(${lockKey(orgId)}, 0)) AS locked`;
  if (!row?.locked) throw new RegistryLockBusy(await lockHolder(tx, orgId));
  // Transaction-local: the session's own name comes back at commit or rollback.
  await tx.$queryRaw`SELECT set_config('application_name', ${turn.label}, true) AS label`;
  turn.locked();
}

/**
 * The session holding the lock, from the server's lock table (a bigint key
 * is its high half in `classid`, its low half in `objid`, `objsubid` 1).
 * Null when it was released in between.
 */
async function lockHolder(tx: Prisma.TransactionClient, orgId: string): Promise<RegistryLockHolder | null> {
  const [row] = await tx.$queryRaw<{ label: string | null; since: Date | null }[]>`
    WITH k AS (SELECT hashtextextended(${lockKey(orgId)}, 0) AS key)
    SELECT a.application_name AS label, a.xact_start AS since
    FROM k, pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid
    LIMIT 1`;
  if (!row?.since) return null;
  return { label: row.label || null, since: row.since };
}
