/**
 * Validation evidence from a dbt run (issue 35, item 6): the tests on the
 * models behind a metric's semantic models count for it, its inputs' too;
 * tests upstream of those models or on models no metric reads count for
 * none; a failure or error fails the metric, a warning does not, a skipped
 * test is no evidence. The pairs are generated (test/helpers/dbt-artifacts.ts)
 * and checked against dbt's JSON Schemas where ../shared is present.
 */
import { existsSync, readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { type DbtEvidence, dbtEvidence } from '../../src/importers/dbt-evidence.js';
import { RegistryError } from '../../src/registry/registry-error.js';
import { manifestOf, type ProjectSpec, runResultsOf, shop, type TestSpec } from '../helpers/dbt-artifacts.js';

const schemas = new URL('../../../shared/fixtures/dbt/schemas/', import.meta.url);
const hasSchemas = existsSync(schemas);

const evidenceOf = (spec: ProjectSpec) => dbtEvidence(runResultsOf(spec), manifestOf(spec));
const metric = (evidence: DbtEvidence, name: string) => {
  const found = evidence.metrics.find((m) => m.name === name);
  if (!found) throw new Error(`no metric ${name}`);
  return found;
};
const statuses = (evidence: DbtEvidence) => Object.fromEntries(evidence.metrics.map((m) => [m.name, m.status]));

const EVERY_KIND: TestSpec[] = [
  { name: 'not_null_orders_id', model: 'orders', status: 'pass' },
  { name: 'unique_orders_id', model: 'orders', status: 'warn', failures: 2 },
  { name: 'not_null_customers_id', model: 'customers', status: 'fail', failures: 7 },
  { name: 'accepted_values_customers_tier', model: 'customers', status: 'error' },
  { name: 'not_null_stg_orders_id', model: 'stg_orders', status: 'fail' },
  { name: 'unique_marketing_spend_day', model: 'marketing_spend', status: 'error' },
  { name: 'not_null_orders_day', model: 'orders', status: 'skipped' },
];

describe.skipIf(!hasSchemas)("the generated pairs are valid against dbt's schemas", () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const read = (name: string) => JSON.parse(hasSchemas ? readFileSync(new URL(name, schemas), 'utf8') : '{}');
  const validateManifest = ajv.compile(read('manifest.v12.json'));
  const validateRunResults = ajv.compile(read('run-results.v6.json'));
  const specs: [string, ProjectSpec][] = [
    ['every kind of result', shop(EVERY_KIND)],
    ['legacy tests and a build', { ...shop(EVERY_KIND.map((t) => ({ ...t, legacy: true }))), modelResults: true }],
    ['no generated_at', { ...shop(EVERY_KIND), generatedAt: undefined }],
  ];
  it.each(specs)('%s', (_name, spec) => {
    expect(validateManifest(manifestOf(spec)), JSON.stringify(validateManifest.errors?.slice(0, 3))).toBe(true);
    expect(validateRunResults(runResultsOf(spec)), JSON.stringify(validateRunResults.errors?.slice(0, 3))).toBe(true);
  });
});

describe('tests count for the metrics whose semantic models read their model', () => {
  it('all passed is passed; a warning is no failure but is named', () => {
    const evidence = evidenceOf(
      shop([
        { name: 'not_null_orders_id', model: 'orders', status: 'pass' },
        { name: 'unique_orders_id', model: 'orders', status: 'warn', failures: 2 },
        { name: 'not_null_customers_id', model: 'customers', status: 'pass' },
      ]),
    );
    const revenue = metric(evidence, 'revenue');
    expect(revenue).toMatchObject({
      status: 'passed',
      tests: { passed: 1, warned: 1, failed: 0, errored: 0 },
      models: ['model.shop.orders'],
    });
    expect(revenue.details).toContain('warning: unique_orders_id on model.shop.orders (2 failing rows)');
    expect(revenue.details).not.toContain('not_null_customers_id');
    expect(metric(evidence, 'customer_count')).toMatchObject({ status: 'passed', tests: { passed: 1 } });
  });

  it('a failure or an error fails the metric, naming the tests; skipped tests and other models count for none', () => {
    const evidence = evidenceOf(shop(EVERY_KIND));
    expect(statuses(evidence)).toEqual({
      revenue: 'passed',
      order_count: 'passed',
      customer_count: 'failed',
      // a ratio and a derived metric take their inputs' models
      revenue_per_customer: 'failed',
      revenue_and_orders: 'passed',
    });
    const customers = metric(evidence, 'customer_count');
    expect(customers.tests).toEqual({ passed: 0, warned: 0, failed: 1, errored: 1 });
    expect(customers.details).toContain('failed: not_null_customers_id on model.shop.customers (7 failing rows)');
    expect(customers.details).toContain(
      'error: accepted_values_customers_tier on model.shop.customers: Database Error',
    );
    const ratio = metric(evidence, 'revenue_per_customer');
    expect(ratio.models).toEqual(['model.shop.customers', 'model.shop.orders']);
    expect(ratio.tests).toEqual({ passed: 1, warned: 1, failed: 1, errored: 1 });
    // upstream (stg_orders) and unrelated (marketing_spend) tests fail, and move nothing
    for (const m of evidence.metrics) expect(m.details).not.toMatch(/stg_orders|marketing_spend|not_null_orders_day/);
    expect(evidence.results).toEqual({ counted: 4, onNoMetric: 2, skipped: 1, notTests: 0 });
  });

  it('a metric whose models no test ran on has no evidence', () => {
    const evidence = evidenceOf(shop([{ name: 'not_null_customers_id', model: 'customers', status: 'pass' }]));
    expect(metric(evidence, 'revenue')).toMatchObject({ status: null, details: '' });
    expect(metric(evidence, 'revenue_and_orders').status).toBeNull();
    expect(metric(evidence, 'revenue_per_customer').status).toBe('passed');
  });

  it('ties legacy tests through depends_on and semantic models through node_relation', () => {
    const spec = shop([
      // a relationships test on orders reading customers: attached to orders only
      { name: 'relationships_orders_customer', model: 'orders', alsoReads: ['customers'], status: 'fail' },
    ]);
    expect(statuses(evidenceOf(spec))).toMatchObject({ revenue: 'failed', customer_count: null });
    const legacy = {
      ...spec,
      semanticModels: spec.semanticModels.map((sm) => ({ ...sm, relationOnly: true })),
      tests: spec.tests.map((test) => ({ ...test, legacy: true })),
    };
    // without attached_node, every model it reads is one it is on
    expect(statuses(evidenceOf(legacy))).toMatchObject({ revenue: 'failed', customer_count: 'failed' });
  });

  it("ran_at is the run's generated_at, else its results' latest completion; a build's model results are not tests", () => {
    const spec = shop([{ name: 'not_null_orders_id', model: 'orders', status: 'pass' }], '2026-03-01T06:00:00.123456Z');
    expect(evidenceOf(spec).ranAt).toBe('2026-03-01T06:00:00.123Z');
    const undated = { ...spec, generatedAt: undefined, modelResults: true };
    const evidence = evidenceOf(undated);
    // the tests finished at 05:59:00, the last of the models at 05:59:03
    expect(evidence.ranAt).toBe('2026-03-01T05:59:03.000Z');
    expect(evidence.results.notTests).toBe(4);
  });

  it('bounds the details of a metric with many failing tests', () => {
    const many = Array.from({ length: 200 }, (_, i) => ({
      name: `custom_check_${i}`,
      model: 'orders',
      status: 'fail' as const,
      message: 'x'.repeat(1000),
    }));
    const details = metric(evidenceOf(shop(many)), 'revenue').details;
    expect(details.length).toBeLessThanOrEqual(10_000);
    expect(details).toMatch(/\.\.\. and \d+ more$/);
  });
});

describe('files that are not what dbt writes are refused, naming the place', () => {
  const problems = (runResults: unknown, manifest: unknown) => {
    try {
      dbtEvidence(runResults, manifest);
    } catch (error) {
      if (error instanceof RegistryError) return error.lines();
      throw error;
    }
    throw new Error('accepted');
  };
  const spec = shop([{ name: 'not_null_orders_id', model: 'orders', status: 'pass' }]);

  it.each([
    ['not objects', 'x', [], ['run_results: expected', 'manifest: expected']],
    ['swapped', manifestOf(spec), runResultsOf(spec), ['run_results.results: expected', 'looks like manifest.json']],
    [
      'a semantic manifest',
      runResultsOf(spec),
      { semantic_models: [], metrics: [] },
      ['manifest.semantic_models: this looks like target/semantic_manifest.json'],
    ],
    [
      'a bad result',
      { ...runResultsOf(spec), results: [7, { unique_id: 3, status: 'pass' }] },
      manifestOf(spec),
      ['run_results.results[0]: expected an object', 'run_results.results[1].unique_id: expected a string'],
    ],
    [
      'a bad generated_at',
      { ...runResultsOf(spec), metadata: { generated_at: 'yesterday' } },
      manifestOf(spec),
      ['run_results.metadata.generated_at: expected an ISO 8601 timestamp'],
    ],
    [
      'no nodes',
      runResultsOf(spec),
      { ...manifestOf(spec), nodes: [] },
      ['manifest.nodes: expected an object keyed by unique_id'],
    ],
  ])('%s', (_name, runResults, manifest, expected) => {
    const lines = problems(runResults, manifest).join('\n');
    for (const line of expected) expect(lines).toContain(line);
  });
});
