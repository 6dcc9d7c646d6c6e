/**
 * Keyset pages of an organization's metrics in list order (name, then id),
 * for the Relay connection `metricsConnection`: the page after (or before) a
 * metric, whose place in the order is read in the same statement. The
 * filter is the list's own (src/metric/list.ts).
 */
import { sql } from 'kysely';
import { db, ShapeCache } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
import { fieldRefs, fieldsKey, type MetricFields, type SelectedMetric, selectedFields } from './columns.js';
import { type EffectiveFilter, filterKey, orgFilter } from './list.js';

export interface KeysetPage {
  /** the id of the metric the page comes after, in list order */
  after?: string;
  /** the id of the metric the page comes before */
  before?: string;
  /** rows to read (a connection reads one more than it shows, to know whether there are more) */
  limit: number;
  /** read from the end: the metrics closest to `before` (or the last ones), in reverse order */
  inverted: boolean;
}

type KeysetArgs = EffectiveFilter & { orgId: string; after: string | null; before: string | null };

const shapes = new ShapeCache<KeysetArgs>();

/**
 * The position of metric `id` of the organization, as a row to compare `(m.org_id, m.name, m.id)`
 * with: the comparison then starts a range of the (org_id, name, id) index. A metric that is not
 * there (deleted, or another organization's) is no row: nothing comes after or before it.
 */
const positionOf = (orgId: unknown, id: unknown) =>
  sql`(SELECT c.org_id, c.name, c.id FROM metric c WHERE c.id = ${id}::uuid AND c.org_id = ${orgId}::uuid)`;

/** Metrics of the organization in list order (reversed when `inverted`), after and before the given ones. */
export async function keysetMetricPage(
  reader: SqlReader,
  orgId: string,
  filter: EffectiveFilter,
  page: KeysetPage,
  fields: MetricFields = null,
): Promise<SelectedMetric[]> {
  const selected = selectedFields(fields);
  const limit = Math.trunc(page.limit);
  const direction = page.inverted ? 'desc' : 'asc';
  const args: KeysetArgs = { ...filter, orgId, after: page.after ?? null, before: page.before ?? null };
  const shape = `${fieldsKey(selected)}|${filterKey(filter)}|${limit}|${direction}|${page.after === undefined ? '' : 'a'}${page.before === undefined ? '' : 'b'}`;
  return reader.query(
    shapes.statement(shape, args, (p) =>
      db
        .selectFrom('metric as m')
        .select(fieldRefs(selected))
        .where(orgFilter(p.orgId, filter, p))
        .$if(page.after !== undefined, (query) =>
          query.where(sql<boolean>`(m.org_id, m.name, m.id) > ${positionOf(p.orgId, p.after)}`),
        )
        .$if(page.before !== undefined, (query) =>
          query.where(sql<boolean>`(m.org_id, m.name, m.id) < ${positionOf(p.orgId, p.before)}`),
        )
        .orderBy('m.name', direction)
        .orderBy('m.id', direction)
        .limit(sql.lit(limit)),
    ),
  );
}
