/** A search page of an organization's metrics: ranked (src/metric/search-rank.ts), then read with the fields asked. */
import { sql } from 'kysely';
import { db, ShapeCache } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
import { findMetricRows, findMetrics, metricOf, partsKey, partsSql } from './by-id.js';
import { fieldRefs, fieldsKey, type MetricFields, type SelectedMetric, selectedFields } from './columns.js';
import type { EffectiveFilter } from './list.js';
import { keptKey, type MetricPage, type SearchHints } from './list-page.js';
import type { MetricPart } from './parts.js';
import type { KeptReads } from './read-cache.js';
import { type RankedRow, rankedSearch, type SearchArgs } from './search-rank.js';

const shapes = new ShapeCache<SearchArgs>();

/** A search page; with parts, `partRows[i]` holds the parts of `rows[i]` (empty without). */
export type SearchPage = MetricPage & { partRows: Record<string, unknown>[] };

/**
 * Search: the ranking of src/metric/search-rank.ts (tiers, canonical first),
 * then name and id; the total of all matches is a window count. Ranked on
 * narrow rows (id and sort keys), then the page's rows are read. Compiled
 * once per shape (the query's form, the filters present, the fields read):
 * building and compiling the ranking with Kysely cost 50 to 100 µs of CPU a
 * search (its plugins walk the whole statement).
 */
async function rankSearchPage(
  reader: SqlReader,
  orgId: string,
  text: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  fields: MetricFields,
  parts: readonly MetricPart<unknown>[],
): Promise<SearchPage & { hints: SearchHints }> {
  const search = rankedSearch(orgId, text, filter, page);
  const selected = selectedFields(fields);
  type Row = SelectedMetric & { total: number; corrected: string[] | null } & Record<string, unknown>;
  const rows: Row[] = await reader.query(
    shapes.statement(`page|${search.shape}|${fieldsKey(selected)}|${partsKey(parts)}`, search.args, (p) => {
      const hits = db
        .selectFrom(sql<RankedRow>`(${search.build(p).page})`.as('hit'))
        .innerJoin('metric as m', 'm.id', 'hit.id')
        .select(fieldRefs(selected))
        .select(['hit.total', 'hit.corrected']);
      if (!parts.length) return hits.orderBy('hit.rank');
      // Parts are joined to the page's rows once it is ranked and cut, as on a list page.
      const extra = partsSql(parts);
      return sql<Row>`
        SELECT m.* ${extra.columns} FROM (${hits.select('hit.rank as hitRank')}) m ${extra.joins}
        ORDER BY m."hitRank"`;
    }),
  );
  // A page past the end counts the matches (and reads what they were corrected by) on its own.
  const tally =
    rows[0] ??
    (page.skip === 0
      ? { total: 0, corrected: null }
      : ((
          await reader.query(shapes.statement(`count|${search.shape}`, search.args, (p) => search.build(p).count))
        )[0] ?? {
          total: 0,
          corrected: null,
        }));
  const hints: SearchHints = {
    corrected: correctionsOf(tally.corrected),
    didYouMean: tally.total === 0 ? await suggestionsFor(reader, orgId, text) : [],
  };
  return {
    rows: rows.map((row) => metricOf(row, selected)),
    total: tally.total,
    hints,
    partRows: parts.length ? rows : [],
  };
}

/** `[from, to, from, to, ...]` as pairs. */
function correctionsOf(flat: string[] | null): SearchHints['corrected'] {
  const pairs: SearchHints['corrected'] = [];
  for (let i = 0; flat && i + 1 < flat.length; i += 2)
    pairs.push({ from: flat[i] as string, to: flat[i + 1] as string });
  return pairs;
}

const suggestionShapes = new ShapeCache<{ orgId: string; name: string; key: string }>();

/** Least trigram similarity of a suggestion to the query: "chrn rte" is 0.33 to "churn rate". */
const SUGGESTION_SIMILARITY = 0.3;
const MAX_SUGGESTIONS = 5;

/**
 * What a search that found nothing suggests: the organization's metric names or keys most similar
 * to the query (trigram similarity of the whole name, its words as the search reads them, or of the
 * whole key), each metric by the closer of the two, at most {@link MAX_SUGGESTIONS}. Every metric of
 * the organization is compared, whatever the filters: one statement, only when a search finds
 * nothing (and the answer is kept with the page).
 */
async function suggestionsFor(reader: SqlReader, orgId: string, text: string): Promise<string[]> {
  const words = text.match(/[\p{L}\p{N}]+/gu) ?? [];
  if (!words.length) return [];
  const rows: { suggestion: string }[] = await reader.query(
    suggestionShapes.statement(
      'suggestions',
      { orgId, name: words.join(' '), key: words.join('_') },
      (p) => sql`
      SELECT s.suggestion FROM (
        SELECT CASE WHEN k.key_score > k.name_score THEN m.key ELSE m.name END AS suggestion,
          greatest(k.name_score, k.key_score) AS score, m.name, m.id
        FROM metric m CROSS JOIN LATERAL (
          SELECT similarity(search_split(m.name), ${p.name}) AS name_score, similarity(m.key, ${p.key}) AS key_score) k
        WHERE m.org_id = ${p.orgId}::uuid) s
      WHERE s.score >= ${sql.lit(SUGGESTION_SIMILARITY)}
      ORDER BY s.score DESC, s.name, s.id
      LIMIT ${sql.lit(MAX_SUGGESTIONS)}`,
    ),
  );
  return rows.map((row) => row.suggestion);
}

/**
 * A search page, kept by `metrics_version` as list totals are (src/metric/list-page.ts).
 *
 * Counting and ranking every match is work that grows with the matches: at
 * 100,000 metrics "revenue" matches 37,000 of them, and the exact total alone
 * visits every one. What a query matches depends only on the organization's
 * metrics (the search documents and words are written with them, so every
 * change bumps the version), so a page is ranked once per version and read
 * again by the ids of its metrics. The query is kept as searched (normalized:
 * {@link normalizedSearch}); the page's metrics are read fresh, with the fields asked
 * and the columns of `parts` in the same statement (`partRows`, for their loaders).
 */
export async function searchMetricPage(
  reader: SqlReader,
  orgId: string,
  query: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  fields: MetricFields = null,
  kept?: KeptReads,
  parts: readonly MetricPart<unknown>[] = [],
): Promise<SearchPage> {
  const text = normalizedSearch(query);
  if (!kept) return rankSearchPage(reader, orgId, text, filter, page, fields, parts);
  const key = keptKey(orgId, kept, [text, filter, page.skip, page.take]);
  const hits = kept.cache.searches.get(key);
  if (hits) {
    // A metric deleted since the version was read is gone from the page; the next request ranks again.
    if (!hits.ids.length) return { rows: [], total: hits.total, hints: hits.hints, partRows: [] };
    if (!parts.length) {
      const rows = (await findMetrics(reader, orgId, hits.ids, fields)).filter((row) => row !== null);
      return { rows, total: hits.total, hints: hits.hints, partRows: [] };
    }
    const found = (await findMetricRows(reader, orgId, hits.ids, parts, fields)).filter((row) => row !== null);
    return {
      rows: found.map((row) => row.metric),
      total: hits.total,
      hints: hits.hints,
      partRows: found.map((row) => row.row),
    };
  }
  const result = await rankSearchPage(reader, orgId, text, filter, page, fields, parts);
  kept.cache.searches.set(key, { ids: result.rows.map((row) => row.id), total: result.total, hints: result.hints });
  return result;
}

/**
 * The query as searched and kept: trimmed, lowercased, runs of whitespace as one space (the
 * full-text parser reads them alike), so that spellings differing only in these share a page.
 */
export const normalizedSearch = (query: string) => query.trim().toLowerCase().replace(/\s+/gu, ' ');
