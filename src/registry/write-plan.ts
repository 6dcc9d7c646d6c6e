/**
 * The writes of an apply (src/registry/apply.ts) and of an upload's
 * (src/registry/apply-upload.ts), in their transaction: a plan's rows, a
 * trust policy, paced so that the reads beside them keep their share of the
 * database.
 */
import { setTimeout } from 'node:timers/promises';
import { type BulkRow, bulkStatement, chunks, column, insertRows, rowJson } from '../db/bulk-write.js';
import { lockRegistry } from '../db/registry-lock.js';
import type { Prisma } from '../generated/prisma/client.js';
import type { TrustPolicyDocument } from '../metric/trust-policy.js';
import { archiveMetrics, restoreHistory } from './archive.js';
import type { RemovedMetrics } from './events.js';
import type { PlanWrites } from './plan.js';

/**
 * After each statement of its writes, an apply waits as long as the statement
 * took: it takes at most about half of the database's time while it runs,
 * and the reads of every tenant beside it keep the rest. A large apply takes
 * about twice as long; an apply of a few changes is one or two statements.
 */
const WRITE_PACE = 1;

export async function paced<T>(statement: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await statement();
  await setTimeout((performance.now() - started) * WRITE_PACE);
  return result;
}

/** A large apply is many statements; the pool's statement_timeout is meant for reads. */
const APPLY_TIMEOUT_MS = 300_000;
/** Prisma's interactive transaction of an apply that may take `timeoutMs`. */
export const transactionOptions = (timeoutMs = APPLY_TIMEOUT_MS) => ({ timeout: timeoutMs, maxWait: 60_000 });

/**
 * What a writing apply does first in its transaction: takes the
 * organization's registry lock, the apply's statement timeout, and marks its
 * writes as the apply's (they keep the applied_hash they set, see the migration).
 */
export async function beginApply(
  tx: Prisma.TransactionClient,
  orgId: string,
  timeoutMs = APPLY_TIMEOUT_MS,
): Promise<void> {
  await lockRegistry(tx, orgId);
  await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${timeoutMs}`);
  await tx.$executeRawUnsafe(`SET LOCAL registry.apply = 'on'`);
}

type Tx = Prisma.TransactionClient;
/** Updates metrics to the rows given (all columns but their id, organization and creation time), likewise. */
async function updateMetrics(tx: Tx, rows: readonly BulkRow[]): Promise<void> {
  const [first] = rows;
  if (!first) return;
  const fields = Object.keys(first).filter((field) => !['id', 'orgId', 'createdAt'].includes(field));
  const columns = fields.map((field) => `"${column(field)}"`);
  for (const chunk of chunks(rows)) {
    await paced(() =>
      bulkStatement(
        tx,
        `UPDATE "metric" AS m SET (${columns.join(', ')}) = (${columns.map((c) => `r.${c}`).join(', ')})
       FROM jsonb_populate_recordset(NULL::"metric", $1::jsonb) AS r WHERE m."id" = r."id"`,
        rowJson(chunk),
      ),
    );
  }
}

async function deleteWhere(tx: Tx, table: string, key: string, ids: readonly string[]): Promise<void> {
  for (const chunk of chunks(ids)) {
    await paced(() => tx.$executeRawUnsafe(`DELETE FROM "${table}" WHERE "${key}" = ANY($1::uuid[])`, chunk));
  }
}

/** The tables a plan's relationships and inputs are inserted into. */
export interface LinkTables {
  relationships: string;
  inputs: string;
}

const LINK_TABLES: LinkTables = { relationships: 'metric_relationship', inputs: 'metric_input' };

/**
 * Writes a plan's rows. Its relationships and inputs go to `links`: the
 * registry's tables, or tables of the transaction that an upload moves into
 * them once every metric it lists is written (src/registry/apply-upload.ts).
 */
export async function writePlan(
  tx: Tx,
  orgId: string,
  writes: PlanWrites,
  now: Date,
  links: LinkTables = LINK_TABLES,
): Promise<void> {
  await insertRows(tx, 'project', writes.projects, paced);
  await insertRows(tx, 'domain', writes.domains, paced);
  await insertRows(tx, 'metric', [...writes.created, ...writes.restored], paced);
  for (const chunk of chunks(writes.restored.map((row) => row.key))) {
    await paced(() => restoreHistory(tx, orgId, chunk));
  }
  await updateMetrics(
    tx,
    writes.updated.map(({ data }) => data),
  );
  await deleteWhere(tx, 'approval', 'metric_id', writes.governanceOf);
  await deleteWhere(tx, 'metric_version', 'metric_id', writes.governanceOf);
  await deleteWhere(tx, 'metric_relationship', 'metric_id', writes.relationshipsOf);
  await deleteWhere(tx, 'metric_input', 'metric_id', writes.inputsOf);
  await insertRows(tx, 'metric_version', writes.versions, paced);
  await insertRows(tx, 'approval', writes.approvals, paced);
  await insertRows(tx, links.relationships, writes.relationships, paced);
  await insertRows(tx, links.inputs, writes.inputs, paced);
  if (writes.trustPolicy) await writeTrustPolicy(tx, orgId, writes.trustPolicy.value);
  for (const chunk of chunks(writes.removed)) await paced(() => archiveMetrics(tx, orgId, chunk, now));
  await deleteWhere(tx, 'metric', 'id', writes.removed);
}

/**
 * Stores the organization's trust policy (null: the defaults) and bumps the
 * ETag of each of its metrics and its `metrics_version`: what a verdict's
 * explanation says may change even where the verdict does not.
 */
export async function writeTrustPolicy(tx: Tx, orgId: string, policy: TrustPolicyDocument | null): Promise<void> {
  const value = policy === null ? null : JSON.stringify(policy);
  await tx.$executeRaw`UPDATE "organization" SET "trust_policy" = ${value}::jsonb,
    "metrics_version" = "metrics_version" + 1 WHERE "id" = ${orgId}::uuid`;
  await tx.$executeRaw`UPDATE "metric_etag" SET "version" = nextval('metric_etag_seq')
    WHERE "metric_id" IN (SELECT "id" FROM "metric" WHERE "org_id" = ${orgId}::uuid)`;
}

export async function readRemoved(tx: Tx, ids: readonly string[]): Promise<RemovedMetrics> {
  const rows = ids.length
    ? await tx.metric.findMany({
        where: { id: { in: [...ids] } },
        select: { id: true, key: true, name: true, lifecycleStatus: true },
      })
    : [];
  return new Map(rows.map((row) => [row.id, row]));
}
