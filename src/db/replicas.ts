/**
 * Read replicas (DATABASE_REPLICA_URLS): a pool per streaming replica, opened
 * and prepared like the primary's (src/db/adapter.ts, src/db/sql.ts), and
 * which of them take reads now.
 *
 * Every check interval this instance reads the primary's WAL position and
 * then each replica's replay position. A replica's lag is the age of the
 * oldest primary position it has not replayed yet, as this process's clock
 * saw it: a replica that has replayed everything the primary had is 0 behind
 * however long ago the last write was (a replay timestamp would grow on an
 * idle primary), and one whose replay is paused falls behind by the time
 * since the first write it missed. A replica more than `maxLagMs` behind, or
 * not answering, or failing a read, leaves the read set until a check finds
 * it within the bound again.
 */
import type pg from 'pg';
import { type AdapterOptions, openPool } from './adapter.js';
import { preparedReader, type SqlReader } from './sql.js';

/** A WAL position ('16/B374D848') as a number, to compare. */
export function parseLsn(text: string): bigint {
  const [high = '0', low = '0'] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

export interface Replica {
  /** host:port/database, no credentials */
  readonly name: string;
  /** prepared statements and point-read batches, as the primary's reader */
  readonly reader: SqlReader;
  /** in the read set now */
  readonly reads: boolean;
  /** the replay position the last check saw: the replica has replayed at least this far */
  readonly replayLsn: bigint | null;
  /** null: unknown (not answering, or not checked yet) */
  readonly lagMs: number | null;
  /** why it is out of the read set; null while in it */
  readonly reason: string | null;
  /** reads that failed on it and ran on the primary instead */
  readonly failedReads: number;
}

interface Logger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export interface ReplicaSetOptions extends Omit<AdapterOptions, 'owner'> {
  /** REPLICA_MAX_LAG_MS: a replica further behind takes no reads */
  maxLagMs: number;
  /** default: half of maxLagMs, between 50 ms and 1 s */
  checkIntervalMs?: number;
  logger: Logger;
}

export interface ReplicaSet {
  readonly replicas: readonly Replica[];
  readonly maxLagMs: number;
  /** A replica of the read set (in turn), or null: read on the primary. */
  pick(): Replica | null;
  /** A read on `replica` failed: it leaves the read set until a check finds it well again. */
  failed(replica: Replica, error: unknown): void;
  /** The primary's WAL position now: after a write commits, what a replica must replay to show it. */
  primaryLsn(): Promise<bigint>;
  /** Checks every replica once now (also run every check interval). */
  check(): Promise<void>;
  close(): Promise<void>;
}

class ReplicaState implements Replica {
  reads = false;
  replayLsn: bigint | null = null;
  lagMs: number | null = null;
  reason: string | null = 'not checked yet';
  failedReads = 0;
  readonly reader: SqlReader;

  constructor(
    readonly name: string,
    readonly pool: pg.Pool,
    unnamed: boolean,
  ) {
    this.reader = preparedReader(pool, { unnamed });
  }
}

function describe(url: string): string {
  const parsed = new URL(url);
  return `${parsed.host}${parsed.pathname}`;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * `promise`, or a rejection after `ms`: a server that stops answering (not
 * refusing) fails its check at once, even while a connection to it is still
 * being opened. The check's own `query_timeout` then gives its connection
 * back (closed), so a hung server holds none and closing never waits on it.
 */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Opens a pool per replica URL and checks them once (a replica that does
 * not answer is out of the read set, not a start-up failure: reads go to
 * the primary until it answers), then every check interval.
 */
export async function openReplicaSet(
  primary: pg.Pool,
  urls: readonly string[],
  options: ReplicaSetOptions,
): Promise<ReplicaSet> {
  const { maxLagMs, logger } = options;
  const interval = options.checkIntervalMs ?? Math.min(1000, Math.max(50, Math.floor(maxLagMs / 2)));
  const timeoutMs = Math.max(1000, interval);
  const replicas = urls.map(
    (url) =>
      new ReplicaState(
        describe(url),
        openPool(url, {
          poolSize: options.poolSize,
          poolMode: options.poolMode,
          statementTimeoutMs: options.statementTimeoutMs,
          // A replica that stops answering (not refusing) would hold a read until the request's
          // deadline: past the statement timeout by a second, the read is given up and runs on the primary.
          ...(options.statementTimeoutMs ? { queryTimeoutMs: options.statementTimeoutMs + 1000 } : {}),
        }),
        // Behind a transaction pooler (DATABASE_POOL_MODE), as the primary's: nothing prepared.
        options.poolMode === 'transaction',
      ),
  );
  /** The primary's positions of the last checks, oldest first: a replica's lag is read off them. */
  let samples: { at: number; lsn: bigint }[] = [];

  const setReads = (replica: ReplicaState, reads: boolean, reason: string | null) => {
    replica.reason = reason;
    if (replica.reads === reads) return;
    replica.reads = reads;
    const fields = { replica: replica.name, lagMs: replica.lagMs === null ? null : Math.round(replica.lagMs) };
    if (reads) logger.info(fields, 'replica joined the read set');
    else logger.warn({ ...fields, reason }, 'replica left the read set');
  };
  const failed = (replica: Replica, error: unknown) => {
    const state = replica as ReplicaState;
    state.failedReads++;
    setReads(state, false, `failed a read: ${messageOf(error)}`);
  };
  for (const replica of replicas) {
    // An idle connection that breaks (the replica stopped) is reported here, not thrown.
    replica.pool.on('error', (error) => setReads(replica, false, `connection lost: ${error.message}`));
  }

  /** A check's statement, given up after the timeout (node-postgres's `query_timeout`, which its types leave out). */
  const checkQuery = (text: string) => ({ text, query_timeout: timeoutMs }) as pg.QueryConfig;

  const primaryLsn = async () => {
    const { rows } = await within(
      primary.query<{ lsn: string }>(checkQuery('SELECT pg_current_wal_lsn()::text AS lsn')),
      timeoutMs,
      'the primary',
    );
    return parseLsn(rows[0]?.lsn ?? '0/0');
  };

  const checkReplica = async (replica: ReplicaState) => {
    try {
      const { rows } = await within(
        replica.pool.query<{ lsn: string | null }>(checkQuery('SELECT pg_last_wal_replay_lsn()::text AS lsn')),
        timeoutMs,
        replica.name,
      );
      const text = rows[0]?.lsn ?? null;
      if (text === null) {
        replica.lagMs = null;
        return setReads(replica, false, 'not a standby (it replays no WAL)');
      }
      const replayed = parseLsn(text);
      replica.replayLsn = replayed;
      const missed = samples.find((sample) => sample.lsn > replayed);
      replica.lagMs = missed ? performance.now() - missed.at : 0;
      const caughtUp = replica.lagMs <= maxLagMs;
      setReads(replica, caughtUp, caughtUp ? null : `${Math.round(replica.lagMs)} ms behind`);
    } catch (error) {
      replica.lagMs = null;
      setReads(replica, false, `not answering: ${messageOf(error)}`);
    }
  };

  let primaryDown = false;
  const check = async () => {
    const at = performance.now();
    try {
      samples.push({ at, lsn: await primaryLsn() });
      if (primaryDown) logger.info({}, 'the primary answers again: replica lag is measured again');
      primaryDown = false;
    } catch (error) {
      // Without the primary's position no lag can be measured: the read set stays as it is.
      if (!primaryDown) logger.warn({ err: error }, 'replica lag cannot be measured: the primary does not answer');
      primaryDown = true;
      return;
    }
    // Samples older than this are not needed: a replica behind all of them is out by that alone.
    samples = samples.filter((sample) => sample.at >= at - maxLagMs - 2 * interval);
    await Promise.all(replicas.map(checkReplica));
  };

  let closed = false;
  let running: Promise<void> = check();
  await running;
  // A replica that is well at start says so by joining; one that is not is said here, once.
  for (const replica of replicas) {
    if (!replica.reads)
      logger.warn({ replica: replica.name, reason: replica.reason }, 'replica takes no reads at start');
  }
  let timer: NodeJS.Timeout;
  const schedule = () => {
    timer = setTimeout(() => {
      running = check().finally(() => {
        if (!closed) schedule();
      });
    }, interval);
    timer.unref();
  };
  schedule();

  let turn = 0;
  return {
    replicas,
    maxLagMs,
    pick() {
      const reading = replicas.filter((replica) => replica.reads);
      if (reading.length === 0) return null;
      turn = (turn + 1) % reading.length;
      return reading[turn] ?? null;
    },
    failed,
    primaryLsn,
    check: () => {
      running = running.then(check);
      return running;
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await running.catch(() => {});
      await Promise.all(replicas.map((replica) => (replica.pool.ended ? undefined : replica.pool.end())));
    },
  };
}
