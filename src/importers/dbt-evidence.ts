/**
 * Validation evidence from a dbt run (docs/registry.md, "Validation
 * evidence from dbt"): the test results of target/run_results.json tied,
 * through target/manifest.json, to the metrics that read the tested models.
 * A test counts for a metric when it is attached to a model behind one of
 * the semantic models the metric reads, its input metrics' included; tests
 * of models upstream of those, or of models no metric reads, count for
 * none. Pure: the caller matches metrics to the registry and records.
 */
import { timestamp } from '../fixtures/schema.js';
import { MAX_VALIDATION_DETAILS } from '../registry/limits.js';
import { RegistryError, type RegistryProblem } from '../registry/registry-error.js';
import { inputNames } from './dbt-metric.js';
import { isRecord, type JsonRecord, keyFromName, list, nonBlank, record, text } from './read.js';

/** How a test's result counts: skipped tests (and statuses a test does not have) are not counted. */
export type TestOutcome = 'passed' | 'warned' | 'failed' | 'errored';

const OUTCOMES: Readonly<Record<string, TestOutcome>> = {
  pass: 'passed',
  warn: 'warned',
  fail: 'failed',
  error: 'errored',
  'runtime error': 'errored',
};

export interface TestResult {
  uniqueId: string;
  name: string;
  outcome: TestOutcome;
  /** the models the test is attached to */
  models: string[];
  message?: string;
  failures?: number;
}

export interface MetricEvidence {
  /** the dbt metric's name */
  name: string;
  /** its registry key (dbt names are keys already) */
  key: string;
  /** null: no counted test is on its models, so there is no evidence */
  status: 'passed' | 'failed' | null;
  tests: Record<TestOutcome, number>;
  /** the models behind its semantic models (its inputs' included) */
  models: string[];
  details: string;
}

export interface DbtEvidence {
  /** the run's metadata.generated_at, else its latest test's completion (ISO 8601) */
  ranAt: string;
  invocationId?: string;
  metrics: MetricEvidence[];
  /** results of the run: tests counted for at least one metric, tests for none, skipped tests, other nodes */
  results: { counted: number; onNoMetric: number; skipped: number; notTests: number };
}

const RUN_RESULTS = 'dbt\'s target/run_results.json (an object with a "results" array)';
const MANIFEST =
  'dbt\'s target/manifest.json (an object with "nodes", "semantic_models" and "metrics" objects keyed by unique_id)';

/** A test's message in details: one line, bounded, so that one verbose test does not crowd the others out. */
const MAX_MESSAGE = 300;

const MODEL_TYPES = new Set(['model', 'snapshot', 'seed']);

/** The unique_ids of the models among `ids` (the nodes of the manifest that are models, snapshots or seeds). */
function modelsAmong(ids: readonly unknown[], nodes: JsonRecord): string[] {
  return ids.flatMap((id) =>
    typeof id === 'string' && MODEL_TYPES.has(text(record(nodes[id])?.resource_type) ?? '') ? [id] : [],
  );
}

const dependsOn = (node: JsonRecord | undefined): unknown[] => list(record(node?.depends_on)?.nodes);

/** Where a manifest's collection must be an object keyed by unique_id. */
function collection(manifest: JsonRecord, name: string, problems: RegistryProblem[], required: boolean): JsonRecord {
  const value = manifest[name];
  if (isRecord(value)) return value;
  if (value === undefined && !required) return {};
  problems.push({ path: ['manifest', name], message: `expected an object keyed by unique_id in ${MANIFEST}` });
  return {};
}

/** The models behind each semantic model, by unique_id: its depends_on nodes, else the model its node_relation names. */
function modelsOfSemanticModels(semanticModels: JsonRecord, nodes: JsonRecord): Map<string, string[]> {
  let byRelation: Map<string, string> | undefined;
  const relationKey = (database: unknown, schema: unknown, alias: unknown) =>
    [database, schema, alias].map((part) => (typeof part === 'string' ? part.toLowerCase() : '')).join('.');
  const result = new Map<string, string[]>();
  for (const [id, value] of Object.entries(semanticModels)) {
    const model = record(value);
    let models = modelsAmong(dependsOn(model), nodes);
    const relation = record(model?.node_relation);
    if (models.length === 0 && relation) {
      if (!byRelation) {
        byRelation = new Map();
        for (const [nodeId, node] of Object.entries(nodes)) {
          const n = record(node);
          if (!n || !MODEL_TYPES.has(text(n.resource_type) ?? '')) continue;
          const name = nonBlank(n.relation_name);
          if (name) byRelation.set(name.toLowerCase(), nodeId);
          byRelation.set(relationKey(n.database, n.schema, n.alias ?? n.name), nodeId);
        }
      }
      const found =
        byRelation.get(nonBlank(relation.relation_name)?.toLowerCase() ?? '\u0000') ??
        byRelation.get(relationKey(relation.database, relation.schema_name, relation.alias));
      if (found) models = [found];
    }
    result.set(id, models);
  }
  return result;
}

/**
 * The semantic models each metric reads, by its name, through its inputs
 * (depends_on, measures, metric_aggregation_params and input metrics, as
 * the importer resolves them); cycles end the walk, they do not loop it.
 */
function semanticModelsOfMetrics(metrics: JsonRecord, semanticModels: JsonRecord): Map<string, Set<string>> {
  const smByName = new Map<string, string>();
  const smByMeasure = new Map<string, string>();
  for (const [id, value] of Object.entries(semanticModels)) {
    const model = record(value);
    const name = nonBlank(model?.name);
    if (name) smByName.set(name, id);
    for (const measure of list(model?.measures)) {
      const measureName = nonBlank(record(measure)?.name);
      if (measureName && !smByMeasure.has(measureName)) smByMeasure.set(measureName, id);
    }
  }
  const byName = new Map<string, JsonRecord>();
  const byId = new Map<string, JsonRecord>();
  for (const [id, value] of Object.entries(metrics)) {
    const metric = record(value);
    const name = nonBlank(metric?.name);
    if (!metric || !name) continue;
    if (!byName.has(name)) byName.set(name, metric);
    byId.set(id, metric);
  }
  const measureNames = (params: JsonRecord): unknown[] => {
    const conversion = record(params.conversion_type_params);
    return [
      params.measure,
      ...list(params.input_measures),
      conversion?.base_measure,
      conversion?.conversion_measure,
    ].map((ref) => (typeof ref === 'string' ? ref : record(ref)?.name));
  };
  /** A metric's own semantic models and its input metrics. */
  const direct = (metric: JsonRecord): { models: string[]; inputs: JsonRecord[] } => {
    const params = record(metric.type_params) ?? {};
    const models: string[] = [];
    const inputs: JsonRecord[] = [];
    for (const node of dependsOn(metric)) {
      if (typeof node !== 'string') continue;
      if (semanticModels[node] !== undefined) models.push(node);
      const input = byId.get(node);
      if (input) inputs.push(input);
    }
    for (const measure of measureNames(params)) {
      const id = typeof measure === 'string' ? smByMeasure.get(measure) : undefined;
      if (id) models.push(id);
    }
    const aggregated = nonBlank(record(params.metric_aggregation_params)?.semantic_model);
    const aggregatedId = aggregated ? smByName.get(aggregated) : undefined;
    if (aggregatedId) models.push(aggregatedId);
    for (const name of inputNames(metric)) {
      const input = byName.get(name);
      if (input) inputs.push(input);
    }
    return { models, inputs };
  };
  const result = new Map<string, Set<string>>();
  for (const [name, root] of byName) {
    const models = new Set<string>();
    const seen = new Set<JsonRecord>([root]);
    const stack = [root];
    while (stack.length > 0) {
      const { models: own, inputs } = direct(stack.pop() as JsonRecord);
      for (const model of own) models.add(model);
      for (const input of inputs)
        if (!seen.has(input)) {
          seen.add(input);
          stack.push(input);
        }
    }
    result.set(name, models);
  }
  return result;
}

/** The models a test is on: its attached_node (dbt 1.5+), else the models it depends on. */
function testedModels(test: JsonRecord, nodes: JsonRecord): string[] {
  const attached = nonBlank(test.attached_node);
  if (attached) return modelsAmong([attached], nodes);
  return modelsAmong(dependsOn(test), nodes);
}

function ranAtOf(runResults: JsonRecord, results: JsonRecord[], problems: RegistryProblem[]): string {
  const generatedAt = record(runResults.metadata)?.generated_at;
  if (generatedAt !== undefined && generatedAt !== null) {
    const parsed = timestamp.safeParse(generatedAt);
    if (parsed.success) return parsed.data;
    problems.push({
      path: ['run_results', 'metadata', 'generated_at'],
      message: 'expected an ISO 8601 timestamp, e.g. 2026-01-31T09:00:00Z',
    });
    return '';
  }
  let latest = '';
  for (const result of results)
    for (const step of list(result.timing)) {
      const parsed = timestamp.safeParse(record(step)?.completed_at);
      if (parsed.success && parsed.data > latest) latest = parsed.data;
    }
  if (!latest)
    problems.push({
      path: ['run_results', 'metadata', 'generated_at'],
      message: "the run says when it ran neither here nor in its results' timing[].completed_at",
    });
  return latest;
}

function describe(test: TestResult): string {
  const message = test.message?.replace(/\s+/g, ' ').trim();
  const shortened = message && message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
  const failures = test.failures !== undefined && test.failures > 0 ? ` (${test.failures} failing rows)` : '';
  return `${test.name} on ${test.models.join(', ')}${failures}${shortened ? `: ${shortened}` : ''}`;
}

/** Lines joined up to MAX_VALIDATION_DETAILS characters; the lines left out are counted. */
function boundedLines(lines: readonly string[]): string {
  let out = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const tail = `\n... and ${lines.length - i} more`;
    if (out.length + line.length + 1 + tail.length > MAX_VALIDATION_DETAILS) return out + tail;
    out += out ? `\n${line}` : line;
  }
  return out;
}

function detailsOf(tests: readonly TestResult[], counts: Record<TestOutcome, number>, run: string): string {
  const total = tests.length;
  const lines = [
    `dbt ${run}: ${total} test${total === 1 ? '' : 's'} on the models behind this metric: ${counts.passed} passed, ${counts.warned} warned, ${counts.failed} failed, ${counts.errored} errored`,
  ];
  const named: [TestOutcome, string][] = [
    ['failed', 'failed'],
    ['errored', 'error'],
    ['warned', 'warning'],
  ];
  for (const [outcome, label] of named)
    for (const test of tests) if (test.outcome === outcome) lines.push(`${label}: ${describe(test)}`);
  return boundedLines(lines);
}

/**
 * The evidence of a run for each metric of the manifest. RegistryError
 * naming the place (`run_results.results[3].status`,
 * `manifest.semantic_models`) when the files are not what dbt writes.
 */
export function dbtEvidence(runResultsInput: unknown, manifestInput: unknown): DbtEvidence {
  const problems: RegistryProblem[] = [];
  const runResults = record(runResultsInput);
  const manifest = record(manifestInput);
  if (!runResults || !Array.isArray(runResults.results)) {
    const swapped = isRecord(runResults?.nodes) ? ' (this looks like manifest.json)' : '';
    problems.push({
      path: runResults ? ['run_results', 'results'] : ['run_results'],
      message: `expected ${RUN_RESULTS}${swapped}`,
    });
  }
  if (!manifest) {
    problems.push({ path: ['manifest'], message: `expected ${MANIFEST}` });
  } else if (Array.isArray(manifest.semantic_models)) {
    problems.push({
      path: ['manifest', 'semantic_models'],
      message: `this looks like target/semantic_manifest.json, which has no tests; expected ${MANIFEST}`,
    });
  }
  if (problems.length > 0) throw new RegistryError(problems);
  const run = runResults as JsonRecord;
  const nodes = collection(manifest as JsonRecord, 'nodes', problems, true);
  const semanticModels = collection(manifest as JsonRecord, 'semantic_models', problems, true);
  const metrics = collection(manifest as JsonRecord, 'metrics', problems, true);
  const unitTests = collection(manifest as JsonRecord, 'unit_tests', problems, false);

  const results: JsonRecord[] = [];
  (run.results as unknown[]).forEach((value, index) => {
    const result = record(value);
    if (!result) {
      problems.push({ path: ['run_results', 'results', index], message: 'expected an object' });
      return;
    }
    for (const field of ['unique_id', 'status'])
      if (typeof result[field] !== 'string')
        problems.push({ path: ['run_results', 'results', index, field], message: 'expected a string' });
    results.push(result);
  });
  const ranAt = ranAtOf(run, results, problems);
  if (problems.length > 0) throw new RegistryError(problems);

  const counts = { counted: 0, onNoMetric: 0, skipped: 0, notTests: 0 };
  const byModel = new Map<string, TestResult[]>();
  const tests: TestResult[] = [];
  for (const result of results) {
    const uniqueId = result.unique_id as string;
    const node = record(nodes[uniqueId]);
    const unitTest = node ? undefined : record(unitTests[uniqueId]);
    const test = text(node?.resource_type) === 'test' ? node : unitTest;
    if (!test) {
      counts.notTests++;
      continue;
    }
    const outcome = OUTCOMES[result.status as string];
    if (!outcome) {
      counts.skipped++;
      continue;
    }
    const models = test === unitTest ? modelsAmong(dependsOn(test), nodes) : testedModels(test, nodes);
    const failures = typeof result.failures === 'number' ? result.failures : undefined;
    const entry: TestResult = {
      uniqueId,
      name: nonBlank(test.name) ?? uniqueId,
      outcome,
      models,
      message: nonBlank(result.message),
      failures,
    };
    tests.push(entry);
    for (const model of models) {
      const onModel = byModel.get(model);
      if (onModel) onModel.push(entry);
      else byModel.set(model, [entry]);
    }
  }

  const modelsOf = modelsOfSemanticModels(semanticModels, nodes);
  const counted = new Set<TestResult>();
  const invocationId = nonBlank(record(run.metadata)?.invocation_id);
  const runName = invocationId ? `test run ${invocationId} at ${ranAt}` : `test run at ${ranAt}`;
  const evidence: MetricEvidence[] = [];
  for (const [name, semantic] of semanticModelsOfMetrics(metrics, semanticModels)) {
    const models = [...new Set([...semantic].flatMap((id) => modelsOf.get(id) ?? []))].sort();
    const onMetric = [...new Set(models.flatMap((model) => byModel.get(model) ?? []))];
    for (const test of onMetric) counted.add(test);
    const tally: Record<TestOutcome, number> = { passed: 0, warned: 0, failed: 0, errored: 0 };
    for (const test of onMetric) tally[test.outcome]++;
    const status = onMetric.length === 0 ? null : tally.failed + tally.errored > 0 ? 'failed' : 'passed';
    evidence.push({
      name,
      key: keyFromName(name),
      status,
      tests: tally,
      models,
      details: status === null ? '' : detailsOf(onMetric, tally, runName),
    });
  }
  counts.counted = counted.size;
  counts.onNoMetric = tests.length - counted.size;
  return {
    ranAt,
    invocationId,
    metrics: evidence,
    results: counts,
  };
}
