/**
 * Metric rows read with SQL (src/db/sql.ts), in the shape of Prisma's
 * `Metric` model, so that the Pothos types take them as they would take rows
 * of `prisma.metric.findMany`; reads given a set of fields return only those
 * (src/schema/metric-selection.ts picks them from the GraphQL selection).
 *
 * Why not the model API: with the client engine of Prisma 6.19, every model
 * query is compiled to SQL by a WebAssembly query compiler on every call (no
 * plan cache); measured on this project, a `findFirst` of one metric costs
 * about 2.4 ms of CPU and a page of 20 about 3 ms, against 0.35 ms for a raw
 * query returning the same row. The read routes run one or two of these per
 * request, so they read here; writes and administration stay on the model API.
 */
import type { SqlReader } from '../db/sql.js';
import { type Metric, Prisma } from '../generated/prisma/client.js';
import { type EffectiveFilter, filterSql } from './list.js';
import type { MetricPart } from './parts.js';
import type { KeptReads } from './read-cache.js';
import { rankedSearch } from './search-rank.js';

/** Every field of the model and its column: the type makes a missing or unknown field a compile error. */
const METRIC_FIELDS: Record<keyof Metric, string> = {
  id: 'id',
  orgId: 'org_id',
  projectId: 'project_id',
  domainId: 'domain_id',
  key: 'key',
  name: 'name',
  description: 'description',
  metricType: 'metric_type',
  lifecycleStatus: 'lifecycle_status',
  definitionVersion: 'definition_version',
  policyTier: 'policy_tier',
  ownerTeam: 'owner_team',
  ownerDisplayName: 'owner_display_name',
  scope: 'scope',
  tags: 'tags',
  aliases: 'aliases',
  conceptName: 'concept_name',
  templateName: 'template_name',
  sqlExpression: 'sql_expression',
  grains: 'grains',
  defaultGrain: 'default_grain',
  dimensions: 'dimensions',
  filters: 'filters',
  sourceRefs: 'source_refs',
  expression: 'expression',
  dependencies: 'dependencies',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  bdIncluded: 'bd_included',
  bdExcluded: 'bd_excluded',
  bdTimeWindow: 'bd_time_window',
  bdCaveats: 'bd_caveats',
  bdLegacyDescription: 'bd_legacy_description',
  timeSemantics: 'time_semantics',
  deprecatedFramingRules: 'deprecated_framing_rules',
  dimensionMap: 'dimension_map',
  columnAliases: 'column_aliases',
  consumerContexts: 'consumer_contexts',
  policyExamples: 'policy_examples',
  resolvedParameters: 'resolved_parameters',
  renderedSqlExamples: 'rendered_sql_examples',
  latestClosedPeriod: 'latest_closed_period',
  approvalState: 'approval_state',
  approverRole: 'approver_role',
  approverUser: 'approver_user',
  approvedAt: 'approved_at',
  effectiveFrom: 'effective_from',
  effectiveTo: 'effective_to',
  nextReviewDate: 'next_review_date',
};

export function isMetricField(name: string): name is keyof Metric {
  return Object.hasOwn(METRIC_FIELDS, name);
}

/** Model fields to read; null: all of them. A row read with a subset has only those fields. */
export type MetricFields = ReadonlySet<keyof Metric> | null;

const selectItem = ([field, column]: [string, string]) =>
  field === column ? `m.${column}` : `m.${column} AS "${field}"`;

/** `m.org_id AS "orgId", ...`: the select list of a `metric m` row as a `Metric`. */
const METRIC_COLUMNS = Prisma.raw(Object.entries(METRIC_FIELDS).map(selectItem).join(', '));

function metricColumns(fields: MetricFields): Prisma.Sql {
  if (!fields) return METRIC_COLUMNS;
  return Prisma.raw([...fields].map((field) => selectItem([field, METRIC_FIELDS[field]])).join(', '));
}

/** Metrics of the organization by id (their `fields`), in the order of `ids`; null where there is none. */
export async function findMetrics(sql: SqlReader, orgId: string, ids: readonly string[], fields: MetricFields = null) {
  const rows = await sql.query<Metric>(Prisma.sql`
    SELECT ${metricColumns(fields)} FROM metric m WHERE m.id = ANY(${ids}::uuid[]) AND m.org_id = ${orgId}::uuid`);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id) ?? null);
}

/**
 * A metric of the organization with the columns of `parts`, in one
 * statement: the metric and the whole row (for the parts to read); null when
 * there is none.
 */
export async function findMetricRow(
  sql: SqlReader,
  orgId: string,
  id: string,
  parts: MetricPart<unknown>[],
  fields: MetricFields = null,
): Promise<{ metric: Metric; row: Record<string, unknown> } | null> {
  const columns = parts.map((part) => Prisma.sql`, ${part.columns}`);
  const joins = parts.map((part) => part.joins);
  const [row] = await sql.query<Record<string, unknown>>(Prisma.sql`
    SELECT ${metricColumns(fields)} ${concat(columns)}
    FROM metric m ${concat(joins)}
    WHERE m.id = ${id}::uuid AND m.org_id = ${orgId}::uuid`);
  if (!row) return null;
  const names = fields ? [...fields] : Object.keys(METRIC_FIELDS);
  const metric = Object.fromEntries(names.map((field) => [field, row[field]])) as Metric;
  return { metric, row };
}

export interface MetricPage {
  rows: Metric[];
  /** all metrics the filter matches */
  total: number;
}

/** The key of a kept read: valid for this organization's metrics as of `kept.version` only. */
const keptKey = (orgId: string, kept: KeptReads, read: unknown) => `${orgId}:${kept.version}:${JSON.stringify(read)}`;

/**
 * One page by name (code-point order, then id) with the total.
 *
 * The total is an exact count of the organization's metrics (those the
 * filter matches), which grows with the registry: 10 times the metrics, 10
 * times the work on every page. So it is kept by `metrics_version`, which
 * triggers bump in the same transaction as any change to the organization's
 * metrics: a kept total is exact for as long as it is used, on every instance
 * (each reads the version with the key). Counted, it comes with the page in
 * one statement; only a page past the end of an uncounted list needs a
 * second, counting statement.
 */
export async function listMetricPage(
  sql: SqlReader,
  orgId: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  fields: MetricFields = null,
  kept?: KeptReads,
): Promise<MetricPage> {
  const { rows, total } = await listMetricPageWithParts(sql, orgId, filter, page, fields, kept, []);
  return { rows, total };
}

/** {@link listMetricPage} with `parts` in the same statement: `partRows[i]` holds the parts of `rows[i]`. */
export async function listMetricPageWithParts(
  sql: SqlReader,
  orgId: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  fields: MetricFields,
  kept: KeptReads | undefined,
  parts: MetricPart<unknown>[],
): Promise<MetricPage & { partRows: Record<string, unknown>[] }> {
  const where = Prisma.sql`WHERE m.org_id = ${orgId}::uuid ${filterSql(filter)}`;
  const key = kept && keptKey(orgId, kept, filter);
  const known = key === undefined ? undefined : kept?.cache.totals.get(key);
  // Parts are joined to the page once it is cut (OFFSET/LIMIT), so they are read for its rows only.
  const sortKey = parts.length ? Prisma.sql`, m.name AS page_name` : Prisma.empty;
  const withParts = (pageSql: Prisma.Sql) =>
    parts.length
      ? Prisma.sql`
        SELECT m.* ${concat(parts.map((part) => Prisma.sql`, ${part.columns}`))}
        FROM (${pageSql}) m ${concat(parts.map((part) => part.joins))}
        ORDER BY m.page_name, m.id`
      : pageSql;
  const names = fields ? [...fields] : (Object.keys(METRIC_FIELDS) as (keyof Metric)[]);
  const pageOf = (rows: Record<string, unknown>[], total: number) => ({
    rows: rows.map((row) => Object.fromEntries(names.map((field) => [field, row[field]])) as Metric),
    total,
    partRows: rows,
  });
  // The page is cut from ids in name order first (the (org_id, name, id) index, read in order),
  // then its rows are read by id, with the page size written into the statement (an integer of
  // 1 to 100, one prepared statement per size in use). Planned once for any LIMIT (a generic
  // plan), the statement sorted every metric of the organization, or joined a page it took for
  // thousands of rows by hashing them all: 0.4 to 0.5 s a page at 100,000 metrics.
  const limit = Prisma.raw(String(Math.trunc(page.take)));
  const pageRows = (total: Prisma.Sql) => Prisma.sql`
    SELECT ${metricColumns(fields)} ${sortKey} ${total}
    FROM (SELECT m.id FROM metric m ${where} ORDER BY m.name, m.id OFFSET ${page.skip} LIMIT ${limit}) page
    JOIN metric m ON m.id = page.id
    ORDER BY m.name, m.id`;
  if (known !== undefined) {
    if (page.skip >= known) return { rows: [], total: known, partRows: [] };
    const rows = await sql.query<Record<string, unknown>>(withParts(pageRows(Prisma.empty)));
    return pageOf(rows, known);
  }
  const count = Prisma.sql`SELECT count(*)::int AS total FROM metric m ${where}`;
  const rows = await sql.query<Record<string, unknown>>(withParts(pageRows(Prisma.sql`, (${count}) AS total`)));
  const total =
    (rows[0]?.total as number | undefined) ??
    (page.skip === 0 ? 0 : ((await sql.query<{ total: number }>(count))[0]?.total ?? 0));
  if (key !== undefined) kept?.cache.totals.set(key, total);
  return pageOf(rows, total);
}

/**
 * Search: the ranking of src/metric/search-rank.ts (tiers, canonical first),
 * then name and id; the total of all matches is a window count. Ranked on
 * narrow rows (id and sort keys), then the page's rows are read.
 */
async function rankSearchPage(
  sql: SqlReader,
  orgId: string,
  text: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  fields: MetricFields,
): Promise<MetricPage> {
  const search = rankedSearch(orgId, text, filter, page);
  const rows = await sql.query<Metric & { total: number }>(Prisma.sql`
    SELECT ${metricColumns(fields)}, hit.total
    FROM (${search.page}) hit JOIN metric m ON m.id = hit.id
    ORDER BY hit.rank`);
  return withTotal(rows, page.skip, async () => (await sql.query<{ total: number }>(search.count))[0]?.total ?? 0);
}

/**
 * A search page, kept by `metrics_version` as list totals are (listMetricPage).
 *
 * Counting and ranking every match is work that grows with the matches: at
 * 100,000 metrics "revenue" matches 37,000 of them, and the exact total alone
 * visits every one. What a query matches depends only on the organization's
 * metrics (the search documents and words are written with them, so every
 * change bumps the version), so a page is ranked once per version and read
 * again by the ids of its metrics. The query is kept as searched (normalized:
 * {@link normalizedSearch}); the page's metrics are read fresh, with the fields asked.
 */
export async function searchMetricPage(
  sql: SqlReader,
  orgId: string,
  query: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  fields: MetricFields = null,
  kept?: KeptReads,
): Promise<MetricPage> {
  const text = normalizedSearch(query);
  if (!kept) return rankSearchPage(sql, orgId, text, filter, page, fields);
  const key = keptKey(orgId, kept, [text, filter, page.skip, page.take]);
  const hits = kept.cache.searches.get(key);
  if (hits) {
    const rows = hits.ids.length ? await findMetrics(sql, orgId, hits.ids, fields) : [];
    // A metric deleted since the version was read is gone from the page; the next request ranks again.
    return { rows: rows.filter((row) => row !== null), total: hits.total };
  }
  const result = await rankSearchPage(sql, orgId, text, filter, page, fields);
  kept.cache.searches.set(key, { ids: result.rows.map((row) => row.id), total: result.total });
  return result;
}

/**
 * The query as searched and kept: trimmed, lowercased, runs of whitespace as one space (the
 * full-text parser reads them alike), so that spellings differing only in these share a page.
 */
export const normalizedSearch = (query: string) => query.trim().toLowerCase().replace(/\s+/gu, ' ');

/** The total is on every row; an empty page past the end counts separately. */
async function withTotal(
  rows: (Metric & { total: number })[],
  skip: number,
  count: () => Promise<number>,
): Promise<MetricPage> {
  const total = rows[0]?.total ?? (skip === 0 ? 0 : await count());
  return { rows: rows.map(({ total: _total, ...metric }) => metric), total };
}

function concat(fragments: Prisma.Sql[]): Prisma.Sql {
  return fragments.length ? Prisma.join(fragments, ' ') : Prisma.empty;
}
