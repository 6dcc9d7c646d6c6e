/**
 * A list page of an organization's metrics: by name (code-point order), then
 * id, with the total the filter matches.
 */
import { sql } from 'kysely';
import { db, ShapeCache } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
import { metricOf, partsKey, partsSql } from './by-id.js';
import { fieldRefs, fieldsKey, type MetricFields, type SelectedMetric, selectedFields } from './columns.js';
import { type EffectiveFilter, filterKey, orgFilter } from './list.js';
import type { MetricPart } from './parts.js';
import type { KeptReads } from './read-cache.js';

export interface MetricPage {
  rows: SelectedMetric[];
  /** all metrics the filter matches */
  total: number;
  /** a search's account of itself (src/metric/search-page.ts); absent on plain listing */
  hints?: SearchHints;
}

/** What a search says it did: the words it corrected, and what it suggests when it found nothing. */
export interface SearchHints {
  /** the query's words read as other words, when some match came through them; else empty */
  corrected: { from: string; to: string }[];
  /** when the search found nothing: the closest names or keys of the organization's metrics (at most 5); else empty */
  didYouMean: string[];
}

/** The key of a kept read: valid for this organization's metrics as of `kept.version` only. */
export const keptKey = (orgId: string, kept: KeptReads, read: unknown) =>
  `${orgId}:${kept.version}:${JSON.stringify(read)}`;

/** The values of a list statement; its shape is the rest (see {@link ShapeCache}). */
type ListArgs = EffectiveFilter & { orgId: string; skip: number };

const shapes = new ShapeCache<ListArgs>();

const countQuery = (filter: EffectiveFilter, p: ListArgs) =>
  db
    .selectFrom('metric as m')
    .select(sql<number>`count(*)::int`.as('total'))
    .where(orgFilter(p.orgId, filter, p));

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
  reader: SqlReader,
  orgId: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  fields: MetricFields = null,
  kept?: KeptReads,
): Promise<MetricPage> {
  const { rows, total } = await listMetricPageWithParts(reader, orgId, filter, page, fields, kept, []);
  return { rows, total };
}

/** {@link listMetricPage} with `parts` in the same statement: `partRows[i]` holds the parts of `rows[i]`. */
export async function listMetricPageWithParts(
  reader: SqlReader,
  orgId: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  fields: MetricFields,
  kept: KeptReads | undefined,
  parts: readonly MetricPart<unknown>[],
): Promise<MetricPage & { partRows: Record<string, unknown>[] }> {
  const key = kept && keptKey(orgId, kept, filter);
  const known = key === undefined ? undefined : kept?.cache.totals.get(key);
  if (known !== undefined && page.skip >= known) return { rows: [], total: known, partRows: [] };
  const selected = selectedFields(fields);
  const take = Math.trunc(page.take);
  const counted = known === undefined;
  const args: ListArgs = { ...filter, orgId, skip: page.skip };
  const versioned = kept !== undefined;
  const shape = `${fieldsKey(selected)}|${partsKey(parts)}|${filterKey(filter)}|${take}|${counted ? 'count' : ''}|${versioned ? 'v' : ''}`;
  // The page is cut from ids in name order first (the (org_id, name, id) index, read in order),
  // then its rows are read by id, with the page size written into the statement (an integer of
  // 1 to 100, one prepared statement per size in use). Planned once for any LIMIT (a generic
  // plan), the statement sorted every metric of the organization, or joined a page it took for
  // thousands of rows by hashing them all: 0.4 to 0.5 s a page at 100,000 metrics.
  const pageQuery = (p: ListArgs) =>
    db
      .selectFrom(
        db
          .selectFrom('metric as m')
          .select('m.id')
          .where(orgFilter(p.orgId, filter, p))
          .orderBy('m.name')
          .orderBy('m.id')
          .offset(p.skip)
          .limit(sql.lit(take))
          .as('page'),
      )
      .innerJoin('metric as m', 'm.id', 'page.id')
      .select(fieldRefs(selected))
      .$if(counted, (query) => query.select(countQuery(filter, p).as('total')))
      // The version these rows are of (same snapshot): a kept total is used with rows of its own version only.
      .$if(versioned, (query) =>
        query.select(
          sql<string>`(SELECT o.metrics_version::text FROM organization o WHERE o.id = ${p.orgId}::uuid)`.as(
            'rowsVersion',
          ),
        ),
      )
      .orderBy('m.name')
      .orderBy('m.id');
  let rows: (SelectedMetric & { total?: number | null; rowsVersion?: string })[];
  let partRows: Record<string, unknown>[];
  if (parts.length) {
    // Parts are joined to the page once it is cut (OFFSET/LIMIT), so they are read for its rows only.
    const withParts = await reader.query(
      shapes.statement(shape, args, (p) => {
        const extra = partsSql(parts);
        return sql<SelectedMetric & { total?: number | null; rowsVersion?: string } & Record<string, unknown>>`
            SELECT m.* ${extra.columns}
            FROM (${pageQuery(p).select('m.name as pageName')}) m ${extra.joins}
            ORDER BY m."pageName", m.id`;
      }),
    );
    rows = withParts;
    partRows = withParts;
  } else {
    rows = await reader.query(shapes.statement(shape, args, pageQuery));
    partRows = [];
  }
  const rowsVersion = rows[0]?.rowsVersion;
  if (versioned && rowsVersion !== undefined && rowsVersion !== kept?.version) {
    // A write committed between the key lookup (which read the version) and this statement: the rows
    // are newer than the kept total. Read the page with its own count, in one statement, keeping nothing.
    if (!counted) return listMetricPageWithParts(reader, orgId, filter, page, fields, undefined, parts);
    return {
      rows: rows.map((row) => metricOf(row, selected)),
      total: rows[0]?.total ?? 0,
      partRows,
    };
  }
  let total = known ?? rows[0]?.total ?? undefined;
  if (total === undefined || total === null) {
    total =
      page.skip === 0
        ? 0
        : ((await reader.query(shapes.statement(`count|${filterKey(filter)}`, args, (p) => countQuery(filter, p))))[0]
            ?.total ?? 0);
  }
  if (key !== undefined && counted) kept?.cache.totals.set(key, total);
  return { rows: rows.map((row) => metricOf(row, selected)), total, partRows };
}
