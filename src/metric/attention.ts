/**
 * The metrics of an organization that need someone's attention, from the
 * verdicts as last announced (metric_trust_state: every write, and the trust
 * sweep for evidence that time made stale): failing or stale validation
 * evidence, open objections, a do_not_use verdict. One statement, at most
 * `limit` metrics of each kind (by name), each kind with its total (as the
 * writes keep it, in metric_count), kept by metrics_version (which every
 * announced verdict moves).
 */
import { sql } from 'kysely';
import { compile } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
import { type KeptReads, keptAggregate } from './read-cache.js';

export const ATTENTION_KINDS = ['validation', 'objections', 'do_not_use'] as const;
export type AttentionKind = (typeof ATTENTION_KINDS)[number];

export interface AttentionMetric {
  id: string;
  key: string;
  name: string;
  verdict: string;
  reasons: string[];
}

export type MetricsNeedingAttention = Record<AttentionKind, { total: number; metrics: AttentionMetric[] }>;

/** A metric of a kind, or (kind null) the organization's version alone when none needs attention. */
type AttentionRow = { version: string; total: number } & (({ kind: AttentionKind } & AttentionMetric) | { kind: null });

function kindQuery(kind: AttentionKind, orgId: string, limit: number) {
  const condition =
    kind === 'validation'
      ? sql`ts.reasons && ARRAY['failed_validation', 'stale_validation']::text[]`
      : kind === 'objections'
        ? sql`'open_objections' = ANY(ts.reasons)`
        : sql`ts.verdict = 'do_not_use'`;
  // The kind's total as the writes keep it (metric_count). Its first metrics: with both organization
  // conditions the planner either walks the names in order and stops at the limit (a common kind) or
  // reads the kind's partial index and sorts what it finds (a rare one).
  return sql`(SELECT ${sql.lit(kind)} AS kind, m.id::text AS id, m.key, m.name, ts.verdict, ts.reasons,
      (SELECT c.count::int FROM metric_count c
        WHERE c.org_id = ${orgId}::uuid AND c.facet = 'attention' AND c.value = ${sql.lit(kind)}) AS total
    FROM metric m JOIN metric_trust_state ts ON ts.metric_id = m.id
    WHERE m.org_id = ${orgId}::uuid AND ts.org_id = ${orgId}::uuid AND ${condition}
    ORDER BY m.name, m.id LIMIT ${sql.lit(limit)})`;
}

export function metricsNeedingAttention(
  reader: SqlReader,
  orgId: string,
  limit: number,
  kept: KeptReads,
): Promise<MetricsNeedingAttention> {
  return keptAggregate(kept, `attention:${orgId}:${limit}`, () => readAttention(reader, orgId, limit));
}

async function readAttention(reader: SqlReader, orgId: string, limit: number) {
  // The version row is always there (same snapshot as the metrics), so that "none" is kept too.
  const rows = await reader.query(
    compile(
      sql<AttentionRow>`SELECT o.metrics_version::text AS version, a.* FROM organization o
        LEFT JOIN LATERAL (${sql.join(
          ATTENTION_KINDS.map((kind) => kindQuery(kind, orgId, Math.trunc(limit))),
          sql` UNION ALL `,
        )}) a ON TRUE
        WHERE o.id = ${orgId}::uuid`,
    ),
  );
  const found = Object.fromEntries(
    ATTENTION_KINDS.map((kind) => [kind, { total: 0, metrics: [] as AttentionMetric[] }]),
  ) as MetricsNeedingAttention;
  for (const row of rows) {
    if (row.kind === null) continue;
    const { kind, total, version: _, ...metric } = row;
    found[kind].total = total;
    found[kind].metrics.push(metric);
  }
  return { value: found, version: rows[0]?.version ?? null };
}
