/**
 * Keyset pages of a metric's direct dependents (the metrics that have it as
 * an input), in id order, over the index (input_metric_id, metric_id): the
 * pages of every metric a DataLoader collected in one statement, one
 * `LIMIT` per metric, for the Relay connection `Metric.dependents`.
 */
import DataLoader from 'dataloader';
import { sql } from 'kysely';
import { ShapeCache } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';

export interface DependentsPage {
  /** the id the page comes after (in id order) */
  after?: string;
  /** the id the page comes before */
  before?: string;
  /** ids to read per metric (a connection reads one more than it shows) */
  limit: number;
  /** read from the end: the ids closest to `before` (or the last ones), in reverse order */
  inverted: boolean;
}

type PageArgs = { ids: readonly string[]; after: string | null; before: string | null; limit: number };

const shapes = new ShapeCache<PageArgs>();

/** The shape of a page's statement: everything its text depends on (the limit is a parameter: 8 shapes in all). */
const shapeOf = (page: DependentsPage) =>
  `${page.inverted ? 'desc' : 'asc'}|${page.after === undefined ? '' : 'a'}${page.before === undefined ? '' : 'b'}`;

/** A loader of one page's arguments: a metric's id to the ids of its dependents on that page. */
export function dependentsLoader(reader: SqlReader, page: DependentsPage): DataLoader<string, string[]> {
  const limit = Math.trunc(page.limit);
  const direction = page.inverted ? sql`DESC` : sql`ASC`;
  return new DataLoader<string, string[]>(async (ids) => {
    const args: PageArgs = { ids, after: page.after ?? null, before: page.before ?? null, limit };
    const rows = await reader.query(
      shapes.statement(
        shapeOf(page),
        args,
        (p) => sql<{ input_id: string; ids: string[] }>`
          SELECT p.id::text AS input_id, d.ids
          FROM unnest(${p.ids}::uuid[]) AS p(id)
          CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(x.metric_id::text ORDER BY x.metric_id ${direction}), '{}') AS ids
            FROM (
              SELECT i.metric_id FROM metric_input i
              WHERE i.input_metric_id = p.id
                ${page.after === undefined ? sql`` : sql`AND i.metric_id > ${p.after}::uuid`}
                ${page.before === undefined ? sql`` : sql`AND i.metric_id < ${p.before}::uuid`}
              ORDER BY i.metric_id ${direction}
              LIMIT ${p.limit}::int) x) d`,
      ),
    );
    const byId = new Map(rows.map((row) => [row.input_id, row.ids]));
    return ids.map((id) => byId.get(id) ?? []);
  });
}

/** The key of a page's loader among a request's loaders. */
export const dependentsPageKey = (page: DependentsPage) =>
  `${Math.trunc(page.limit)}|${page.inverted}|${page.after ?? ''}|${page.before ?? ''}`;
