/**
 * Metrics of an organization read by id: several (a DataLoader's batch) or
 * one with the parts its selection asks for (src/metric/loaders.ts), with
 * the fields asked for.
 */
import { sql } from 'kysely';
import { db, ShapeCache } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
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
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id) ?? null);
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
): Promise<{ metric: SelectedMetric; row: Record<string, unknown> } | null> {
  const selected = selectedFields(fields);
  const metric = (p: { orgId: string; id: string }) =>
    db.selectFrom('metric as m').select(fieldRefs(selected)).where('m.id', '=', p.id).where('m.orgId', '=', p.orgId);
  const key = `${fieldsKey(selected)}|${partsKey(parts)}`;
  if (!parts.length) {
    const [row]: SelectedMetric[] = await reader.query(withParts.statement(key, { orgId, id }, metric));
    return row ? { metric: row, row } : null;
  }
  // The parts' columns and joins are SQL of their own (src/metric/parts.ts) over the metric `m`; the
  // metric's row is a subquery that PostgreSQL pulls up, so the plan is that of one flat statement.
  const [row] = await reader.query(
    withParts.statement(key, { orgId, id }, (p) => {
      const extra = partsSql(parts);
      return sql<SelectedMetric & Record<string, unknown>>`
          SELECT m.* ${extra.columns} FROM (${metric(p)}) m ${extra.joins}`;
    }),
  );
  return row ? { metric: metricOf(row, selected), row } : null;
}
