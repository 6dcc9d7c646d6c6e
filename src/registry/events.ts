/**
 * The change-feed events of an apply (src/changes/): one per created,
 * restored, updated and removed metric, in the plan's order, with a
 * `metric.lifecycle_changed` after an update of the lifecycle and a
 * `metric.version_released` for each version that became `released` or
 * `approved`. Trust transitions are found after the writes
 * (src/changes/trust-transitions.ts).
 */
import type { MetricRef, NewChangeEvent } from '../changes/event.js';
import type { Prisma } from '../generated/prisma/client.js';
import type { Plan } from './plan.js';
import type { StoredMetric } from './state.js';

type MetricRow = Prisma.MetricCreateManyInput;
type VersionRow = Prisma.MetricVersionCreateManyInput;

const RELEASED = new Set(['released', 'approved']);

const ref = (row: MetricRow): MetricRef => ({
  id: row.id,
  key: row.key,
  name: row.name,
  lifecycleStatus: row.lifecycleStatus,
});

/** What the removed metrics were, read before they are deleted. */
export type RemovedMetrics = ReadonlyMap<string, MetricRef>;

function releasedVersions(metric: MetricRef, versions: readonly VersionRow[], before: StoredMetric | undefined) {
  const previous = new Map(before?.versions.map((version) => [version.definitionVersion, version.status]));
  return versions
    .filter(
      (version) => RELEASED.has(version.status) && !RELEASED.has(previous.get(version.definitionVersion) ?? 'absent'),
    )
    .map(
      (version): NewChangeEvent => ({
        type: 'metric.version_released',
        metric,
        detail: {
          definition_version: version.definitionVersion,
          status: version.status,
          released_at: version.releasedAt ?? null,
        },
      }),
    );
}

/**
 * The events of applying `plan`, given the stored metrics it compared
 * (`details`) and the removed metrics as they were.
 */
export function applyEvents(
  plan: Plan,
  details: ReadonlyMap<string, StoredMetric>,
  removed: RemovedMetrics,
): NewChangeEvent[] {
  const { writes } = plan;
  const rows = new Map<string, MetricRow>();
  for (const row of [...writes.created, ...writes.restored]) rows.set(row.key, row);
  for (const { data } of writes.updated) rows.set(data.key, data);
  const removedByKey = new Map([...removed.values()].map((metric) => [metric.key, metric]));
  const versionsOf = new Map<string, VersionRow[]>();
  for (const version of writes.versions) {
    versionsOf.set(version.metricId, [...(versionsOf.get(version.metricId) ?? []), version]);
  }
  const replaced = new Set(writes.governanceOf);
  const events: NewChangeEvent[] = [];
  for (const entry of plan.entries) {
    if (entry.result === 'removed') {
      const metric = removedByKey.get(entry.key);
      if (metric) events.push({ type: 'metric.removed', metric });
      continue;
    }
    const row = rows.get(entry.key);
    if (!row) continue;
    const metric = ref(row);
    // Its versions were released before it was removed: a restore announces no release.
    if (entry.result === 'restored') {
      events.push({ type: 'metric.restored', metric });
      continue;
    }
    const versions = versionsOf.get(row.id) ?? [];
    if (entry.result === 'created') {
      events.push({ type: 'metric.created', metric });
      events.push(...releasedVersions(metric, versions, undefined));
      continue;
    }
    const before = details.get(row.id);
    events.push({ type: 'metric.updated', metric, detail: { changed_fields: entry.changed_fields } });
    if (before && before.lifecycleStatus !== row.lifecycleStatus) {
      events.push({
        type: 'metric.lifecycle_changed',
        metric,
        detail: { from: before.lifecycleStatus, to: row.lifecycleStatus },
      });
    }
    if (replaced.has(row.id)) events.push(...releasedVersions(metric, versions, before));
  }
  return events;
}
