/**
 * How an organization's metrics divide by lifecycle status, scope, domain,
 * owner team and announced trust verdict: the catalog's facets and the
 * organization's home. Read from the counts the writes keep (table
 * metric_count, kept by triggers on metric and metric_trust_state: see
 * migration 20261209000000_metric_counts), never counted on a read: the
 * read is the organization's few count rows, whatever its number of metrics.
 */
import { sql } from 'kysely';
import { compile } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
import { type KeptReads, keptAggregate } from './read-cache.js';

export interface FacetValue {
  /** the value the filter takes (a domain's id for a domain); null: metrics without one (no domain, no verdict yet) */
  value: string | null;
  /** what a person reads: the domain's name, else the value */
  label: string | null;
  count: number;
}

export interface MetricFacets {
  lifecycle: FacetValue[];
  scope: FacetValue[];
  domain: FacetValue[];
  ownerTeam: FacetValue[];
  trust: FacetValue[];
  /** all metrics of the organization */
  total: number;
}

type FacetName = Exclude<keyof MetricFacets, 'total'>;

interface FacetRow {
  /** the organization's metrics_version the counts are of (same snapshot) */
  version: string;
  /** null on the one row of an organization without metrics */
  facet: FacetName | null;
  value: string | null;
  label: string | null;
  count: number;
}

/**
 * The facets of `orgId`'s metrics, most common value first (then by label),
 * in one statement, kept by metrics_version (which every change to the
 * metrics and every announced verdict moves): read once per version.
 */
export function metricFacets(reader: SqlReader, orgId: string, kept: KeptReads): Promise<MetricFacets> {
  return keptAggregate(kept, `facets:${orgId}`, () => readFacets(reader, orgId));
}

async function readFacets(reader: SqlReader, orgId: string) {
  // The counts as the writes keep them (metric_count): a value counted 0 is skipped, and the metrics
  // without an announced verdict are the total less those with one.
  const rows = await reader.query(
    compile(sql<FacetRow>`
      SELECT o.metrics_version::text AS version, f.facet, f.value,
        coalesce(d.name, f.value) AS label, f.count::int AS count
      FROM organization o
      LEFT JOIN LATERAL (
        WITH counted AS (
          SELECT c.facet, nullif(c.value, '') AS value, c.count FROM metric_count c
          WHERE c.org_id = o.id AND c.facet <> 'attention' AND c.count > 0)
        SELECT * FROM counted
        UNION ALL
        SELECT 'trust', NULL, t.count FROM (
          SELECT sum(count) FILTER (WHERE facet = 'lifecycle') - coalesce(sum(count) FILTER (WHERE facet = 'trust'), 0) AS count
          FROM counted) t
        WHERE t.count > 0) f ON TRUE
      LEFT JOIN domain d ON f.facet = 'domain' AND d.id = (CASE WHEN f.facet = 'domain' THEN f.value::uuid END)
      WHERE o.id = ${orgId}::uuid
      ORDER BY f.count DESC, label`),
  );
  const facets: MetricFacets = { lifecycle: [], scope: [], domain: [], ownerTeam: [], trust: [], total: 0 };
  for (const row of rows) {
    if (row.facet !== null) facets[row.facet].push({ value: row.value, label: row.label, count: row.count });
  }
  facets.total = facets.lifecycle.reduce((sum, value) => sum + value.count, 0);
  return { value: facets, version: rows[0]?.version ?? null };
}
