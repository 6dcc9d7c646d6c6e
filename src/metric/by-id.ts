/**
 * Metrics of an organization read by id: several (a DataLoader's batch) or
 * one with the parts its selection asks for (src/metric/loaders.ts), with
 * the fields asked for.
 */
import { type Expression, sql } from 'kysely';
import { db, type Query, ShapeCache } from '../db/kysely.js';
import { POINT_READ, type SqlReader } from '../db/sql.js';
import {
  fieldRefs,
  fieldsKey,
  type MetricField,
  type MetricFields,
  type SelectedMetric,
  selectedFields,
} from './columns.js';
import type { MetricPart } from './parts.js';

/** The metric of a row that also holds other columns (its parts): only its `fields`. */
export function metricOf(row: SelectedMetric, fields: readonly MetricField[]): SelectedMetric {
  const metric: SelectedMetric = { id: row.id, orgId: row.orgId };
  for (const field of fields) copyField(metric, row, field);
  return metric;
}

function copyField<K extends MetricField>(to: SelectedMetric, from: SelectedMetric, field: K): void {
  to[field] = from[field];
}

/** The share of `parts` in a statement's shape key. */
export const partsKey = (parts: readonly MetricPart<unknown>[]) => parts.map((part) => part.name).join();

/** The part columns and joins of `parts` over the metric `m` of a statement (built with the shape, once). */
export function partsSql(parts: readonly MetricPart<unknown>[]) {
  return {
    columns: sql.join(
      parts.map((part) => sql`, ${part.columns}`),
      sql` `,
    ),
    joins: sql.join(
      parts.map((part) => part.joins),
      sql` `,
    ),
  };
}

const byIds = new ShapeCache<{ orgId: string; ids: readonly string[] }>();

/** Metrics of the organization by id (their `fields`), in the order of `ids`; null where there is none. */
export async function findMetrics(
  reader: SqlReader,
  orgId: string,
  ids: readonly string[],
  fields: MetricFields = null,
): Promise<(SelectedMetric | null)[]> {
  const selected = selectedFields(fields);
  const rows: SelectedMetric[] = await reader.query(
    byIds.statement(fieldsKey(selected), { orgId, ids }, (p) =>
      db
        .selectFrom('metric as m')
        .select(fieldRefs(selected))
        .where('m.id', '=', (eb) => eb.fn.any(eb.val(p.ids)))
        .where('m.orgId', '=', p.orgId),
    ),
    POINT_READ,
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id) ?? null);
}

const byIdsWithParts = new ShapeCache<{ orgId: string; ids: readonly string[] }>();

/**
 * {@link findMetrics} with the columns of `parts` in the same statement (a kept search page read
 * again by its ids: src/metric/search-page.ts): each metric with its whole row, in the order of
 * `ids`; null for an id that is no metric of the organization.
 */
export async function findMetricRows(
  reader: SqlReader,
  orgId: string,
  ids: readonly string[],
  parts: readonly MetricPart<unknown>[],
  fields: MetricFields = null,
): Promise<(FoundMetricRow | null)[]> {
  const selected = selectedFields(fields);
  const rows = await reader.query(
    byIdsWithParts.statement(`${fieldsKey(selected)}|${partsKey(parts)}`, { orgId, ids }, (p) => {
      const metrics = db
        .selectFrom('metric as m')
        .select(fieldRefs(selected))
        .where('m.id', '=', (eb) => eb.fn.any(eb.val(p.ids)))
        .where('m.orgId', '=', p.orgId);
      const extra = partsSql(parts);
      return sql<
        SelectedMetric & Record<string, unknown>
      >`SELECT m.* ${extra.columns} FROM (${metrics}) m ${extra.joins}`;
    }),
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => foundRow(byId.get(id), selected, parts.length === 0));
}

/** A metric row with the columns of its parts (src/metric/parts.ts), and the metric of it. */
export interface FoundMetricRow {
  metric: SelectedMetric;
  row: Record<string, unknown>;
}

type OrgId = string | Expression<string>;

/**
 * The statement of a metric of the organization `orgId` (a value, or a
 * column of an enclosing statement) with the columns of `parts`.
 */
function metricRowQuery(
  p: { id: string },
  orgId: OrgId,
  selected: readonly MetricField[],
  parts: readonly MetricPart<unknown>[],
): Query<SelectedMetric & Record<string, unknown>> {
  const metric = db
    .selectFrom('metric as m')
    .select(fieldRefs(selected))
    .where('m.id', '=', p.id)
    .where('m.orgId', '=', orgId);
  if (!parts.length) return metric;
  // The parts' columns and joins are SQL of their own (src/metric/parts.ts) over the metric `m`; the
  // metric's row is a subquery that PostgreSQL pulls up, so the plan is that of one flat statement.
  const extra = partsSql(parts);
  return sql<SelectedMetric & Record<string, unknown>>`SELECT m.* ${extra.columns} FROM (${metric}) m ${extra.joins}`;
}

/**
 * The metric of a row of {@link metricRowQuery}; null when the row has none
 * (no such metric, or its columns null). `own`: the row holds the metric's
 * columns only, so it is the metric.
 */
function foundRow(
  row: (SelectedMetric & Record<string, unknown>) | undefined,
  selected: readonly MetricField[],
  own: boolean,
): FoundMetricRow | null {
  if (!row || row.id === null) return null;
  return { metric: own ? row : metricOf(row, selected), row };
}

const withParts = new ShapeCache<{ orgId: string; id: string }>();

/**
 * A metric of the organization with the columns of `parts`, in one
 * statement: the metric and the whole row (for the parts to read); null when
 * there is none.
 */
export async function findMetricRow(
  reader: SqlReader,
  orgId: string,
  id: string,
  parts: readonly MetricPart<unknown>[],
  fields: MetricFields = null,
): Promise<FoundMetricRow | null> {
  const selected = selectedFields(fields);
  const [row] = await reader.query(
    withParts.statement(`${fieldsKey(selected)}|${partsKey(parts)}`, { orgId, id }, (p) =>
      metricRowQuery(p, p.orgId, selected, parts),
    ),
    POINT_READ,
  );
  return foundRow(row, selected, parts.length === 0);
}

/**
 * The same read as a lateral subquery of another statement, over the
 * organization `orgId` there (the key lookup's: ReadWithKey in
 * src/auth/authenticate.ts), for the metric of an id; its row's metric
 * columns are null when there is no such metric. Made once per plan.
 */
export function metricRowWithKey(parts: readonly MetricPart<unknown>[], fields: MetricFields) {
  const selected = selectedFields(fields);
  const read = {
    shape: `metric:${fieldsKey(selected)}|${partsKey(parts)}`,
    query: (p: { id: string }, orgId: Expression<string>) => metricRowQuery(p, orgId, selected, parts),
    read: (row: Record<string, unknown>) => foundRow(row as SelectedMetric & Record<string, unknown>, selected, false),
  };
  return (id: string) => ({ ...read, args: { id } });
}
