/**
 * dbt semantic manifest -> registry document. A pure translation: the
 * registry's parser validates the result and the apply is the only writer.
 * dbt's own fields are read leniently (unknown ones ignored, nulls as
 * absent); the `governance` object in a metric's `config.meta` is ours and
 * read strictly.
 */
import { indexManifest, ownerOf } from './dbt-manifest.js';
import { MetricResolver, type ResolvedMetric, STANDARD_GRAINS } from './dbt-metric.js';
import { applyGovernance, type MetricGovernance, readGovernance } from './governance.js';
import { formatPath, ImportError, type ImportProblem } from './import-error.js';
import { dimensionsUpTo, ImportedSize, MAX_DIMENSIONS, MAX_FILTERS, MAX_SOURCE_REFS, tooMany } from './limits.js';
import { importedMeaning } from './meaning.js';
import { keyFromName, nonBlank, parseJsonInput, readableName, record, text } from './read.js';
import {
  DEFAULT_OWNER_TEAM,
  type ImportOptions,
  type RegistryDocumentInput,
  type RegistryMetricInput,
  type RegistrySourceRef,
} from './registry-document-input.js';

export const DEFAULT_DBT_PROJECT = 'dbt';

/** The metric types of dbt that the registry calls otherwise. */
const METRIC_TYPE: Record<string, string> = { simple: 'base', measure_proxy: 'base', expr: 'derived' };

/** The grain and every coarser standard grain; a custom grain stands alone. */
function grainsFrom(grain: string | undefined): string[] {
  if (grain === undefined) return [];
  const index = STANDARD_GRAINS.indexOf(grain as never);
  return index < 0 ? [grain] : STANDARD_GRAINS.slice(index);
}

function grainFields(resolved: ResolvedMetric, timeGranularity: string | undefined) {
  const grains = grainsFrom(resolved.grain);
  if (timeGranularity && !grains.includes(timeGranularity)) grains.push(timeGranularity);
  return { grains, default_grain: timeGranularity ?? grains[0] ?? '' };
}

/**
 * Translates a dbt semantic manifest (parsed JSON, or its text) into a
 * registry document for `options.organization`. Throws ImportError listing
 * every problem (not a manifest, truncated JSON, duplicate names, missing
 * measures or input metrics, invalid governance).
 */
export function importDbtManifest(manifest: unknown, options: ImportOptions): RegistryDocumentInput {
  const index = indexManifest(parseJsonInput(manifest, 'a dbt semantic manifest (target/semantic_manifest.json)'));
  const problems: ImportProblem[] = [];
  const resolver = new MetricResolver(index, problems);

  const keyOfName = new Map<string, string>();
  const nameOfKey = new Map<string, string>();
  for (const entry of index.metricList) {
    const key = keyFromName(entry.name);
    const other = nameOfKey.get(key);
    if (key === '' || other !== undefined)
      problems.push({
        path: formatPath(['metrics', entry.index, 'name']),
        message:
          key === ''
            ? `metric "${entry.name}": the name makes no key (a key needs a letter or digit)`
            : `metric "${entry.name}": makes the key "${key}", as metric "${other}" does`,
      });
    nameOfKey.set(key, entry.name);
    keyOfName.set(entry.name, key);
  }

  const metrics: RegistryMetricInput[] = [];
  const size = new ImportedSize();
  for (const entry of index.metricList) {
    const { raw } = entry;
    const resolved = resolver.resolve(entry);
    const config = record(raw.config);
    const meta = record(config?.meta) ?? record(raw.meta);
    const governancePath = config?.meta !== undefined ? ['config', 'meta', 'governance'] : ['meta', 'governance'];
    let governance: MetricGovernance | undefined;
    if (meta?.governance !== undefined && meta.governance !== null) {
      const before = problems.length;
      governance = readGovernance(meta.governance, ['metrics', entry.index, ...governancePath], entry.name, problems);
      if (governance === undefined && problems.length === before) governance = {};
    }
    if (!resolved) continue;
    const dimensions = dimensionsUpTo(resolved.models.map((model) => model.dimensions));
    const tooWide = (
      [
        ['semantic models read', resolved.models.length, MAX_SOURCE_REFS],
        ["filters, its own and its inputs'", resolved.filters.length, MAX_FILTERS],
        ['dimensions', dimensions.length, MAX_DIMENSIONS],
      ] as const
    ).filter(([, count, limit]) => count > limit);
    for (const [what, , limit] of tooWide)
      problems.push({
        path: formatPath(['metrics', entry.index]),
        message: `metric "${entry.name}": ${tooMany(what, limit)}`,
      });
    if (tooWide.length > 0) continue;
    const sqlExpression = resolver.expression(entry, resolved);
    if (sqlExpression === null) continue;

    const type = (text(raw.type) ?? '').toLowerCase();
    const timeGranularity = nonBlank(raw.time_granularity)?.toLowerCase();
    const sourceRefs: RegistrySourceRef[] = resolved.models.flatMap((model) =>
      model.relation ? [{ table: model.relation, semantic_model: model.name }] : [],
    );

    // Owner: governance.owner_team wins (laid over below), then the metric's meta.owner,
    // then the owner of the first semantic model it reads, then the default.
    const ownerTeam =
      ownerOf(meta) ??
      resolved.models.map((model) => model.owner).find((owner) => owner !== undefined) ??
      options.defaultOwnerTeam ??
      DEFAULT_OWNER_TEAM;

    const derived: RegistryMetricInput = {
      key: keyOfName.get(entry.name) ?? entry.name,
      name: nonBlank(raw.label) ?? readableName(entry.name),
      ...importedMeaning(raw.description, undefined),
      project: options.project ?? DEFAULT_DBT_PROJECT,
      owner_team: ownerTeam,
      metric_type: METRIC_TYPE[type] ?? type,
      template_name: type,
      ...(options.defaultLifecycle ? { lifecycle_status: options.defaultLifecycle } : {}),
      sql_expression: sqlExpression,
      ...grainFields(resolved, timeGranularity),
      dimensions,
      filters: [...resolved.filters],
      source_refs: sourceRefs,
      dependencies: { measures: [...resolved.measures], metrics: [...resolved.metrics] },
      // Its input metrics as links (measures and semantic models stay source references). Each is a
      // metric of this import: one that could not be imported is a problem, and the import is refused.
      ...(resolved.metrics.length > 0
        ? { inputs: resolved.metrics.map((name) => keyOfName.get(name) ?? keyFromName(name)) }
        : {}),
      ...(resolved.timeSemantics ? { time_semantics: structuredClone(resolved.timeSemantics) } : {}),
    };
    if (!size.spend(derived)) {
      problems.push({
        path: formatPath(['metrics', entry.index]),
        message: `metric "${entry.name}": ${ImportedSize.message}`,
      });
      break;
    }
    metrics.push(applyGovernance(derived, governance, keyOfName));
  }
  if (problems.length > 0) throw new ImportError(problems);
  return { organization: options.organization, metrics };
}

/**
 * The source an import of this manifest applies as (docs/importers.md):
 * `dbt:<project>`, the project named where dbt writes it (a manifest's
 * `metadata.project_name`, or `project_name` in `project_configuration` or
 * its `metadata`); `dbt` when the file names none.
 */
export function dbtSourceName(manifest: unknown): string {
  const parsed = record(manifest);
  const configuration = record(parsed?.project_configuration);
  const name =
    nonBlank(record(parsed?.metadata)?.project_name) ??
    nonBlank(configuration?.project_name) ??
    nonBlank(record(configuration?.metadata)?.project_name);
  const project = name === undefined ? '' : keyFromName(name).slice(0, 100);
  return project === '' ? 'dbt' : `dbt:${project}`;
}
