/**
 * The per-request DataLoaders of what surrounds a metric: one SQL statement
 * per part per request, whatever the number of metrics (DataLoader collects
 * the ids of one tick), and a single-metric read that takes the parts a
 * selection needs in the metric's own statement and primes their loaders.
 */
import DataLoader from 'dataloader';
import { sql } from 'kysely';
import { ShapeCache } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
import { type FoundMetricRow, findMetricRow, findMetrics } from './by-id.js';
import type { MetricFields, SelectedMetric } from './columns.js';
import { type DependentsPage, dependentsLoader, dependentsPageKey } from './dependents.js';
import { dependentsCountPart, inputsPart } from './lineage-parts.js';
import type { EffectiveFilter } from './list.js';
import { listMetricPage, listMetricPageWithParts, type MetricPage } from './list-page.js';
import { disambiguationPart, discussionPart, type MetricPart, notesPart, relationsPart, statsPart } from './parts.js';
import type { KeptReads } from './read-cache.js';
import { searchMetricPage } from './search-page.js';
import { revisionPart } from './state.js';
import { trustPart } from './trust.js';

export const METRIC_PARTS = {
  stats: statsPart,
  discussion: discussionPart,
  agentContextNotes: notesPart,
  disambiguation: disambiguationPart,
  relations: relationsPart,
  trust: trustPart,
  revision: revisionPart,
  inputs: inputsPart,
  dependentsCount: dependentsCountPart,
};

export type PartName = keyof typeof METRIC_PARTS;
type PartValue<N extends PartName> = (typeof METRIC_PARTS)[N] extends MetricPart<infer T> ? T : never;

const batches = new ShapeCache<{ ids: readonly string[] }>();

function partLoader<T>(reader: SqlReader, part: MetricPart<T>): DataLoader<string, T> {
  return new DataLoader<string, T>(async (ids) => {
    // The part's columns are its own SQL; it reads them from the row (`read`).
    const rows = await reader.query(
      batches.statement(
        part.name,
        { ids },
        (p) => sql<Record<string, unknown>>`
          SELECT m.id::text AS part_metric_id, ${part.columns} FROM unnest(${p.ids}::uuid[]) AS m(id) ${part.joins}`,
      ),
    );
    const byId = new Map(rows.map((row) => [row.part_metric_id as string, part.read(row)]));
    return ids.map((id) => byId.get(id) ?? new Error(`no ${id} in the batch`));
  });
}

type PartLoaders = { [N in PartName]: DataLoader<string, PartValue<N>> };

/** What a single-metric read takes: the fields of the metric (null: all) and its parts. */
export interface MetricReadPlan {
  readonly fields: MetricFields;
  readonly parts: ReadonlySet<PartName>;
}

/** Loaders of one request; `orgId` scopes the metrics a relationship's target may be. */
export function createMetricLoaders(reader: SqlReader, orgId: string) {
  const byFields = new Map<string, DataLoader<string, SelectedMetric | null>>();
  /** single-metric reads done before the operation ran ({@link primeMetricRead}), by id */
  const ahead = new Map<string, { plan: MetricReadPlan; metric: SelectedMetric | null }>();
  const dependentsPages = new Map<string, DataLoader<string, string[]>>();
  const parts = Object.fromEntries(
    Object.entries(METRIC_PARTS).map(([name, part]) => [name, partLoader(reader, part as MetricPart<unknown>)]),
  ) as PartLoaders;
  return {
    /** metrics by id, one loader per set of fields (the targets of a detail share one) */
    metrics(fields: MetricFields): DataLoader<string, SelectedMetric | null> {
      const key = fields ? [...fields].sort().join() : '*';
      let loader = byFields.get(key);
      if (!loader) {
        loader = new DataLoader((ids) => findMetrics(reader, orgId, ids, fields));
        byFields.set(key, loader);
      }
      return loader;
    },
    /** ids of the direct dependents of metrics on one page, one loader per page's arguments */
    dependents(page: DependentsPage): DataLoader<string, string[]> {
      const key = dependentsPageKey(page);
      let loader = dependentsPages.get(key);
      if (!loader) {
        loader = dependentsLoader(reader, page);
        dependentsPages.set(key, loader);
      }
      return loader;
    },
    /** Keeps a single-metric read of `id` done ahead, for a read of the same plan (the same object). */
    keepRead(id: string, plan: MetricReadPlan, metric: SelectedMetric | null): void {
      ahead.set(id, { plan, metric });
    },
    /** The read of `id` kept for `plan`; undefined when there is none. */
    keptRead(id: string, plan: MetricReadPlan): SelectedMetric | null | undefined {
      const kept = ahead.get(id);
      return kept?.plan === plan ? kept.metric : undefined;
    },
    ...parts,
  };
}

export type MetricLoaders = ReturnType<typeof createMetricLoaders>;

function prime<N extends PartName>(loaders: MetricLoaders, name: N, id: string, row: Record<string, unknown>): void {
  (loaders[name] as DataLoader<string, PartValue<N>>).prime(id, METRIC_PARTS[name].read(row) as PartValue<N>);
}

/** The parts' loaders from a metric's row, by the metric's id as stored (which may differ in case from the id asked for). */
function primeParts(loaders: MetricLoaders, names: Iterable<PartName>, found: FoundMetricRow): void {
  for (const name of names) prime(loaders, name, found.metric.id, found.row);
}

/**
 * Reads with `parts` in the same statement, then `primes` their loaders from
 * what it read. Should that statement fail, `alone` reads without them and
 * each part is left to its loader, so that a failed supporting read fails
 * only its own fields (they degrade; see the REST envelopes), as it would
 * without the shortcut.
 */
async function readWithParts<R, T>(
  parts: ReadonlySet<PartName>,
  combined: (parts: MetricPart<unknown>[]) => Promise<R>,
  alone: () => Promise<T>,
  primed: (read: R, names: PartName[]) => T,
): Promise<T> {
  const names = [...parts];
  if (!names.length) return alone();
  let read: R;
  try {
    read = await combined(names.map((name) => METRIC_PARTS[name]));
  } catch {
    return alone();
  }
  return primed(read, names);
}

/**
 * A read of a metric with `plan`'s parts done before the operation (in the
 * key lookup's statement: src/rest/routes.ts): a {@link loadMetricWithParts}
 * of the same id and plan takes it, and the parts read prime their loaders.
 */
export function primeMetricRead(
  loaders: MetricLoaders,
  id: string,
  plan: MetricReadPlan,
  found: FoundMetricRow | null,
): void {
  if (found) primeParts(loaders, plan.parts, found);
  loaders.keepRead(id, plan, found?.metric ?? null);
}

/** A metric of the organization (its `fields`, null: all) with `parts` in one statement; null when there is none. */
export function loadMetricWithParts(
  reader: SqlReader,
  loaders: MetricLoaders,
  orgId: string,
  id: string,
  plan: MetricReadPlan,
): Promise<SelectedMetric | null> {
  const kept = loaders.keptRead(id, plan);
  if (kept !== undefined) return Promise.resolve(kept);
  const { fields, parts } = plan;
  return readWithParts(
    parts,
    (list) => findMetricRow(reader, orgId, id, list, fields),
    async () => (await findMetricRow(reader, orgId, id, [], fields))?.metric ?? null,
    (found, names) => {
      if (!found) return null;
      primeParts(loaders, names, found);
      return found.metric;
    },
  );
}

/**
 * A list page with the parts its selection asks for, read in the page's own
 * statement after OFFSET/LIMIT: a dashboard of 100 metrics with counts and
 * notes is one statement.
 */
export function loadListPageWithParts(
  reader: SqlReader,
  loaders: MetricLoaders,
  orgId: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  { fields, parts }: MetricReadPlan,
  kept: KeptReads,
): Promise<MetricPage> {
  return readWithParts(
    parts,
    (list) => listMetricPageWithParts(reader, orgId, filter, page, fields, kept, list),
    () => listMetricPage(reader, orgId, filter, page, fields, kept),
    (read, names) => primePage(loaders, read, names),
  );
}

/**
 * A search page with the parts its selection asks for, in the page's own
 * statement as for a list page (ranked, or a kept page read by its ids): the
 * trust verdicts of a page of results cost no statement of their own.
 */
export function loadSearchPageWithParts(
  reader: SqlReader,
  loaders: MetricLoaders,
  orgId: string,
  query: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
  { fields, parts }: MetricReadPlan,
  kept: KeptReads,
): Promise<MetricPage> {
  return readWithParts(
    parts,
    (list) => searchMetricPage(reader, orgId, query, filter, page, fields, kept, list),
    () => searchMetricPage(reader, orgId, query, filter, page, fields, kept),
    (read, names) => primePage(loaders, read, names),
  );
}

/** Primes the parts' loaders from a page read with them; the page without its part rows. */
function primePage(
  loaders: MetricLoaders,
  read: MetricPage & { partRows: Record<string, unknown>[] },
  names: PartName[],
): MetricPage {
  read.rows.forEach((metric, i) => {
    const row = read.partRows[i];
    if (row) for (const name of names) prime(loaders, name, metric.id, row);
  });
  const { partRows: _, ...page } = read;
  return page;
}
