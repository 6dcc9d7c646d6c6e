/**
 * The lineage apply scenario (issue 34, "Performance"): an apply that
 * deprecates a metric with 1,000 transitive dependents records their verdict
 * changes and `metric.trust_changed` events in its transaction; compared with
 * the same apply, deprecating a metric without dependents, of the same
 * document. Target: within 2 s more.
 *
 * The document (`lineageDocument`): 5 root metrics, then 10 layers of 100
 * metrics, each taking 5 inputs from the layer before (the first layer takes
 * the 5 roots; layer k > 1 takes the metrics at places j .. j + 4, modulo
 * 100, of layer k - 1): every metric of the layers depends on every root,
 * chains are 10 deep, and the fan-in is 5. One more metric, `lineage_solo`,
 * has no dependents. All are RELEASED without validations (use_with_caution,
 * never_validated), so deprecating a root adds `untrusted_input` to the
 * reasons of all 1,000 and each gets its event.
 *
 * Each pair runs in an organization of its own: the document is applied, then
 * `lineage_solo` is deprecated (no dependents), then `lineage_root_0` too
 * (1,000 dependents): two applies that each change one metric.
 */
import { openDatabase } from '../src/db/client.js';
import { organizationWithToken, put } from './apply.js';
import type { Started } from './processes.js';

const LAYERS = 10;
const WIDTH = 100;
const ROOTS = 5;
const FAN_IN = 5;

const metricOf = (key: string, name: string, inputs: string[], deprecated: boolean) => ({
  key,
  name,
  description: `${name}: computed from ${inputs.length ? inputs.join(', ') : 'the warehouse'}.`,
  sql_expression: inputs.length ? inputs.join(' + ') : `SUM(${key})`,
  lifecycle_status: deprecated ? 'DEPRECATED' : 'RELEASED',
  definition_version: '1.0.0',
  policy_tier: 'tier_2',
  scope: 'exploratory',
  ...(inputs.length ? { inputs } : {}),
});

/** The scenario's document; `deprecated` are the keys deprecated in it. */
export function lineageDocument(organization: string, deprecated: ReadonlySet<string>) {
  const root = (j: number) => `lineage_root_${j}`;
  const layer = (k: number, j: number) => `lineage_l${String(k).padStart(2, '0')}_${String(j).padStart(3, '0')}`;
  const metrics = [
    ...Array.from({ length: ROOTS }, (_, j) => metricOf(root(j), `Lineage Root ${j}`, [], deprecated.has(root(j)))),
    ...Array.from({ length: LAYERS }, (_, k) =>
      Array.from({ length: WIDTH }, (_, j) => {
        const inputs =
          k === 0
            ? Array.from({ length: ROOTS }, (_, t) => root(t))
            : Array.from({ length: FAN_IN }, (_, t) => layer(k, (j + t) % WIDTH));
        return metricOf(layer(k + 1, j), `Lineage Layer ${k + 1} Metric ${j}`, inputs, false);
      }),
    ).flat(),
    metricOf('lineage_solo', 'Lineage Solo', [], deprecated.has('lineage_solo')),
  ];
  return {
    organization,
    defaults: { project: 'Lineage', owner_team: 'Finance Analytics', domain: 'Finance' },
    metrics,
  };
}

/** Change-feed events of an organization, by type. */
async function eventsByType(databaseUrl: string, slug: string): Promise<Record<string, number>> {
  const database = await openDatabase({ kind: 'postgres', url: databaseUrl }, { poolSize: 1 });
  try {
    const rows = await database.prisma.changeEvent.groupBy({
      by: ['type'],
      where: { organization: { slug } },
      _count: { _all: true },
    });
    return Object.fromEntries(rows.map((row) => [row.type, row._count._all]));
  } finally {
    await database.close();
  }
}

const minus = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(after)
      .map(([type, n]) => [type, n - (before[type] ?? 0)] as const)
      .filter(([, n]) => n > 0),
  );

export interface LineageApplyPair {
  /** seconds of the apply that deprecates lineage_solo (no dependents) */
  withoutDependents: number;
  /** seconds of the apply that deprecates lineage_root_0 (1,000 transitive dependents) */
  withDependents: number;
  statements: { withoutDependents: number | null; withDependents: number | null };
  /** events each apply recorded, by type */
  events: { withoutDependents: Record<string, number>; withDependents: Record<string, number> };
}

export interface LineageApplyScenario {
  metrics: number;
  dependents: number;
  pairs: LineageApplyPair[];
  /** medians over the pairs */
  withoutDependents: number;
  withDependents: number;
  /** median over the pairs of (with - without), seconds */
  difference: number;
  target: string;
  met: boolean;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

export async function runLineageApplyScenario(
  service: Started,
  databaseUrl: string,
  { pairs: count = 3, log }: { pairs?: number; log: (line: string) => void },
): Promise<LineageApplyScenario> {
  const pairs: LineageApplyPair[] = [];
  let metrics = 0;
  for (let p = 0; p < count; p++) {
    const slug = `bench-lineage-${p}`;
    const token = await organizationWithToken(databaseUrl, slug);
    const document = (...deprecated: string[]) => JSON.stringify(lineageDocument(slug, new Set(deprecated)));
    metrics = lineageDocument(slug, new Set()).metrics.length;
    const setup = await put(service, token, document());
    const before = await eventsByType(databaseUrl, slug);
    const solo = await put(service, token, document('lineage_solo'));
    const afterSolo = await eventsByType(databaseUrl, slug);
    const root = await put(service, token, document('lineage_solo', 'lineage_root_0'));
    const afterRoot = await eventsByType(databaseUrl, slug);
    const pair: LineageApplyPair = {
      withoutDependents: solo.seconds,
      withDependents: root.seconds,
      statements: { withoutDependents: solo.statements, withDependents: root.statements },
      events: { withoutDependents: minus(afterSolo, before), withDependents: minus(afterRoot, afterSolo) },
    };
    pairs.push(pair);
    log(
      `lineage apply ${p + 1}/${count} (document of ${metrics}, set up in ${setup.seconds.toFixed(1)} s): ` +
        `deprecating a metric without dependents ${solo.seconds.toFixed(2)} s (${solo.statements} statements, events ${JSON.stringify(pair.events.withoutDependents)}), ` +
        `with ${LAYERS * WIDTH} transitive dependents ${root.seconds.toFixed(2)} s (${root.statements} statements, events ${JSON.stringify(pair.events.withDependents)})`,
    );
  }
  const difference = median(pairs.map((p) => p.withDependents - p.withoutDependents));
  const result = {
    metrics,
    dependents: LAYERS * WIDTH,
    pairs,
    withoutDependents: median(pairs.map((p) => p.withoutDependents)),
    withDependents: median(pairs.map((p) => p.withDependents)),
    difference,
    target: 'within 2 s more',
    met: difference <= 2,
  };
  log(
    `lineage apply: without dependents ${result.withoutDependents.toFixed(2)} s, with 1,000 ${result.withDependents.toFixed(2)} s, ` +
      `${difference.toFixed(2)} s more (median of ${count}; target within 2 s: ${result.met ? 'met' : 'NOT met'})`,
  );
  return result;
}
