/**
 * How an organization's metrics divide by lifecycle status, scope, domain,
 * owner team and announced trust verdict: the catalog's facets and the
 * organization's home. One aggregate statement (grouping sets over the
 * organization's metrics, the verdict as announced in metric_trust_state),
 * never a verdict computed per metric: at 10,000 metrics it reads each row
 * once, whatever the number of values.
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
  facet: FacetName;
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
  const rows = await reader.query(
    compile(sql<FacetRow>`
      SELECT (SELECT o.metrics_version::text FROM organization o WHERE o.id = ${orgId}::uuid) AS version,
        CASE
          WHEN GROUPING(m.lifecycle_status) = 0 THEN 'lifecycle'
          WHEN GROUPING(m.scope) = 0 THEN 'scope'
          WHEN GROUPING(m.domain_id) = 0 THEN 'domain'
          WHEN GROUPING(m.owner_team) = 0 THEN 'ownerTeam'
          ELSE 'trust' END AS facet,
        coalesce(m.lifecycle_status::text, m.scope::text, m.domain_id::text, m.owner_team, ts.verdict) AS value,
        coalesce(d.name, m.lifecycle_status::text, m.scope::text, m.owner_team, ts.verdict) AS label,
        count(*)::int AS count
      FROM metric m
      LEFT JOIN domain d ON d.id = m.domain_id
      LEFT JOIN metric_trust_state ts ON ts.metric_id = m.id
      WHERE m.org_id = ${orgId}::uuid
      GROUP BY GROUPING SETS ((m.lifecycle_status), (m.scope), (m.domain_id, d.name), (m.owner_team), (ts.verdict))
      ORDER BY count DESC, label`),
  );
  const facets: MetricFacets = { lifecycle: [], scope: [], domain: [], ownerTeam: [], trust: [], total: 0 };
  for (const row of rows) facets[row.facet].push({ value: row.value, label: row.label, count: row.count });
  facets.total = facets.lifecycle.reduce((sum, value) => sum + value.count, 0);
  return { value: facets, version: rows[0]?.version ?? null };
}
