/**
 * Where a prune puts the metrics it removes: `removed_metric`, one row per
 * metric with a JSONB snapshot of its row and of every row that hung off it,
 * kept for the change feed's retention (the sweep purges older ones,
 * src/changes/sweep.ts). The registry's own tables hold only live metrics, so
 * no list, search, count, ETag or trigger has to tell removed from kept.
 *
 * A later apply that lists a removed key restores the metric with its id
 * (src/registry/plan.ts says `restored`): the document gives its fields,
 * versions, approvals, relationships and inputs, as it does for every metric
 * it lists, and the snapshot gives back what no document carries: validation
 * evidence, challenges, threads and their messages, discussion summaries,
 * meter events and the last announced trust verdict, each row with its id.
 *
 * Every function here runs in the apply's transaction, under its lock.
 */
import type { Prisma } from '../generated/prisma/client.js';

type Tx = Prisma.TransactionClient;

/**
 * What a restore takes from the snapshot, in an order the foreign keys
 * accept (threads before their messages). Versions, approvals,
 * relationships and inputs come from the document instead: it is the truth
 * for what it lists, and a relationship's target or an input may be gone
 * since. The edges that named the removed metric as an input need no
 * restore either: a prune refuses a listed metric whose input it would
 * remove, so each of them was a removed metric's own, in its own snapshot.
 */
const RESTORED_TABLES = [
  'validation',
  'challenge',
  'thread',
  'message',
  'discussion_summary',
  'meter_event',
  'metric_trust_state',
] as const;

/** The tables of a metric's rows (all by `metric_id`), as the snapshot names them. */
const SNAPSHOT_TABLES = [
  'metric_version',
  'approval',
  'metric_relationship',
  'metric_input',
  ...RESTORED_TABLES,
] as const;

/** Tables whose only index on `metric_id` follows `org_id`: their rows are found by both. */
const BY_ORGANIZATION = new Set<string>(['discussion_summary', 'meter_event']);

const snapshotObject = `jsonb_build_object('metric', to_jsonb(m), ${SNAPSHOT_TABLES.map((table) => {
  const organization = BY_ORGANIZATION.has(table) ? ` AND c."org_id" = m."org_id"` : '';
  return `'${table}', (SELECT coalesce(jsonb_agg(to_jsonb(c)), '[]'::jsonb) FROM "${table}" c WHERE c."metric_id" = m."id"${organization})`;
}).join(', ')})`;

/**
 * Archives the metrics `ids` of the organization, before they are deleted. A
 * key archived before (removed, then made again outside an apply, removed
 * again) keeps its latest removal.
 */
export async function archiveMetrics(tx: Tx, orgId: string, ids: readonly string[], now: Date): Promise<void> {
  await tx.$executeRawUnsafe(
    `INSERT INTO "removed_metric" ("org_id", "key", "metric_id", "removed_at", "snapshot")
     SELECT m."org_id", m."key", m."id", $3::timestamptz, ${snapshotObject}
     FROM "metric" m WHERE m."org_id" = $1::uuid AND m."id" = ANY($2::uuid[])
     ON CONFLICT ("org_id", "key") DO UPDATE
       SET "metric_id" = EXCLUDED."metric_id", "removed_at" = EXCLUDED."removed_at", "snapshot" = EXCLUDED."snapshot"`,
    orgId,
    [...ids],
    now,
  );
}

/**
 * Puts back the history of the archived metrics of `keys`, whose metric rows
 * the apply has just inserted with their archived ids, and forgets them as
 * removed.
 */
export async function restoreHistory(tx: Tx, orgId: string, keys: readonly string[]): Promise<void> {
  for (const table of RESTORED_TABLES) {
    await tx.$executeRawUnsafe(
      `INSERT INTO "${table}"
       SELECT r.* FROM "removed_metric" a
       CROSS JOIN LATERAL jsonb_populate_recordset(NULL::"${table}", a."snapshot"->'${table}') r
       WHERE a."org_id" = $1::uuid AND a."key" = ANY($2::text[])`,
      orgId,
      [...keys],
    );
  }
  await tx.$executeRawUnsafe(
    `DELETE FROM "removed_metric" WHERE "org_id" = $1::uuid AND "key" = ANY($2::text[])`,
    orgId,
    [...keys],
  );
}
