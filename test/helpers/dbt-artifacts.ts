/**
 * A generator of dbt artifact pairs (target/manifest.json v12 and
 * target/run_results.json v6) for the validation evidence tests: models,
 * semantic models reading them, metrics over those, and data tests with
 * their results. Valid against dbt's JSON Schemas (checked where
 * ../shared/fixtures/dbt/schemas is present); only the members dbt always
 * writes, or the importer reads, are filled in.
 */

export const PROJECT = 'shop';

export interface ModelSpec {
  name: string;
  /** models it selects from (upstream) */
  refs?: string[];
}

export interface SemanticModelSpec {
  name: string;
  model: string;
  measures: string[];
  /** name the model by node_relation only (no depends_on), as some manifests do */
  relationOnly?: boolean;
}

export type MetricSpec =
  | { name: string; type: 'simple'; measure: string }
  /** the newer spec: the metric names its semantic model itself */
  | { name: string; type: 'simple'; semanticModel: string }
  | { name: string; type: 'ratio'; numerator: string; denominator: string }
  | { name: string; type: 'derived'; inputs: string[] };

export type TestStatus = 'pass' | 'warn' | 'fail' | 'error' | 'skipped';

export interface TestSpec {
  name: string;
  /** the model it is attached to */
  model: string;
  status: TestStatus;
  /** other models it reads (a relationships test reads its parent) */
  alsoReads?: string[];
  /** leave out attached_node, as manifests before dbt 1.5 do */
  legacy?: boolean;
  message?: string;
  failures?: number;
}

export interface ProjectSpec {
  models: ModelSpec[];
  semanticModels: SemanticModelSpec[];
  metrics: MetricSpec[];
  tests: TestSpec[];
  /** the run's metadata.generated_at; absent: left out, the tests' timing says when */
  generatedAt?: string;
  /** models that ran too (dbt build): results that are no tests */
  modelResults?: boolean;
}

const modelId = (name: string) => `model.${PROJECT}.${name}`;
const testId = (name: string) => `test.${PROJECT}.${name}.${name.length.toString(16).padStart(10, '0')}`;
const semanticModelId = (name: string) => `semantic_model.${PROJECT}.${name}`;
const metricId = (name: string) => `metric.${PROJECT}.${name}`;

function base(resourceType: string, uniqueId: string, name: string, path: string) {
  return {
    name,
    resource_type: resourceType,
    package_name: PROJECT,
    path,
    original_file_path: `models/${path}`,
    unique_id: uniqueId,
    fqn: [PROJECT, name],
  };
}

function node(resourceType: string, uniqueId: string, name: string, dependsOn: string[]) {
  return {
    ...base(resourceType, uniqueId, name, `${name}.sql`),
    database: 'analytics',
    schema: 'marts',
    alias: name,
    checksum: { name: 'sha256', checksum: name.length.toString(16) },
    depends_on: { macros: [], nodes: dependsOn },
    relation_name: `"analytics"."marts"."${name}"`,
  };
}

/** The manifest of the project. */
export function manifestOf(spec: ProjectSpec): Record<string, unknown> {
  const nodes: Record<string, unknown> = {};
  for (const model of spec.models)
    nodes[modelId(model.name)] = node('model', modelId(model.name), model.name, (model.refs ?? []).map(modelId));
  for (const test of spec.tests) {
    const reads = [test.model, ...(test.alsoReads ?? [])].map(modelId);
    nodes[testId(test.name)] = {
      ...node('test', testId(test.name), test.name, reads),
      schema: 'marts_dbt_test__audit',
      column_name: 'id',
      test_metadata: { name: 'not_null', kwargs: { column_name: 'id' }, namespace: null },
      ...(test.legacy ? {} : { attached_node: modelId(test.model) }),
    };
  }
  const semanticModels: Record<string, unknown> = {};
  for (const sm of spec.semanticModels) {
    const id = semanticModelId(sm.name);
    semanticModels[id] = {
      ...base('semantic_model', id, sm.name, `${sm.name}.yml`),
      model: `ref('${sm.model}')`,
      node_relation: {
        alias: sm.model,
        schema_name: 'marts',
        database: 'analytics',
        relation_name: `"analytics"."marts"."${sm.model}"`,
      },
      depends_on: { macros: [], nodes: sm.relationOnly ? [] : [modelId(sm.model)] },
      measures: sm.measures.map((name) => ({ name, agg: 'sum', expr: name })),
    };
  }
  const measureModel = new Map(spec.semanticModels.flatMap((sm) => sm.measures.map((m) => [m, sm.name] as const)));
  const metrics: Record<string, unknown> = {};
  for (const metric of spec.metrics) {
    const id = metricId(metric.name);
    let typeParams: Record<string, unknown>;
    let dependsOn: string[];
    if (metric.type === 'simple' && 'measure' in metric) {
      typeParams = { measure: { name: metric.measure }, input_measures: [{ name: metric.measure }], metrics: [] };
      dependsOn = [semanticModelId(measureModel.get(metric.measure) ?? '')];
    } else if (metric.type === 'simple') {
      typeParams = {
        metric_aggregation_params: { semantic_model: metric.semanticModel, agg: 'sum' },
        expr: metric.name,
        metrics: [],
      };
      dependsOn = [semanticModelId(metric.semanticModel)];
    } else if (metric.type === 'ratio') {
      typeParams = { numerator: { name: metric.numerator }, denominator: { name: metric.denominator }, metrics: [] };
      dependsOn = [metricId(metric.numerator), metricId(metric.denominator)];
    } else {
      typeParams = { expr: metric.inputs.join(' + '), metrics: metric.inputs.map((name) => ({ name })) };
      dependsOn = metric.inputs.map(metricId);
    }
    metrics[id] = {
      ...base('metric', id, metric.name, 'metrics.yml'),
      description: `${metric.name} as the business counts it`,
      label: metric.name.replace(/_/g, ' '),
      type: metric.type,
      type_params: typeParams,
      depends_on: { macros: [], nodes: dependsOn },
    };
  }
  return {
    metadata: {
      dbt_schema_version: 'https://schemas.getdbt.com/dbt/manifest/v12.json',
      dbt_version: '1.10.0',
      generated_at: spec.generatedAt ?? '2026-03-01T06:00:00.000000Z',
      invocation_id: '5c1f0e3e-0000-4000-8000-000000000001',
      project_name: PROJECT,
    },
    nodes,
    sources: {},
    macros: {},
    docs: {},
    exposures: {},
    metrics,
    groups: {},
    selectors: {},
    disabled: {},
    parent_map: {},
    child_map: {},
    group_map: {},
    saved_queries: {},
    semantic_models: semanticModels,
    unit_tests: {},
  };
}

function result(uniqueId: string, status: string, at: string, message: string | null, failures: number | null) {
  return {
    status,
    timing: [
      { name: 'compile', started_at: at, completed_at: at },
      { name: 'execute', started_at: at, completed_at: at },
    ],
    thread_id: 'Thread-1',
    execution_time: 0.05,
    adapter_response: {},
    message,
    failures,
    unique_id: uniqueId,
    compiled: true,
    compiled_code: 'select 1',
    relation_name: null,
  };
}

/** The run_results of a `dbt test` (or `dbt build`, with modelResults) of the project. */
export function runResultsOf(spec: ProjectSpec): Record<string, unknown> {
  const at = (i: number) => new Date(Date.parse(spec.generatedAt ?? '2026-03-01T06:00:00Z') - 60_000 + i * 1000);
  const results = spec.tests.map((test, i) => {
    const failing = test.status === 'fail' || test.status === 'warn';
    const message =
      test.message ??
      (test.status === 'error'
        ? `Database Error in test ${test.name}: relation does not exist`
        : failing
          ? `Got ${test.failures ?? 3} results, configured to ${test.status} if != 0`
          : null);
    return result(
      testId(test.name),
      test.status,
      at(i).toISOString(),
      message,
      failing ? (test.failures ?? 3) : test.status === 'pass' ? 0 : null,
    );
  });
  if (spec.modelResults)
    results.push(
      ...spec.models.map((model, i) => result(modelId(model.name), 'success', at(i).toISOString(), 'SELECT 10', null)),
    );
  return {
    metadata: {
      dbt_schema_version: 'https://schemas.getdbt.com/dbt/run-results/v6.json',
      dbt_version: '1.10.0',
      ...(spec.generatedAt ? { generated_at: spec.generatedAt } : {}),
      invocation_id: '5c1f0e3e-0000-4000-8000-000000000002',
    },
    results,
    elapsed_time: spec.tests.length * 0.05,
    args: { which: 'test' },
  };
}

/**
 * A shop: orders and customers behind semantic models, stg_orders upstream
 * of orders, and an unrelated model; revenue and order_count on orders,
 * customer_count on customers, a ratio and a derived metric over them.
 */
export function shop(tests: TestSpec[], generatedAt = new Date(Date.now() - 60_000).toISOString()): ProjectSpec {
  return {
    models: [
      { name: 'stg_orders' },
      { name: 'orders', refs: ['stg_orders'] },
      { name: 'customers' },
      { name: 'marketing_spend' },
    ],
    semanticModels: [
      { name: 'orders_sm', model: 'orders', measures: ['revenue_total', 'order_total'] },
      { name: 'customers_sm', model: 'customers', measures: ['customer_total'] },
    ],
    metrics: [
      { name: 'revenue', type: 'simple', measure: 'revenue_total' },
      { name: 'order_count', type: 'simple', measure: 'order_total' },
      { name: 'customer_count', type: 'simple', semanticModel: 'customers_sm' },
      { name: 'revenue_per_customer', type: 'ratio', numerator: 'revenue', denominator: 'customer_count' },
      { name: 'revenue_and_orders', type: 'derived', inputs: ['revenue', 'order_count'] },
    ],
    tests,
    generatedAt,
  };
}
