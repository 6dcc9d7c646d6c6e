/**
 * The impact of a plan (docs/impact.md): for each stored metric that the plan
 * removes, deprecates, supersedes or changes in definition, what is built on
 * it (its transitive dependents through metric_input) and who read it lately
 * (the credentials in metric_usage over the last USAGE_WINDOW_DAYS days).
 * Read in the apply's transaction, before its writes, in two statements
 * whatever the number of metrics: a recursive walk of the inputs and a
 * grouped read of the usage.
 */
import type { Prisma } from '../generated/prisma/client.js';
import { USAGE_WINDOW_DAYS, windowStart } from '../metric/usage.js';
import type { Plan } from './plan.js';
import type { RegistryState, StoredMetric } from './state.js';

/** The changes an impact is listed for, the strongest first: a metric with several is listed with the first. */
export const IMPACT_CHANGES = ['removed', 'deprecated', 'superseded', 'definition_changed'] as const;
export type ImpactChange = (typeof IMPACT_CHANGES)[number];

/** The document fields whose change is a change of what the metric computes. */
export const DEFINITION_FIELDS: readonly string[] = [
  'sql_expression',
  'expression',
  'filters',
  'grains',
  'default_grain',
  'dimensions',
  'source_refs',
  'dependencies',
  'business_definition',
  'time_semantics',
  'inputs',
];

/** Keys of dependents an impact names (the count is of all of them). */
export const IMPACT_DEPENDENT_KEYS = 10;
/** Names of reading credentials an impact names (the count is of all of them). */
export const IMPACT_READER_KEYS = 5;

export interface Impact {
  key: string;
  change: ImpactChange;
  /** metrics built on it, directly or through other inputs: how many, and the first keys by key */
  dependents: { count: number; keys: string[] };
  /** credentials (not revoked) that read it in the last USAGE_WINDOW_DAYS days: how many, and the names of those that read it most */
  readers: { count: number; keys: string[] };
}

/** Whether an impact would break something: it has dependents or recent readers. */
export const hasImpact = (impact: Impact): boolean => impact.dependents.count > 0 || impact.readers.count > 0;

/** The stored metrics the plan changes in a way that has an impact, with the strongest change of each. */
export function impactedMetrics(
  plan: Plan,
  state: RegistryState,
  details: ReadonlyMap<string, StoredMetric>,
): Map<string, ImpactChange> {
  const found = new Map<string, ImpactChange>();
  const note = (id: string, change: ImpactChange) => {
    const known = found.get(id);
    if (known === undefined || IMPACT_CHANGES.indexOf(change) < IMPACT_CHANGES.indexOf(known)) found.set(id, change);
  };
  // Built when first needed: a plan of a chunk of an upload that changes nothing needs neither.
  let idByKey: Map<string, string> | undefined;
  let keyById: Map<string, string> | undefined;
  const idOf = (key: string) => {
    idByKey ??= new Map(state.metrics.map((metric) => [metric.key, metric.id]));
    return idByKey.get(key);
  };
  const keyOf = (id: string) => {
    keyById ??= new Map(state.metrics.map((metric) => [metric.id, metric.key]));
    return keyById.get(id);
  };
  for (const id of plan.writes.removed) note(id, 'removed');
  for (const { id, data } of plan.writes.updated) {
    const before = details.get(id);
    if (data.lifecycleStatus === 'DEPRECATED' && before && before.lifecycleStatus !== 'DEPRECATED') {
      note(id, 'deprecated');
    }
  }
  for (const entry of plan.entries) {
    if (entry.result !== 'updated') continue;
    if (!entry.changed_fields.some((field) => DEFINITION_FIELDS.includes(field))) continue;
    const id = idOf(entry.key);
    if (id) note(id, 'definition_changed');
  }
  // A supersedes relationship that the registry does not have yet, to a metric it has.
  const replaced = new Set(plan.writes.relationshipsOf);
  for (const relationship of plan.writes.relationships) {
    if (relationship.kind !== 'supersedes') continue;
    const targetKey = keyOf(relationship.targetMetricId);
    if (targetKey === undefined) continue;
    if (replaced.has(relationship.metricId)) {
      const before = details.get(relationship.metricId)?.relationships ?? [];
      if (before.some((r) => r.kind === 'supersedes' && r.target.key === targetKey)) continue;
    }
    note(relationship.targetMetricId, 'superseded');
  }
  return found;
}

/**
 * The plan's impact, in the order of its entries. `now` fixes the window of
 * recent readers (UTC days). Reads only; no statement when nothing is impacted.
 */
export async function planImpact(
  tx: Prisma.TransactionClient,
  plan: Plan,
  state: RegistryState,
  details: ReadonlyMap<string, StoredMetric>,
  now: Date,
): Promise<Impact[]> {
  const changes = impactedMetrics(plan, state, details);
  if (changes.size === 0) return [];
  const ids = [...changes.keys()];
  const dependents = await tx.$queryRaw<{ id: string; count: number; keys: string[] }[]>`
    WITH RECURSIVE dependent(root, id) AS (
      SELECT i.input_metric_id, i.metric_id FROM metric_input i WHERE i.input_metric_id = ANY(${ids}::uuid[])
      UNION
      SELECT d.root, i.metric_id FROM dependent d JOIN metric_input i ON i.input_metric_id = d.id
    )
    SELECT d.root::text AS id, count(*)::int AS count,
           (array_agg(m.key ORDER BY m.key))[1:${IMPACT_DEPENDENT_KEYS}::int] AS keys
    FROM dependent d JOIN metric m ON m.id = d.id
    WHERE d.id <> d.root
    GROUP BY d.root`;
  const readers = await tx.$queryRaw<{ id: string; count: number; keys: string[] }[]>`
    WITH per_key AS (
      SELECT u.metric_id, u.key_id, sum(u.reads) AS reads
      FROM metric_usage u
      WHERE u.org_id = ${plan.orgId}::uuid AND u.metric_id = ANY(${ids}::uuid[])
        AND u.day >= ${windowStart(now, USAGE_WINDOW_DAYS)}::date
      GROUP BY u.metric_id, u.key_id
    ), named AS (
      SELECT p.metric_id, p.reads, coalesce(k.name, t.name) AS name
      FROM per_key p
      LEFT JOIN api_key k ON k.id = p.key_id AND k.revoked_at IS NULL
      LEFT JOIN service_token t ON t.id = p.key_id AND t.revoked_at IS NULL
      WHERE k.id IS NOT NULL OR t.id IS NOT NULL
    )
    SELECT metric_id::text AS id, count(*)::int AS count,
           (array_agg(name ORDER BY reads DESC, name))[1:${IMPACT_READER_KEYS}::int] AS keys
    FROM named GROUP BY metric_id`;
  const dependentsOf = new Map(dependents.map((row) => [row.id, row]));
  const readersOf = new Map(readers.map((row) => [row.id, row]));
  const idByKey = new Map(state.metrics.map((metric) => [metric.key, metric.id]));
  const impact: Impact[] = [];
  for (const entry of plan.entries) {
    const id = idByKey.get(entry.key);
    const change = id === undefined ? undefined : changes.get(id);
    if (id === undefined || change === undefined) continue;
    const built = dependentsOf.get(id);
    const read = readersOf.get(id);
    impact.push({
      key: entry.key,
      change,
      dependents: { count: built?.count ?? 0, keys: built?.keys ?? [] },
      readers: { count: read?.count ?? 0, keys: read?.keys ?? [] },
    });
  }
  return impact;
}
