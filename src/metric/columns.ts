/**
 * The metric row as the read path selects it: the `metric` table's type that
 * `prisma generate` writes (prisma-kysely, src/generated/kysely), its fields
 * as the model names them. A read selects every field or a set of them
 * (src/schema/metric-selection.ts plans the set from a GraphQL selection);
 * its type says which.
 */
import type { Selectable } from 'kysely';
import type { DB } from '../generated/kysely/types.js';
import { Prisma } from '../generated/prisma/client.js';

/** A metric with every field read. */
export type MetricRow = Selectable<DB['metric']>;
export type MetricField = keyof MetricRow;

/** Every model field, in the schema's order (Prisma's list of the model's scalar fields). */
export const METRIC_FIELDS: readonly MetricField[] = Object.values(Prisma.MetricScalarFieldEnum);

// The two generated lists of the model's fields must agree: a compile error here means they do not.
const everyField: Record<MetricField, Prisma.MetricScalarFieldEnum> = Prisma.MetricScalarFieldEnum;
void everyField;

export function isMetricField(name: string): name is MetricField {
  return Object.hasOwn(Prisma.MetricScalarFieldEnum, name);
}

/** Fields every read selects: loaders and parts are keyed by `id`, scoping uses `orgId`. */
export type KeyField = 'id' | 'orgId';

/** Model fields to read; null: all of them. */
export type MetricFields = ReadonlySet<MetricField> | null;

/**
 * A metric as a read with a set of fields returns it: `id` and `orgId`
 * always, any other field only when it was asked for. (With every field
 * read, it is a {@link MetricRow}.)
 */
export type SelectedMetric = Pick<MetricRow, KeyField> & Partial<MetricRow>;

/** The fields to select, in a stable order (so one set is one statement text), keys first. */
export function selectedFields(fields: MetricFields): readonly MetricField[] {
  if (!fields) return METRIC_FIELDS;
  return METRIC_FIELDS.filter((field) => field === 'id' || field === 'orgId' || fields.has(field));
}

/** `m.<field>` references of the fields, for Kysely's select over `metric as m`. */
export const fieldRefs = (fields: readonly MetricField[]) => fields.map((field) => `m.${field}` as const);

/** The part of a statement's shape key that names its fields. */
export const fieldsKey = (fields: readonly MetricField[]) => (fields === METRIC_FIELDS ? '*' : fields.join());
