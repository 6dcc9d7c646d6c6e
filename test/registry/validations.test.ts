/**
 * Validation evidence (issue 24, item 4): POST /api/validations records
 * results all or nothing, at most 1,000 a request, a result posted again
 * (same metric, ran_at and source) once; the contract's last_validated_at
 * and trust verdict follow at once: a released metric moves from
 * use_with_caution (stale_validation) to use, and to use_with_caution
 * (failed_validation) when its latest validation failed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, JSON_CONTENT_TYPE } from '../rest/expectations.js';
import { doc, docMetric, newTeamOrg, planOf, postValidations, putRegistry, type TeamOrg, uuidV5 } from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const prisma = () => t.database.prisma;
const DAY_MS = 24 * 60 * 60 * 1000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString();

/** An organization with released metrics `keys` applied from a document. */
async function withReleased(...keys: string[]): Promise<TeamOrg> {
  const org = await newTeamOrg(prisma());
  const metrics = keys.map((key) => docMetric(key, { lifecycle_status: 'RELEASED' }));
  planOf(await putRegistry(t, doc(org.slug, metrics), { token: org.token }));
  return org;
}

interface Result {
  metric_key: string;
  ran_at: string;
  status: 'passed' | 'failed' | string;
  details?: string;
  source?: string;
}

const post = (org: TeamOrg, results: Result[] | unknown) =>
  postValidations(t, Array.isArray(results) ? { results } : results, { token: org.token });

async function recorded(org: TeamOrg, results: Result[]) {
  const res = await post(org, results);
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
  return res.json();
}

async function contractOf(org: TeamOrg, key: string) {
  const res = await t.get(`/api/v1/metrics/${uuidV5(org.id, key)}/contract`, org.key);
  expect(res.statusCode, res.body).toBe(200);
  return { data: res.json().data, etag: String(res.headers.etag) };
}

const count = (org: TeamOrg) => prisma().validation.count({ where: { metric: { orgId: org.id } } });

const caution = (...reasons: string[]) => ({
  verdict: 'use_with_caution',
  reasons,
  preferred_metric_id: null,
  untrusted_inputs: [],
});
const use = { verdict: 'use', reasons: [], preferred_metric_id: null, untrusted_inputs: [] };

describe('the trust verdict follows the evidence at once', () => {
  it('never validated, then stale, then use', async () => {
    const org = await withReleased('nrr');
    const never = await contractOf(org, 'nrr');
    expect(never.data).toMatchObject({ last_validated_at: null, trust: caution('never_validated') });

    const old = daysAgo(40);
    expect(await recorded(org, [{ metric_key: 'nrr', ran_at: old, status: 'passed' }])).toEqual({
      data: { recorded: 1, duplicates: 0 },
    });
    const stale = await contractOf(org, 'nrr');
    expect(stale.data).toMatchObject({ last_validated_at: old, trust: caution('stale_validation') });
    expect(stale.etag).not.toBe(never.etag);

    const fresh = new Date().toISOString();
    await recorded(org, [{ metric_key: 'nrr', ran_at: fresh, status: 'passed', source: 'dbt test' }]);
    const now = await contractOf(org, 'nrr');
    expect(now.data).toMatchObject({ last_validated_at: fresh, trust: use });
    expect(now.etag).not.toBe(stale.etag);
  });

  it('a failed latest validation: use_with_caution (failed_validation), until a later one passes', async () => {
    const org = await withReleased('nrr');
    await recorded(org, [{ metric_key: 'nrr', ran_at: daysAgo(2), status: 'passed' }]);
    expect((await contractOf(org, 'nrr')).data.trust).toEqual(use);

    const failedAt = daysAgo(1);
    await recorded(org, [{ metric_key: 'nrr', ran_at: failedAt, status: 'failed', details: 'Off by 3%.' }]);
    const failed = await contractOf(org, 'nrr');
    expect(failed.data).toMatchObject({ last_validated_at: failedAt, trust: caution('failed_validation') });

    // An older pass posted late changes nothing: the latest run is the failure.
    await recorded(org, [{ metric_key: 'nrr', ran_at: daysAgo(3), status: 'passed' }]);
    expect((await contractOf(org, 'nrr')).data.trust).toEqual(caution('failed_validation'));

    const passedAt = new Date().toISOString();
    await recorded(org, [{ metric_key: 'nrr', ran_at: passedAt, status: 'passed' }]);
    expect((await contractOf(org, 'nrr')).data).toMatchObject({ last_validated_at: passedAt, trust: use });
  });

  it('a failure that is also stale gives both reasons, in the documented order', async () => {
    const org = await withReleased('nrr');
    await recorded(org, [{ metric_key: 'nrr', ran_at: daysAgo(45), status: 'failed' }]);
    expect((await contractOf(org, 'nrr')).data.trust).toEqual(caution('failed_validation', 'stale_validation'));
  });

  it('of two runs at the same latest time (two sources), a failure wins', async () => {
    const org = await withReleased('nrr');
    const at = daysAgo(1);
    await recorded(org, [
      { metric_key: 'nrr', ran_at: at, status: 'passed', source: 'dbt' },
      { metric_key: 'nrr', ran_at: at, status: 'failed', source: 'great_expectations' },
    ]);
    expect((await contractOf(org, 'nrr')).data.trust).toEqual(caution('failed_validation'));
  });

  it('a pass does not make a metric that is not released usable', async () => {
    const org = await newTeamOrg(prisma());
    planOf(await putRegistry(t, doc(org.slug, [docMetric('draft')]), { token: org.token }));
    await recorded(org, [{ metric_key: 'draft', ran_at: new Date().toISOString(), status: 'passed' }]);
    expect((await contractOf(org, 'draft')).data.trust).toEqual(caution('pre_release'));
  });

  it('evidence is a fact that accrues: an apply changing the metric keeps it', async () => {
    const org = await withReleased('nrr');
    const at = new Date().toISOString();
    await recorded(org, [{ metric_key: 'nrr', ran_at: at, status: 'passed' }]);
    const plan = planOf(
      await putRegistry(
        t,
        doc(org.slug, [docMetric('nrr', { lifecycle_status: 'RELEASED', description: 'Sharper.' })]),
        { token: org.token },
      ),
    );
    expect(plan.totals.updated).toBe(1);
    expect((await contractOf(org, 'nrr')).data).toMatchObject({ last_validated_at: at, trust: use });
  });

  it('recording evidence does not count as a change of the metric (its updated_at stays)', async () => {
    const org = await withReleased('nrr');
    const before = await prisma().metric.findFirstOrThrow({ where: { orgId: org.id, key: 'nrr' } });
    await recorded(org, [{ metric_key: 'nrr', ran_at: new Date().toISOString(), status: 'passed' }]);
    const after = await prisma().metric.findFirstOrThrow({ where: { orgId: org.id, key: 'nrr' } });
    expect(after.updatedAt).toEqual(before.updatedAt);
  });
});

describe('the same result is recorded once', () => {
  it('posted again: nothing new, and the first one stays as it was', async () => {
    const org = await withReleased('nrr');
    const result = { metric_key: 'nrr', ran_at: '2026-03-01T10:00:00Z', status: 'passed', source: 'dbt' };
    expect(await recorded(org, [result])).toEqual({ data: { recorded: 1, duplicates: 0 } });
    expect(await recorded(org, [result])).toEqual({ data: { recorded: 0, duplicates: 1 } });
    // The same identity with another status or details is the same result.
    expect(await recorded(org, [{ ...result, status: 'failed', details: 'changed my mind' }])).toEqual({
      data: { recorded: 0, duplicates: 1 },
    });
    // The same instant written with an offset is the same ran_at.
    expect(await recorded(org, [{ ...result, ran_at: '2026-03-01T12:00:00+02:00' }])).toEqual({
      data: { recorded: 0, duplicates: 1 },
    });
    const rows = await prisma().validation.findMany({ where: { metric: { orgId: org.id } } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'passed', source: 'dbt', details: '' });
    expect(rows[0]?.ranAt.toISOString()).toBe('2026-03-01T10:00:00.000Z');
  });

  it('twice in one request: recorded once', async () => {
    const org = await withReleased('nrr');
    const result = { metric_key: 'nrr', ran_at: '2026-03-01T10:00:00Z', status: 'passed' };
    expect(await recorded(org, [result, result])).toEqual({ data: { recorded: 1, duplicates: 1 } });
    expect(await count(org)).toBe(1);
  });

  it('another source or another ran_at is another result', async () => {
    const org = await withReleased('nrr');
    const result = { metric_key: 'nrr', ran_at: '2026-03-01T10:00:00Z', status: 'passed' };
    expect(
      await recorded(org, [
        result,
        { ...result, source: 'nightly' },
        { ...result, ran_at: '2026-03-01T10:00:00.001Z' },
      ]),
    ).toEqual({ data: { recorded: 3, duplicates: 0 } });
  });
});

describe('bounds', () => {
  it('1,000 results in one request are recorded', async () => {
    const org = await withReleased('a', 'b');
    const start = Date.parse('2026-01-01T00:00:00Z');
    const results = Array.from({ length: 1000 }, (_, i) => ({
      metric_key: i % 2 ? 'a' : 'b',
      ran_at: new Date(start + i * 60_000).toISOString(),
      status: i % 7 ? 'passed' : 'failed',
      source: 'ci',
    }));
    expect(await recorded(org, results)).toEqual({ data: { recorded: 1000, duplicates: 0 } });
    expect(await count(org)).toBe(1000);
  });

  it('1,001 results: 400, nothing written', async () => {
    const org = await withReleased('a');
    const results = Array.from({ length: 1001 }, (_, i) => ({
      metric_key: 'a',
      ran_at: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString(),
      status: 'passed',
    }));
    const res = await post(org, results);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/^line 1, column \d+: results: more than 1000 entries$/);
    expect(await count(org)).toBe(0);
  });

  it('1,000 results with a paragraph of details each fit in one request', async () => {
    const org = await withReleased('a');
    const details = 'Row count matched the warehouse within tolerance; '.repeat(30);
    const results = Array.from({ length: 1000 }, (_, i) => ({
      metric_key: 'a',
      ran_at: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString(),
      status: 'passed',
      details,
    }));
    expect(JSON.stringify({ results }).length).toBeGreaterThan(1024 * 1024);
    expect(await recorded(org, results)).toEqual({ data: { recorded: 1000, duplicates: 0 } });
  });
});

describe('bad input: 400 naming the place, nothing written', () => {
  it('an unknown metric key among known ones', async () => {
    const org = await withReleased('known');
    const res = await post(org, [
      { metric_key: 'known', ran_at: '2026-03-01T00:00:00Z', status: 'passed' },
      { metric_key: 'unknown', ran_at: '2026-03-01T00:00:00Z', status: 'passed' },
    ]);
    expectError(res, 400, { error: 'results[1].metric_key: no metric with key "unknown" in this organization' });
    expect(await count(org)).toBe(0);
  });

  it('several unknown keys: each in details', async () => {
    const org = await withReleased('known');
    const res = await post(org, [
      { metric_key: 'ghost_one', ran_at: '2026-03-01T00:00:00Z', status: 'passed' },
      { metric_key: 'known', ran_at: '2026-03-01T00:00:00Z', status: 'passed' },
      { metric_key: 'ghost_two', ran_at: '2026-03-01T00:00:00Z', status: 'passed' },
    ]);
    const first = 'results[0].metric_key: no metric with key "ghost_one" in this organization';
    expectError(res, 400, {
      error: first,
      details: [first, 'results[2].metric_key: no metric with key "ghost_two" in this organization'],
    });
    expect(await count(org)).toBe(0);
  });

  it.each([
    [
      'a status that is neither passed nor failed',
      { metric_key: 'm', ran_at: '2026-03-01T00:00:00Z', status: 'ok' },
      'results[0].status: Invalid option: expected one of "passed"|"failed"',
    ],
    [
      'a ran_at that is not a timestamp',
      { metric_key: 'm', ran_at: 'yesterday', status: 'passed' },
      'results[0].ran_at: expected an ISO 8601 timestamp, e.g. 2026-01-31T09:00:00Z',
    ],
    [
      'an unknown field',
      { metric_key: 'm', ran_at: '2026-03-01T00:00:00Z', status: 'passed', passed: true },
      'results[0].passed: unknown field "passed"',
    ],
    [
      'details past 10,000 characters',
      { metric_key: 'm', ran_at: '2026-03-01T00:00:00Z', status: 'passed', details: 'x'.repeat(10_001) },
      'results[0].details: at most 10000 characters',
    ],
  ])('%s', async (_name, result, error) => {
    const org = await withReleased('m');
    expectError(await post(org, [result]), 400, { error });
    expect(await count(org)).toBe(0);
  });

  // JSON's \u0000 escape puts a NUL in the text, which PostgreSQL cannot store.
  it('a NUL in details (a JSON \\u0000 escape): 400 naming the field, never a 500', async () => {
    const org = await withReleased('m');
    const res = await post(org, [
      { metric_key: 'm', ran_at: '2026-03-01T00:00:00Z', status: 'failed', details: 'row\u0000count' },
    ]);
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 400,
      body: { error: expect.stringContaining('results[0].details') },
    });
    expect(await count(org)).toBe(0);
  });

  it('a missing metric_key is named', async () => {
    const org = await withReleased('m');
    const res = await post(org, [{ ran_at: '2026-03-01T00:00:00Z', status: 'passed' }]);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/^results\[0\]\.metric_key: /);
  });

  it.each([
    ['no results', { results: [] }, 'results: at least one result'],
    ['results not a list', { results: {} }, /^results: /],
    ['a body that is a list', [], /^\(document\)|^Invalid input/],
    ['not JSON', '{"results": [', /^not valid JSON: /],
  ])('%s', async (_name, body, error) => {
    const org = await withReleased('m');
    const res = await postValidations(t, body, { token: org.token });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toEqual({ error: typeof error === 'string' ? error : expect.stringMatching(error) });
    expect(await count(org)).toBe(0);
  });
});
