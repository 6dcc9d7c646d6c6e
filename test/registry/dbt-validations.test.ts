/**
 * dbt test results as validation evidence (issue 35, item 6) over HTTP
 * (POST /api/validations/dbt) and the CLI (validation:import): the verdicts
 * of the metrics whose models were tested move, their dependents' through
 * their inputs too; tests upstream or elsewhere move nothing; the same run
 * imported again records nothing; bad files are refused naming the place
 * (HTTP 400, CLI exit 2) and a body past the limit is refused unread.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli-commands.js';
import { DBT_EVIDENCE_BODY_LIMIT } from '../../src/registry/limits.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { manifestOf, type ProjectSpec, runResultsOf, shop, type TestSpec } from '../helpers/dbt-artifacts.js';
import {
  doc,
  docMetric,
  HOST,
  newTeamOrg,
  planOf,
  postValidations,
  putRegistry,
  type TeamOrg,
  uuidV5,
} from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const prisma = () => t.database.prisma;

/**
 * The registry beside the shop (test/helpers/dbt-artifacts.ts): its dbt
 * metrics with their inputs, and customer_share, built on customer_count,
 * which dbt does not define. The manifest's gross_margin is not in it.
 */
async function shopRegistry(): Promise<TeamOrg> {
  const org = await newTeamOrg(prisma(), 'dbt-evidence');
  const released = (key: string, inputs: string[] = []) => docMetric(key, { lifecycle_status: 'RELEASED', inputs });
  const metrics = [
    released('revenue'),
    released('order_count'),
    released('customer_count'),
    released('revenue_per_customer', ['revenue', 'customer_count']),
    released('revenue_and_orders', ['revenue', 'order_count']),
    released('customer_share', ['customer_count']),
  ];
  planOf(await putRegistry(t, doc(org.slug, metrics), { token: org.token }));
  const res = await postValidations(
    t,
    { results: [{ metric_key: 'customer_share', ran_at: new Date().toISOString(), status: 'passed', source: 'ci' }] },
    { token: org.token },
  );
  expect(res.statusCode, res.body).toBe(200);
  return org;
}

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

/** The shop with gross_margin, a metric of the manifest the registry lacks. */
function project(tests: TestSpec[], generatedAt: string): ProjectSpec {
  const spec = shop(tests, generatedAt);
  spec.semanticModels[0]?.measures.push('margin_total');
  spec.metrics.push({ name: 'gross_margin', type: 'simple', measure: 'margin_total' });
  return spec;
}

const postDbt = (org: TeamOrg, body: unknown, headers: Record<string, string> = {}) =>
  t.inject({
    method: 'POST',
    url: '/api/validations/dbt',
    headers: { host: HOST, authorization: `Bearer ${org.token}`, 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });

async function imported(org: TeamOrg, spec: ProjectSpec) {
  const res = await postDbt(org, { run_results: runResultsOf(spec), manifest: manifestOf(spec) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data;
}

async function trustOf(org: TeamOrg, key: string) {
  const res = await t.get(`/api/v1/metrics/${uuidV5(org.id, key)}/contract`, org.key);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.trust;
}

const verdicts = async (org: TeamOrg, keys: string[]) =>
  Object.fromEntries(
    await Promise.all(keys.map(async (key) => [key, (await trustOf(org, key)).verdict as string] as const)),
  );

const KEYS = [
  'revenue',
  'order_count',
  'customer_count',
  'revenue_per_customer',
  'revenue_and_orders',
  'customer_share',
];

const ALL_PASS: TestSpec[] = [
  { name: 'not_null_orders_id', model: 'orders', status: 'pass' },
  { name: 'not_null_customers_id', model: 'customers', status: 'pass' },
];

describe('a dbt run moves the verdicts of the metrics reading the tested models', () => {
  it('passes, then failures and errors behind customers, then passes again', async () => {
    const org = await shopRegistry();
    expect((await trustOf(org, 'revenue')).reasons).toEqual(['never_validated']);

    const first = await imported(org, project(ALL_PASS, minutesAgo(30)));
    expect(first).toMatchObject({ source: 'dbt', recorded: 5, duplicates: 0, unmatched: ['gross_margin'] });
    const summary = Object.fromEntries(
      first.metrics.map((m: { key: string; status: string; outcome: string }) => [m.key, [m.status, m.outcome]]),
    );
    expect(summary).toEqual({
      revenue: ['passed', 'recorded'],
      order_count: ['passed', 'recorded'],
      customer_count: ['passed', 'recorded'],
      revenue_per_customer: ['passed', 'recorded'],
      revenue_and_orders: ['passed', 'recorded'],
      gross_margin: ['passed', 'unmatched'],
    });
    expect(await verdicts(org, KEYS)).toEqual(Object.fromEntries(KEYS.map((key) => [key, 'use'])));

    const ranAt = minutesAgo(10);
    const failing = project(
      [
        { name: 'not_null_orders_id', model: 'orders', status: 'pass' },
        { name: 'unique_orders_id', model: 'orders', status: 'warn' },
        { name: 'not_null_customers_id', model: 'customers', status: 'fail', failures: 4 },
        { name: 'accepted_values_customers_tier', model: 'customers', status: 'error' },
        { name: 'not_null_stg_orders_id', model: 'stg_orders', status: 'fail' },
        { name: 'unique_marketing_spend_day', model: 'marketing_spend', status: 'error' },
      ],
      ranAt,
    );
    const second = await imported(org, failing);
    expect(second.results).toEqual({ counted: 4, onNoMetric: 2, skipped: 0, notTests: 0 });
    expect(await verdicts(org, KEYS)).toEqual({
      revenue: 'use',
      order_count: 'use',
      customer_count: 'use_with_caution',
      revenue_per_customer: 'use_with_caution',
      revenue_and_orders: 'use',
      customer_share: 'use_with_caution',
    });
    expect((await trustOf(org, 'customer_count')).reasons).toEqual(['failed_validation']);
    expect((await trustOf(org, 'revenue_per_customer')).reasons).toContain('failed_validation');
    // customer_share has no dbt evidence of its own: its input's failure carries over
    const share = await trustOf(org, 'customer_share');
    expect(share.reasons).toEqual(['untrusted_input']);
    expect(share.untrusted_inputs.map((input: { key: string }) => input.key)).toEqual(['customer_count']);

    const stored = await prisma().validation.findFirstOrThrow({
      where: { metricId: uuidV5(org.id, 'customer_count') },
      orderBy: { ranAt: 'desc' },
    });
    expect(stored).toMatchObject({ status: 'failed', source: 'dbt', ranAt: new Date(ranAt) });
    expect(stored.details).toContain('failed: not_null_customers_id on model.shop.customers (4 failing rows)');
    expect(stored.details).toContain('error: accepted_values_customers_tier');
    const revenue = await prisma().validation.findFirstOrThrow({
      where: { metricId: uuidV5(org.id, 'revenue') },
      orderBy: { ranAt: 'desc' },
    });
    expect(revenue.status).toBe('passed');
    expect(revenue.details).toContain('warning: unique_orders_id');
    expect(revenue.details).not.toMatch(/stg_orders|marketing_spend/);

    // The same run again records nothing.
    const again = await imported(org, failing);
    expect(again).toMatchObject({ recorded: 0, duplicates: 5 });
    expect(new Set(again.metrics.map((m: { outcome: string }) => m.outcome))).toEqual(
      new Set(['duplicate', 'unmatched']),
    );

    await imported(org, project(ALL_PASS, minutesAgo(1)));
    expect(await verdicts(org, KEYS)).toEqual(Object.fromEntries(KEYS.map((key) => [key, 'use'])));
  });

  it('tests on models no metric reads, or only skipped, record nothing', async () => {
    const org = await shopRegistry();
    const before = await prisma().validation.count({ where: { metric: { orgId: org.id } } });
    const data = await imported(
      org,
      project(
        [
          { name: 'not_null_stg_orders_id', model: 'stg_orders', status: 'fail' },
          { name: 'unique_marketing_spend_day', model: 'marketing_spend', status: 'error' },
          { name: 'not_null_orders_id', model: 'orders', status: 'skipped' },
        ],
        minutesAgo(5),
      ),
    );
    expect(data).toMatchObject({ recorded: 0, duplicates: 0, unmatched: [] });
    expect(data.results).toEqual({ counted: 0, onNoMetric: 2, skipped: 1, notTests: 0 });
    expect(new Set(data.metrics.map((m: { outcome: string }) => m.outcome))).toEqual(new Set(['no_tests']));
    expect(await prisma().validation.count({ where: { metric: { orgId: org.id } } })).toBe(before);
    expect((await trustOf(org, 'revenue')).reasons).toEqual(['never_validated']);
  });
});

describe('bad bodies are refused naming the place, never a 500', () => {
  let org: TeamOrg;
  beforeAll(async () => {
    org = await newTeamOrg(prisma(), 'dbt-bad');
  });
  const spec = shop(ALL_PASS);

  it.each([
    ['not JSON', '{"run_results": ', 'not valid JSON'],
    ['an array', [], 'expected { "run_results"'],
    ['an unknown member', { run_results: {}, manifest: {}, extra: 1 }, '"extra": not a member of the body'],
    ['no run_results', { manifest: manifestOf(spec) }, 'run_results: expected'],
    [
      'a result without a status',
      { run_results: { results: [{ unique_id: 'test.shop.x' }] }, manifest: manifestOf(spec) },
      'run_results.results[0].status: expected a string',
    ],
    [
      'a semantic manifest',
      { run_results: runResultsOf(spec), manifest: { semantic_models: [], metrics: [] } },
      'manifest.semantic_models: this looks like target/semantic_manifest.json',
    ],
    [
      'a run in the future',
      { run_results: runResultsOf(shop(ALL_PASS, '2200-01-01T00:00:00Z')), manifest: manifestOf(spec) },
      'run_results.metadata.generated_at: must not be more than 5 minutes in the future',
    ],
    ['nested past the limit', `{"run_results":${'['.repeat(100)}${']'.repeat(100)},"manifest":{}}`, 'nested'],
  ])('%s', async (_name, body, expected) => {
    if (_name === 'a run in the future') {
      // only a metric the registry has reaches the recording, where the time is checked
      planOf(await putRegistry(t, doc(org.slug, [docMetric('revenue')]), { token: org.token }));
    }
    const res = await postDbt(org, body);
    expect(res.statusCode, res.body).toBe(400);
    expect(String(res.json().error)).toContain(expected);
  });

  it('takes JSON only, and a service token with validations:write or an admin', async () => {
    const body = { run_results: runResultsOf(spec), manifest: manifestOf(spec) };
    expect((await postDbt(org, body, { 'content-type': 'application/yaml' })).statusCode).toBe(415);
    expect((await postDbt(org, body, { authorization: `Bearer ${org.key}` })).statusCode).toBe(401);
  });

  it(`refuses a body past ${DBT_EVIDENCE_BODY_LIMIT / 2 ** 20} MiB over a socket, unread`, async () => {
    const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const padding = 'x'.repeat(50 * 1024 * 1024);
    const res = await fetch(`${base}/api/validations/dbt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.token}`, 'content-type': 'application/json' },
      body: `{"run_results":{},"manifest":{"padding":"${padding}"}}`,
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toHaveProperty('error');
  });
});

describe('validation:import on the CLI', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'dbt-evidence-'));
  const write = (name: string, value: unknown) => {
    const path = join(scratch, name);
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
    return path;
  };
  async function run(argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, { prisma: prisma(), out: (l) => out.push(l), err: (l) => err.push(l) });
    return { code, text: [...out, ...err].join('\n') };
  }

  it('records the run and prints each metric, the unmatched ones and how results counted', async () => {
    const org = await shopRegistry();
    const spec = project(
      [...ALL_PASS, { name: 'unique_customers_id', model: 'customers', status: 'fail' }],
      minutesAgo(3),
    );
    const argv = [
      'validation:import',
      '--from',
      'dbt',
      '--org',
      org.slug,
      '--run-results',
      write('run_results.json', runResultsOf(spec)),
      '--manifest',
      write('manifest.json', manifestOf(spec)),
    ];
    const { code, text } = await run(argv);
    expect(code, text).toBe(0);
    expect(text).toContain('5 recorded, 0 already recorded');
    expect(text).toMatch(/customer_count\s+failed\s+1\s+0\s+1\s+0\s+recorded/);
    expect(text).toMatch(/revenue\s+passed\s+1\s+0\s+0\s+0\s+recorded/);
    expect(text).toContain('Not in the registry (skipped): gross_margin');
    expect((await trustOf(org, 'customer_count')).reasons).toEqual(['failed_validation']);
    const again = await run(argv);
    expect(again.code, again.text).toBe(0);
    expect(again.text).toContain('0 recorded, 5 already recorded');
  });

  it('exits 2 on files that are not dbt run results and a manifest, naming the problem', async () => {
    const org = await newTeamOrg(prisma(), 'dbt-cli-bad');
    const spec = shop(ALL_PASS);
    const good = write('good-run.json', runResultsOf(spec));
    const manifest = write('good-manifest.json', manifestOf(spec));
    const cases: [string[], string][] = [
      [['--run-results', join(scratch, 'missing.json'), '--manifest', manifest], '--run-results'],
      [['--run-results', write('broken.json', '{"results": ['), '--manifest', manifest], 'not valid JSON'],
      [['--run-results', manifest, '--manifest', good], 'run_results.results: expected'],
      [
        [
          '--run-results',
          write('bad-result.json', { results: [{ unique_id: 7, status: 'pass' }] }),
          '--manifest',
          manifest,
        ],
        'run_results.results[0].unique_id: expected a string',
      ],
    ];
    for (const [files, expected] of cases) {
      const { code, text } = await run(['validation:import', '--from', 'dbt', '--org', org.slug, ...files]);
      expect(code, text).toBe(2);
      expect(text).toContain(expected);
    }
    const osi = await run([
      'validation:import',
      '--from',
      'osi',
      '--org',
      org.slug,
      '--run-results',
      good,
      '--manifest',
      manifest,
    ]);
    expect(osi.code).toBe(2);
    expect(osi.text).toContain('--from must be dbt');
  });
});
