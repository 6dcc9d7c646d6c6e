/**
 * /graphql spends the key's per-minute budget by what an operation asks
 * (src/graphql-cost.ts): one unit per root field per started 100 metrics,
 * charged before execution; a request the budget cannot pay is a real 429
 * that keeps only its admission unit. REST routes still cost exactly 1. And
 * an operation asks for at most one discussionSummary.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ slug: 'cost', plan: 'enterprise' });
const ten = org.key({ rate_limit_per_minute: 10 });
const thirty = org.key({ rate_limit_per_minute: 30 });
const counting = org.key({ rate_limit_per_minute: 100 });
const rest = org.key({ rate_limit_per_minute: 100, scopes: ['metrics:read', 'canonical-metric-api:read'] });
const summaries = org.key({ rate_limit_per_minute: 100 });
const lineageKey = org.key({ rate_limit_per_minute: 1000 });
const lineageLimited = org.key({ rate_limit_per_minute: 30 });
const metric = org.metric({ name: 'Revenue' });
org.message(org.thread(metric, { intent: 'objection' }), { body: 'This double counts refunds.' });
const restMetric = org.metric({ name: 'Churn' });
org.message(org.thread(restMetric, { intent: 'proposal' }), { body: 'Count paused accounts too.' });
for (let i = 0; i < 4; i++) org.metric({ name: `Metric ${i}` });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build() });
});
afterAll(() => t.close());

function graphql(secret: string, query: string, variables?: Record<string, unknown>) {
  return t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    payload: { query, variables },
  });
}

const aliases = (n: number, field: string) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`;
const bigRead = aliases(20, 'metrics(pageSize: 100) { items { name agentContextNotes { body } } }');

/** The units one request spends: RateLimit-Remaining before minus after, read on a small request. */
async function spentBy(secret: string, query: string, variables?: Record<string, unknown>) {
  const before = Number((await graphql(secret, '{ __typename }')).headers['ratelimit-remaining']);
  const res = await graphql(secret, query, variables);
  expect(res.statusCode).toBe(200);
  expect(res.json().errors).toBeUndefined();
  return before - Number(res.headers['ratelimit-remaining']);
}

describe('GraphQL request cost', () => {
  it('20 aliases of metrics(pageSize: 100) cost 20: over a limit of 10 it is a 429 that spends 1, a small one passes', async () => {
    const res = await graphql(ten.secret, bigRead);
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'Rate limit exceeded' });
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(res.headers['ratelimit-limit']).toBe('10');
    // Only the admission unit was spent: 9 left for smaller requests.
    expect(res.headers['ratelimit-remaining']).toBe('9');

    const small = await graphql(ten.secret, '{ metrics(pageSize: 100) { items { name } } }');
    expect(small.statusCode).toBe(200);
    expect(small.json().data.metrics.items).toHaveLength(6);
    expect(small.headers['ratelimit-remaining']).toBe('8');
  });

  it('spends 20 of a limit of 30 on the same request, and the data is there', async () => {
    const res = await graphql(thirty.secret, bigRead);
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.json().data)).toHaveLength(20);
    expect(res.headers['ratelimit-remaining']).toBe('10');
    // 10 left: a second one is refused.
    expect((await graphql(thirty.secret, bigRead)).statusCode).toBe(429);
  });

  it('counts root fields per started 100 metrics, with variables, fragments and @skip', async () => {
    expect(await spentBy(counting.secret, '{ metrics(pageSize: 100) { items { name } } }')).toBe(1);
    expect(await spentBy(counting.secret, `{ metric(id: "${metric.id}") { name } }`)).toBe(1);
    expect(await spentBy(counting.secret, '{ __schema { queryType { name } } __typename }')).toBe(1);
    expect(
      await spentBy(counting.secret, aliases(3, 'metricsConnection(first: 100) { edges { node { name } } }')),
    ).toBe(3);
    expect(
      await spentBy(
        counting.secret,
        'query ($n: Int, $skip: Boolean!) { a: metrics(pageSize: $n) { items { name } } b: metrics @skip(if: $skip) { items { name } } ...F } fragment F on Query { c: metric(id: "00000000-0000-4000-8000-000000000000") { name } }',
        { n: 100, skip: true },
      ),
    ).toBe(2);
    // Fields merged under one response name run once and cost once.
    expect(await spentBy(counting.secret, '{ metrics { items { name } } metrics { items { key } } }')).toBe(1);
  });

  it('keeps the REST routes at exactly 1 per request', async () => {
    const remaining: number[] = [];
    for (const url of [
      '/api/v1/metrics?pageSize=100',
      `/api/v1/metrics/${restMetric.id}`,
      `/api/v1/metrics/${restMetric.id}/contract?summary=true`,
    ]) {
      const res = await t.get(url, rest.secret);
      expect(res.statusCode).toBe(200);
      remaining.push(Number(res.headers['ratelimit-remaining']));
    }
    expect(remaining).toEqual([99, 98, 97]);
  });

  it('still checks authentication before the budget, and a key past its budget is 429 before its document is read', async () => {
    expect((await graphql('cl_0000000000000000000000000000000000000000', bigRead)).statusCode).toBe(401);
    // `ten` has 8 units left: spend them, then even a malformed document is a 429.
    for (let i = 0; i < 8; i++) expect((await graphql(ten.secret, '{ __typename }')).statusCode).toBe(200);
    const res = await graphql(ten.secret, '{ metrics(');
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'Rate limit exceeded' });
  });
});

describe('lineage and dependents', () => {
  const lineageAliases = aliases(20, `metric(id: "${metric.id}") { lineage(depth: 10) { total } }`);

  it('20 aliases of a lineage cost 40: each walk one unit beside its metric; over a limit of 30 it is a 429', async () => {
    expect(await spentBy(lineageKey.secret, lineageAliases)).toBe(40);
    const refused = await graphql(lineageLimited.secret, lineageAliases);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['ratelimit-remaining']).toBe('29');
    // Twice in one metric, through a fragment: two walks.
    expect(
      await spentBy(
        lineageKey.secret,
        `{ metric(id: "${metric.id}") { a: lineage { total } ...L } } fragment L on Metric { b: lineage(direction: downstream) { total } }`,
      ),
    ).toBe(3);
  });

  it('dependents cost per started 100 metrics for all their parents together', async () => {
    const id = metric.id;
    expect(
      await spentBy(lineageKey.secret, `{ metric(id: "${id}") { dependents(first: 100) { edges { cursor } } } }`),
    ).toBe(2);
    // 100 items with up to 100 dependents each: 10,000 metrics, 100 units besides the page.
    expect(
      await spentBy(
        lineageKey.secret,
        '{ metrics(pageSize: 100) { items { dependents(first: 100) { edges { node { id } } } } } }',
      ),
    ).toBe(101);
    // Nested: 10, then 10 x 10 below them.
    expect(
      await spentBy(
        lineageKey.secret,
        `{ metric(id: "${id}") { dependents(first: 10) { edges { node { dependents(first: 10) { edges { cursor } } } } } } }`,
      ),
    ).toBe(3);
    // inputs and dependentsCount are parts of the metric's own read: nothing more.
    expect(
      await spentBy(lineageKey.secret, '{ metrics(pageSize: 100) { items { inputs { key } dependentsCount } } }'),
    ).toBe(1);
  });
});

describe('discussionSummary per operation', () => {
  it('refuses 20 aliases of discussionSummary before any generation', async () => {
    const res = await graphql(
      summaries.secret,
      `{ metric(id: "${metric.id}") { ${Array.from({ length: 20 }, (_, i) => `s${i}: discussionSummary { text }`).join(' ')} } }`,
    );
    const body = res.json();
    expect(body.data).toBeUndefined();
    expect(body.errors[0].message).toMatch(/^At most one discussionSummary per operation/);
    const across = await graphql(
      summaries.secret,
      aliases(2, `metric(id: "${metric.id}") { discussionSummary { text } }`),
    );
    expect(across.json().errors[0].message).toMatch(/^At most one discussionSummary per operation/);
    expect(await t.database.prisma.discussionSummary.count({ where: { metricId: metric.id } })).toBe(0);
    expect(await t.database.prisma.meterEvent.count({ where: { metricId: metric.id } })).toBe(0);
  });

  it('answers one discussionSummary, also spread twice through one fragment', async () => {
    const res = await graphql(
      summaries.secret,
      `{ metric(id: "${metric.id}") { ...S ...S } } fragment S on Metric { discussionSummary { text charged } }`,
    );
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.errors).toBeUndefined();
    expect(body.data.metric.discussionSummary.text).toEqual(expect.any(String));
    expect(body.data.metric.discussionSummary.charged).toBe(true);
    expect(await t.database.prisma.meterEvent.count({ where: { metricId: metric.id } })).toBe(1);
  });
});
