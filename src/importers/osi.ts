/**
 * Open Semantic Interchange / Apache Ossie document -> registry document,
 * for the 0.1 and 0.2 drafts (and the earlier snapshots without a
 * `version`, read as 0.1). The caller parses YAML or JSON; this is a pure
 * translation. OSI's own fields are read leniently; the METRIC_GOVERNANCE
 * extension is ours and read strictly.
 */
import { applyGovernance, type MetricGovernance, readGovernance } from './governance.js';
import { formatPath, ImportError, type ImportProblem } from './import-error.js';
import { isRecord, type JsonRecord, keyFromName, list, nonBlank, readableName, record, text } from './read.js';
import {
  DEFAULT_OWNER_TEAM,
  type ImportOptions,
  type RegistryDocumentInput,
  type RegistryMetricInput,
} from './registry-document-input.js';

export const GOVERNANCE_VENDOR = 'METRIC_GOVERNANCE';
const SUPPORTED_VERSION = /^0\.[12](\.|$)/;
const TEMPORAL_TYPES = new Set(['date', 'time', 'datetime', 'datetimetz']);

interface Dataset {
  name: string;
  source?: string;
  dimensions: Record<string, string>[];
}

/** The ANSI_SQL expression when there is one, else the first dialect's. */
function chooseExpression(expression: unknown): string | undefined {
  const dialects = list(record(expression)?.dialects).flatMap((value) => {
    const dialect = record(value);
    const sql = nonBlank(dialect?.expression);
    return sql ? [{ dialect: text(dialect?.dialect)?.toUpperCase(), sql }] : [];
  });
  return (dialects.find(({ dialect }) => dialect === 'ANSI_SQL') ?? dialects[0])?.sql;
}

/** A field is a time dimension when it says so, or (0.2) when unset and its datatype is temporal. */
function readDataset(value: unknown): Dataset | undefined {
  const dataset = record(value);
  const name = nonBlank(dataset?.name);
  if (!dataset || !name) return undefined;
  const dimensions = list(dataset.fields).flatMap((value) => {
    const field = record(value);
    const fieldName = nonBlank(field?.name);
    if (!field || !fieldName || field.dimension === undefined || field.dimension === null) return [];
    const isTime = record(field.dimension)?.is_time;
    const datatype = text(field.datatype)?.toLowerCase();
    const time = typeof isTime === 'boolean' ? isTime : datatype !== undefined && TEMPORAL_TYPES.has(datatype);
    return [{ name: fieldName, type: time ? 'time' : 'categorical' }];
  });
  return { name, source: nonBlank(dataset.source), dimensions };
}

/** ai_context is an object `{ instructions, synonyms, examples }` or a plain string (instructions). */
function aiContext(value: unknown): { instructions?: string; synonyms: string[] } {
  if (typeof value === 'string') return { instructions: nonBlank(value), synonyms: [] };
  const context = record(value);
  return {
    instructions: nonBlank(context?.instructions),
    synonyms: list(context?.synonyms).flatMap((synonym) => nonBlank(synonym) ?? []),
  };
}

/**
 * The datasets a metric's expression names (`store_sales.ss_net_profit`).
 * An expression that names none reads the model's fact datasets (on the
 * many side of a relationship and never on the one side), else all of them.
 */
function datasetsRead(sql: string, datasets: readonly Dataset[], relationships: unknown): Dataset[] {
  const named = datasets.filter((dataset) =>
    new RegExp(`(^|[^A-Za-z0-9_."])"?${dataset.name.replace(/[^A-Za-z0-9_]/g, '\\$&')}"?\\s*\\.`).test(sql),
  );
  if (named.length > 0) return named;
  const many = new Set<string>();
  const one = new Set<string>();
  for (const value of list(relationships)) {
    const relationship = record(value);
    const from = nonBlank(relationship?.from);
    const to = nonBlank(relationship?.to);
    if (from) many.add(from);
    if (to) one.add(to);
  }
  const facts = datasets.filter((dataset) => many.has(dataset.name) && !one.has(dataset.name));
  return facts.length > 0 ? facts : [...datasets];
}

function readMetricGovernance(
  extensions: unknown,
  path: readonly PropertyKey[],
  metricName: string,
  problems: ImportProblem[],
): MetricGovernance | undefined {
  let governance: MetricGovernance | undefined;
  list(extensions).forEach((value, index) => {
    const extension = record(value);
    if (text(extension?.vendor_name)?.toUpperCase() !== GOVERNANCE_VENDOR) return;
    const at = [...path, 'custom_extensions', index, 'data'];
    const fail = (message: string) =>
      problems.push({ path: formatPath(at), message: `metric "${metricName}": ${message}` });
    let data: unknown = extension?.data;
    if (typeof data === 'string') {
      try {
        data = JSON.parse(data);
      } catch (error) {
        fail(`the ${GOVERNANCE_VENDOR} data is not valid JSON (${error instanceof Error ? error.message : error})`);
        return;
      }
    }
    if (!isRecord(data) || !isRecord(data.governance)) {
      fail(`the ${GOVERNANCE_VENDOR} data must be a JSON object {"governance": {...}}`);
      return;
    }
    for (const key of Object.keys(data))
      if (key !== 'governance') fail(`unknown field "${key}" in the ${GOVERNANCE_VENDOR} data (only "governance")`);
    if (governance !== undefined) {
      fail(`a second ${GOVERNANCE_VENDOR} extension; a metric carries one`);
      return;
    }
    governance = readGovernance(data.governance, [...at, 'governance'], metricName, problems) ?? {};
  });
  return governance;
}

/**
 * Translates an OSI / Ossie document (already parsed from YAML or JSON) into
 * a registry document: one metric per metric of each semantic model. Throws
 * ImportError listing every problem.
 */
export function importOsiDocument(document: unknown, options: ImportOptions): RegistryDocumentInput {
  if (!isRecord(document) || !Array.isArray(document.semantic_model)) {
    throw new ImportError([
      {
        path: '',
        message: 'not an Open Semantic Interchange (Ossie) document: expected an object with a "semantic_model" list',
      },
    ]);
  }
  const version = document.version;
  if (version !== undefined && version !== null && !SUPPORTED_VERSION.test(String(version)))
    throw new ImportError([
      {
        path: 'version',
        message: `OSI version ${JSON.stringify(version)} is not supported; this importer reads the 0.1 and 0.2 drafts`,
      },
    ]);

  const problems: ImportProblem[] = [];
  const found: { path: PropertyKey[]; metric: JsonRecord; name: string; model: JsonRecord; datasets: Dataset[] }[] = [];
  document.semantic_model.forEach((value, modelIndex) => {
    const model = record(value);
    if (!model) return;
    const datasets = list(model.datasets).flatMap((dataset) => readDataset(dataset) ?? []);
    list(model.metrics).forEach((value, metricIndex) => {
      const path = ['semantic_model', modelIndex, 'metrics', metricIndex];
      const metric = record(value);
      const name = nonBlank(metric?.name);
      if (!metric || !name) problems.push({ path: formatPath([...path, 'name']), message: 'a metric needs a name' });
      else found.push({ path, metric, name, model, datasets });
    });
  });

  const keyOfName = new Map<string, string>();
  const firstByKey = new Map<string, string>();
  for (const { path, name } of found) {
    const key = keyFromName(name);
    const other = firstByKey.get(key);
    if (key === '')
      problems.push({ path: formatPath([...path, 'name']), message: `metric "${name}": the name makes no key` });
    else if (other !== undefined)
      problems.push({
        path: formatPath([...path, 'name']),
        message:
          other === name
            ? `metric "${name}": duplicate metric name`
            : `metric "${name}": makes the key "${key}", as metric "${other}" does`,
      });
    else firstByKey.set(key, name);
    if (!keyOfName.has(name)) keyOfName.set(name, key);
  }

  const metrics: RegistryMetricInput[] = [];
  for (const { path, metric, name, model, datasets } of found) {
    const sql = chooseExpression(metric.expression);
    if (!sql) {
      problems.push({
        path: formatPath([...path, 'expression']),
        message: `metric "${name}": expression.dialects holds no expression`,
      });
      continue;
    }
    const governance = readMetricGovernance(metric.custom_extensions, path, name, problems);
    const context = aiContext(metric.ai_context);
    const read = datasetsRead(sql, datasets, model.relationships);
    const dimensions: Record<string, string>[] = [];
    for (const dataset of read)
      for (const dimension of dataset.dimensions)
        if (!dimensions.some((known) => known.name === dimension.name)) dimensions.push({ ...dimension });
    const derived: RegistryMetricInput = {
      key: keyOfName.get(name) ?? name,
      name: readableName(name),
      description: text(metric.description) ?? '',
      project: options.project ?? nonBlank(model.name) ?? 'osi',
      owner_team: options.defaultOwnerTeam ?? DEFAULT_OWNER_TEAM,
      ...(options.defaultLifecycle ? { lifecycle_status: options.defaultLifecycle } : {}),
      sql_expression: sql,
      aliases: context.synonyms,
      ...(context.instructions ? { business_definition: { caveats: context.instructions } } : {}),
      dimensions,
      source_refs: read.flatMap((dataset) =>
        dataset.source ? [{ table: dataset.source, dataset: dataset.name }] : [],
      ),
      expression: structuredClone(metric.expression),
    };
    metrics.push(applyGovernance(derived, governance, keyOfName));
  }
  if (problems.length > 0) throw new ImportError(problems);
  return { organization: options.organization, metrics };
}
