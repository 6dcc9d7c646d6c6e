/**
 * What a conditional GET of a metric's detail or contract compares: the
 * metric's version (`metric_etag`, bumped by triggers in the same transaction
 * as every change that alters either body; see
 * prisma/migrations/20261124000200_metric_etag_versions) and, for
 * `summary=true`, the state of its discussion summary. One statement, by
 * primary keys; never the metric's own read.
 */
import { sql } from 'kysely';
import { compile } from '../db/kysely.js';
import { POINT_READ, type SqlReader } from '../db/sql.js';
import type { Prisma } from '../generated/prisma/client.js';
import { discussionStateSql } from '../summaries/fingerprint.js';
import type { MetricPart } from './parts.js';
import { type TrustFacts, trustPart } from './trust.js';

export interface DiscussionSummaryState {
  fingerprint: string;
  /** non-deleted messages; 0: the summary is `no_discussion` */
  messageCount: number;
  /** a summary of this state is cached for the organization */
  cached: boolean;
}

export interface MetricState {
  version: string;
  /** only when asked for (`summary=true`) */
  discussion: DiscussionSummaryState | null;
  /**
   * only when asked for (the contract): the facts of its trust verdict, which
   * also depend on other metrics (the end of a supersession chain) and on the
   * time (a validation going stale), so no version of this metric covers them
   */
  trust: TrustFacts | null;
}

interface StateRow extends Record<string, unknown> {
  version: string;
  message_count?: number;
  fingerprint?: string;
  cached?: boolean;
}

/**
 * The state of a metric of the organization; null when there is none (the
 * route answers 404 as usual). With `summaryGenerator`, also the discussion's
 * fingerprint under that generator and whether its summary is cached.
 */
export async function readMetricState(
  reader: SqlReader,
  orgId: string,
  metricId: string,
  summaryGenerator: string | null,
  withTrust = false,
): Promise<MetricState | null> {
  const discussion =
    summaryGenerator === null ? sql`` : sql`, d.message_count, d.fingerprint, d.summary IS NOT NULL AS cached`;
  const join =
    summaryGenerator === null
      ? sql``
      : sql`CROSS JOIN LATERAL (${fromPrismaSql(discussionStateSql({ orgId, metricId, generatorName: summaryGenerator }))}) d`;
  const trustColumns = withTrust ? sql`, ${trustPart.columns}` : sql``;
  const trustJoins = withTrust ? trustPart.joins : sql``;
  const [row] = await reader.query(
    compile(sql<StateRow>`
    SELECT e.version::text AS version ${discussion} ${trustColumns}
    FROM metric m JOIN metric_etag e ON e.metric_id = m.id ${join} ${trustJoins}
    WHERE m.id = ${metricId}::uuid AND m.org_id = ${orgId}::uuid`),
    POINT_READ,
  );
  if (!row) return null;
  return {
    version: row.version,
    discussion:
      row.fingerprint === undefined
        ? null
        : { fingerprint: row.fingerprint, messageCount: row.message_count ?? 0, cached: row.cached === true },
    trust: withTrust ? trustPart.read(row) : null,
  };
}

/**
 * The metric's version as a part of its own read (`Metric.revision`): a 200
 * that was not asked a condition takes its tag from the version read in the
 * same statement as its body, so it needs no statement of its own.
 */
export const revisionPart: MetricPart<string | null> = {
  name: 'revision',
  // A scalar subquery, not a join: one more join in the contract's statement changed its plan (contract
  // fell from 319 to 134 rps in the bench).
  columns: sql`(SELECT version::text FROM metric_etag WHERE metric_id = m.id) AS revision`,
  joins: sql``,
  read: (row) => (row.revision as string | null) ?? null,
};

/**
 * The discussion's state as the summary service reads it (src/summaries/fingerprint.ts), where it
 * runs through Prisma's `$queryRaw` in the service's own transactions too: one text for both, so
 * the fingerprint a 304 compares is the one the summary was cached under. Kysely's `sql` takes its
 * pieces and values as they are.
 */
function fromPrismaSql(statement: Prisma.Sql) {
  return sql(Object.assign([...statement.strings], { raw: [...statement.strings] }), ...statement.values);
}
