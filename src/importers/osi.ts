/**
 * Open Semantic Interchange / Apache Ossie document -> registry document,
 * for the 0.1 and 0.2 drafts (and the earlier snapshots without a
 * `version`, read as 0.1). The caller parses YAML or JSON; this is a pure
 * translation. OSI's own fields are read leniently; the METRIC_GOVERNANCE
 * extension is ours and read strictly.
 */
import { applyGovernance, type MetricGovernance, readGovernance } from './governance.js';
import { formatPath, ImportError, type ImportProblem } from './import-error.js';
import {
  dimensionsUpTo,
  ImportedSize,
  jsonNesting,
  MAX_DIMENSIONS,
  MAX_GOVERNANCE_DATA,
  MAX_GOVERNANCE_DEPTH,
  MAX_SOURCE_REFS,
  tooMany,
} from './limits.js';
import { importedMeaning } from './meaning.js';
import { inputMetricNames, type MetricNames, metricNames } from './osi-inputs.js';
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
  /** its place in the model: datasets read are listed in the model's order */
  position: number;
  source?: string;
  dimensions: { name: string; type: string }[];
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
function readDataset(value: unknown, position: number): Dataset | undefined {
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
  return { name, position, source: nonBlank(dataset.source), dimensions };
}

/** ai_context is an object `{ instructions, synonyms, examples }` or a plain string (instructions). */
function aiContext(value: unknown): { instructions?: string; synonyms: string[]; examples: string[] } {
  if (typeof value === 'string') return { instructions: nonBlank(value), synonyms: [], examples: [] };
  const context = record(value);
  const strings = (values: unknown) => list(values).flatMap((value) => nonBlank(value) ?? []);
  return {
    instructions: nonBlank(context?.instructions),
    synonyms: strings(context?.synonyms),
    examples: strings(context?.examples),
  };
}

/** A word followed by a dot (`store_sales.`, `"store_sales" .`): what may name a dataset, outside string literals. */
const QUALIFIER = /'(?:[^']|'')*'|"([^"]*)"\s*\.|([A-Za-z0-9_]+)\s*\.|"[^"]*"|[A-Za-z0-9_]+/g;

/**
 * The datasets a metric's expression names (`store_sales.ss_net_profit`),
 * in the order it names them, found in one pass over the expression. An
 * expression that names none reads the model's one fact dataset (on the
 * many side of a relationship and never on the one side), else its only
 * dataset; otherwise the expression does not say which, and none is read:
 * a guess of every dataset is no reference, and multiplies a document.
 */
function datasetsRead(sql: string, datasets: ReadonlyMap<string, Dataset>, facts: readonly Dataset[]): Dataset[] {
  const named = new Set<Dataset>();
  for (const match of sql.matchAll(QUALIFIER)) {
    // `schema.store_sales.column` names a table of that schema, not the dataset
    const qualifier = sql.charAt(match.index - 1) === '.' ? undefined : (match[1] ?? match[2]);
    const dataset = qualifier === undefined ? undefined : datasets.get(qualifier);
    if (dataset) named.add(dataset);
    if (named.size > MAX_SOURCE_REFS) break;
  }
  if (named.size > 0) return [...named].sort((a, b) => a.position - b.position);
  if (facts.length === 1) return [...facts];
  return datasets.size === 1 ? [...datasets.values()] : [];
}

/** The names of a model's datasets and of their fields: what an expression may mean besides a metric. */
function datasetAndFieldNames(model: JsonRecord): string[] {
  return list(model.datasets).flatMap((value) => {
    const dataset = record(value);
    const fields = list(dataset?.fields).flatMap((field) => nonBlank(record(field)?.name) ?? []);
    return [...(nonBlank(dataset?.name) ?? []), ...fields];
  });
}

/** The fact datasets of a model: on the many side of a relationship, never on the one side. */
function factDatasets(datasets: ReadonlyMap<string, Dataset>, relationships: unknown): Dataset[] {
  const many = new Set<string>();
  const one = new Set<string>();
  for (const value of list(relationships)) {
    const relationship = record(value);
    const from = nonBlank(relationship?.from);
    const to = nonBlank(relationship?.to);
    if (from) many.add(from);
    if (to) one.add(to);
  }
  return [...datasets.values()].filter((dataset) => many.has(dataset.name) && !one.has(dataset.name));
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
      if (data.length > MAX_GOVERNANCE_DATA) {
        fail(`the ${GOVERNANCE_VENDOR} data is longer than ${MAX_GOVERNANCE_DATA} characters`);
        return;
      }
      // The parser and the governance schema walk the value a level at a time: its nesting is bounded first.
      if (jsonNesting(data) > MAX_GOVERNANCE_DEPTH) {
        fail(`the ${GOVERNANCE_VENDOR} data is nested deeper than ${MAX_GOVERNANCE_DEPTH} levels`);
        return;
      }
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
  const found: {
    path: PropertyKey[];
    metric: JsonRecord;
    name: string;
    model: JsonRecord;
    datasets: Map<string, Dataset>;
    facts: Dataset[];
  }[] = [];
  document.semantic_model.forEach((value, modelIndex) => {
    const model = record(value);
    if (!model) return;
    const datasets = new Map<string, Dataset>();
    list(model.datasets).forEach((value, position) => {
      const dataset = readDataset(value, position);
      if (dataset && !datasets.has(dataset.name)) datasets.set(dataset.name, dataset);
    });
    const facts = factDatasets(datasets, model.relationships);
    list(model.metrics).forEach((value, metricIndex) => {
      const path = ['semantic_model', modelIndex, 'metrics', metricIndex];
      const metric = record(value);
      const name = nonBlank(metric?.name);
      if (!metric || !name) problems.push({ path: formatPath([...path, 'name']), message: 'a metric needs a name' });
      else found.push({ path, metric, name, model, datasets, facts });
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

  // A metric's inputs are the metrics of its own semantic model that its expression names (osi-inputs.ts).
  const metricsOf = new Map<JsonRecord, string[]>();
  for (const { model, name } of found) {
    const names = metricsOf.get(model);
    if (names) names.push(name);
    else metricsOf.set(model, [name]);
  }
  const namesOf = new Map<JsonRecord, MetricNames>();
  for (const [model, names] of metricsOf) namesOf.set(model, metricNames(names, datasetAndFieldNames(model)));

  const metrics: RegistryMetricInput[] = [];
  const size = new ImportedSize();
  for (const { path, metric, name, model, datasets, facts } of found) {
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
    const read = datasetsRead(sql, datasets, facts);
    const dimensions = dimensionsUpTo(read.map((dataset) => dataset.dimensions));
    const tooWide = (
      [
        ['datasets named', read.length, MAX_SOURCE_REFS],
        ['dimensions', dimensions.length, MAX_DIMENSIONS],
      ] as const
    ).filter(([, count, limit]) => count > limit);
    for (const [what, , limit] of tooWide)
      problems.push({ path: formatPath(path), message: `metric "${name}": ${tooMany(what, limit)}` });
    if (tooWide.length > 0) continue;
    const derived: RegistryMetricInput = {
      key: keyOfName.get(name) ?? name,
      name: readableName(name),
      ...importedMeaning(metric.description, context.instructions),
      project: options.project ?? nonBlank(model.name) ?? 'osi',
      owner_team: options.defaultOwnerTeam ?? DEFAULT_OWNER_TEAM,
      ...(options.defaultLifecycle ? { lifecycle_status: options.defaultLifecycle } : {}),
      sql_expression: sql,
      aliases: context.synonyms,
      ...(context.examples.length > 0 ? { consumer_contexts: { ai_examples: context.examples } } : {}),
      dimensions,
      source_refs: read.flatMap((dataset) =>
        dataset.source ? [{ table: dataset.source, dataset: dataset.name }] : [],
      ),
      expression: structuredClone(metric.expression),
    };
    const inputs = inputMetricNames(sql, namesOf.get(model) as MetricNames, name).map(
      (input) => keyOfName.get(input) ?? input,
    );
    if (inputs.length > 0) derived.inputs = inputs;
    if (!size.spend(derived)) {
      problems.push({ path: formatPath(path), message: `metric "${name}": ${ImportedSize.message}` });
      break;
    }
    metrics.push(applyGovernance(derived, governance, keyOfName));
  }
  if (problems.length > 0) throw new ImportError(problems);
  return { organization: options.organization, metrics };
}

/**
 * The source an import of this document applies as (docs/importers.md):
 * `osi:<name>`, the name of its first semantic model (else of the document);
 * `osi` when it names none.
 */
export function osiSourceName(document: unknown): string {
  const parsed = record(document);
  const model = record(list(parsed?.semantic_model)[0]);
  const name = nonBlank(model?.name) ?? nonBlank(parsed?.name);
  const project = name === undefined ? '' : keyFromName(name).slice(0, 100);
  return project === '' ? 'osi' : `osi:${project}`;
}
