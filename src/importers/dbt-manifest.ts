/**
 * The parts of dbt's semantic manifest (target/semantic_manifest.json) the
 * importer reads, indexed once: semantic models with their relation,
 * dimensions and measures, and metrics by name. Both manifest generations
 * are read: measures on semantic models (dsi up to 0.9), and simple metrics
 * carrying `metric_aggregation_params` with no measures (the newer spec).
 */
import { formatPath, ImportError, type ImportProblem } from './import-error.js';
import { isRecord, type JsonRecord, list, nonBlank, record, text } from './read.js';

export interface DimensionInfo {
  name: string;
  type: string;
  granularity?: string;
}

export interface SemanticModelInfo {
  name: string;
  /** node_relation.relation_name, else database.schema.alias */
  relation?: string;
  dimensions: DimensionInfo[];
  /** the granularity of each time dimension (the first of its name), read once rather than per measure */
  timeGranularity: Map<string, string | undefined>;
  aggTimeDimension?: string;
  owner?: string;
}

export interface MeasureInfo {
  name: string;
  agg: string;
  aggParams: unknown;
  expr: string;
  aggTimeDimension?: string;
  model: SemanticModelInfo;
}

export interface MetricEntry {
  index: number;
  name: string;
  raw: JsonRecord;
}

export interface ManifestIndex {
  models: Map<string, SemanticModelInfo>;
  measures: Map<string, MeasureInfo>;
  metrics: Map<string, MetricEntry>;
  /** metrics in file order, those without a usable name left out */
  metricList: MetricEntry[];
}

const NOT_A_MANIFEST =
  'not a dbt semantic manifest: expected a JSON object with "semantic_models" and "metrics" arrays, as dbt writes to target/semantic_manifest.json';

/** The owner named in a meta object: a string, or dbt's group owner shape `{ name, email }`. */
export function ownerOf(meta: unknown): string | undefined {
  const owner = record(meta)?.owner;
  if (typeof owner === 'string') return nonBlank(owner);
  const person = record(owner);
  return person ? (nonBlank(person.name) ?? nonBlank(person.email)) : undefined;
}

function relationOf(nodeRelation: unknown): string | undefined {
  const relation = record(nodeRelation);
  if (!relation) return undefined;
  const name = nonBlank(relation.relation_name);
  if (name) return name;
  const parts = [relation.database, relation.schema_name, relation.alias].map(nonBlank).filter(Boolean);
  return parts.length > 0 ? parts.join('.') : undefined;
}

function readDimension(value: unknown): DimensionInfo | undefined {
  const dimension = record(value);
  const name = nonBlank(dimension?.name);
  if (!dimension || !name) return undefined;
  const type = (text(dimension.type) ?? 'categorical').toLowerCase();
  const granularity = text(record(dimension.type_params)?.time_granularity)?.toLowerCase();
  return type === 'time' && granularity ? { name, type, granularity } : { name, type };
}

export function indexManifest(manifest: unknown): ManifestIndex {
  if (!isRecord(manifest) || !Array.isArray(manifest.semantic_models) || !Array.isArray(manifest.metrics)) {
    const hint =
      isRecord(manifest) && isRecord(manifest.nodes)
        ? " (this looks like dbt's manifest.json; import target/semantic_manifest.json instead)"
        : '';
    throw new ImportError([{ path: '', message: NOT_A_MANIFEST + hint }]);
  }
  const problems: ImportProblem[] = [];
  const models = new Map<string, SemanticModelInfo>();
  const measures = new Map<string, MeasureInfo>();
  manifest.semantic_models.forEach((value, index) => {
    const model = record(value);
    const name = nonBlank(model?.name);
    if (!model || !name) {
      problems.push({ path: formatPath(['semantic_models', index, 'name']), message: 'a semantic model needs a name' });
      return;
    }
    const dimensions = list(model.dimensions).flatMap((dimension) => readDimension(dimension) ?? []);
    const timeGranularity = new Map<string, string | undefined>();
    for (const dimension of dimensions)
      if (dimension.type === 'time' && !timeGranularity.has(dimension.name))
        timeGranularity.set(dimension.name, dimension.granularity);
    const info: SemanticModelInfo = {
      name,
      relation: relationOf(model.node_relation),
      dimensions,
      timeGranularity,
      aggTimeDimension: nonBlank(record(model.defaults)?.agg_time_dimension),
      owner: ownerOf(record(model.config)?.meta) ?? ownerOf(model.meta),
    };
    models.set(name, info);
    for (const value of list(model.measures)) {
      const measure = record(value);
      const measureName = nonBlank(measure?.name);
      if (!measure || !measureName) continue;
      measures.set(measureName, {
        name: measureName,
        agg: nonBlank(measure.agg) ?? 'sum',
        aggParams: measure.agg_params,
        // dbt's default: a measure without expr aggregates the column of its name
        expr: nonBlank(typeof measure.expr === 'number' ? String(measure.expr) : measure.expr) ?? measureName,
        aggTimeDimension: nonBlank(measure.agg_time_dimension),
        model: info,
      });
    }
  });

  const metrics = new Map<string, MetricEntry>();
  const metricList: MetricEntry[] = [];
  manifest.metrics.forEach((value, index) => {
    const raw = record(value);
    const name = nonBlank(raw?.name);
    if (!raw || !name) {
      problems.push({ path: formatPath(['metrics', index, 'name']), message: 'a metric needs a name' });
      return;
    }
    const earlier = metrics.get(name);
    if (earlier) {
      problems.push({
        path: formatPath(['metrics', index, 'name']),
        message: `metric "${name}": duplicate metric name (also metrics[${earlier.index}])`,
      });
      return;
    }
    const entry = { index, name, raw };
    metrics.set(name, entry);
    metricList.push(entry);
  });
  if (problems.length > 0) throw new ImportError(problems);
  return { models, measures, metrics, metricList };
}
