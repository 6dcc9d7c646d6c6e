/**
 * /graphql (service interface): the organization boundary, batching of
 * counts and notes, Relay pages, authentication by key or session, the
 * document limits, introspection and GraphiQL.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byNameThenId, type MetricJson, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { statementCount } from '../rest/expectations.js';

const r = registry();
const acme = r.org();
const sessionUser = acme.user({ role: 'member', session_token: true });
const acmeMetrics: MetricJson[] = [];
const expectedCounts = new Map<string, { threads: number; notes: number }>();
for (let i = 0; i < 100; i++) {
  const metric = acme.metric({ name: `Metric ${String(99 - i).padStart(3, '0')}` });
  const threads = i % 3;
  let notes = 0;
  for (let j = 0; j < threads; j++) {
    const thread = acme.thread(metric, { intent: j ? 'objection' : 'clarification' });
    acme.message(thread, {});
    if (i % 2) {
      acme.message(thread, { pinned_at: `2026-02-0${j + 1}T00:00:00Z` });
      notes += 1;
    }
  }
  acmeMetrics.push(metric);
  expectedCounts.set(metric.id, { threads, notes });
}
const key = acme.key();
const revokedKey = acme.key({ revoked_at: '2026-01-01T00:00:00Z' });
const unrelatedKey = acme.key({ scopes: ['reports:write'] });

const globex = r.org();
const globexMetric = globex.metric({ name: 'Metric 000' });

const paged = r.org();
const pagedMetrics = ['Orders', 'Orders', 'Churn', 'apple', 'Zeta', 'Orders', 'Bookings'].map((name) =>
  paged.metric({ name }),
);
const pagedKey = paged.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), serverTiming: true });
});
afterAll(() => t.close());

function post(query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  return t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    payload: { query, variables },
  });
}
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

const LIST = `query List($pageSize: Int!) {
  metrics(pageSize: $pageSize) {
    items { id name discussionThreadCount agentContextNotes { messageId } }
    pagination { total }
  }
}`;

describe('metrics', () => {
  it('returns the organization’s metrics only, in name order, with counts and notes', async () => {
    const res = await post(LIST, { pageSize: 100 }, bearer(key.secret));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.errors).toBeUndefined();
    const { items, pagination } = body.data.metrics;
    expect(pagination).toEqual({ total: 100 });
    expect(items.map((item: { id: string }) => item.id)).toEqual(byNameThenId(acmeMetrics).map((m) => m.id));
    expect(items.map((item: { id: string }) => item.id)).not.toContain(globexMetric.id);
    for (const item of items) {
      const expected = expectedCounts.get(item.id);
      expect({ threads: item.discussionThreadCount, notes: item.agentContextNotes.length }).toEqual(expected);
    }
  });

  it('costs 2 statements (key, then the page with its counts and notes) for 10 or 100 metrics', async () => {
    const hundred = await post(LIST, { pageSize: 100 }, bearer(key.secret));
    const ten = await post(LIST, { pageSize: 10 }, bearer(key.secret));
    expect(hundred.json().data.metrics.items).toHaveLength(100);
    expect(ten.json().data.metrics.items).toHaveLength(10);
    expect(statementCount(hundred)).toBe(statementCount(ten));
    expect(statementCount(hundred)).toBe(2);
  });

  it('metric(id) of another organization is null', async () => {
    const query = 'query One($id: ID!) { metric(id: $id) { id name } }';
    const foreign = await post(query, { id: globexMetric.id }, bearer(key.secret));
    expect(foreign.statusCode).toBe(200);
    expect(foreign.json()).toEqual({ data: { metric: null } });
    const own = await post(query, { id: acmeMetrics[0]?.id }, bearer(key.secret));
    expect(own.json()).toEqual({ data: { metric: { id: acmeMetrics[0]?.id, name: acmeMetrics[0]?.name } } });
    const missing = await post(query, { id: randomUUID() }, bearer(key.secret));
    expect(missing.json()).toEqual({ data: { metric: null } });
  });

  it('metricsConnection(first: 2) pages through every metric in name order without repeats', async () => {
    const query = `query Page($after: String) {
      metricsConnection(first: 2, after: $after) {
        edges { cursor node { id name } }
        pageInfo { hasNextPage endCursor }
      }
    }`;
    const seen: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 10; page++) {
      const res = await post(query, { after }, bearer(pagedKey.secret));
      const body = res.json();
      expect(body.errors).toBeUndefined();
      const { edges, pageInfo } = body.data.metricsConnection;
      expect(edges.length).toBeLessThanOrEqual(2);
      seen.push(...edges.map((edge: { node: { id: string } }) => edge.node.id));
      if (!pageInfo.hasNextPage) break;
      expect(pageInfo.endCursor).toBe(edges.at(-1).cursor);
      after = pageInfo.endCursor;
    }
    expect(seen).toEqual(byNameThenId(pagedMetrics).map((m) => m.id));
  });
});

describe('metricsConnection', () => {
  const query = `query Page($first: Int, $last: Int, $after: String, $before: String, $filter: MetricFilter) {
    metricsConnection(first: $first, last: $last, after: $after, before: $before, filter: $filter) {
      edges { cursor node { id name } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }`;
  const ordered = () => byNameThenId(pagedMetrics).map((m) => m.id);

  it('last and before page backwards in the same order, in one statement besides the key lookup', async () => {
    const last = await post(query, { last: 3 }, bearer(pagedKey.secret));
    const { edges, pageInfo } = last.json().data.metricsConnection;
    expect(edges.map((edge: { node: { id: string } }) => edge.node.id)).toEqual(ordered().slice(-3));
    expect(pageInfo.hasPreviousPage).toBe(true);
    expect(statementCount(last)).toBe(2);
    const before = await post(query, { last: 10, before: pageInfo.startCursor }, bearer(pagedKey.secret));
    const earlier = before.json().data.metricsConnection;
    expect(earlier.edges.map((edge: { node: { id: string } }) => edge.node.id)).toEqual(ordered().slice(0, -3));
    expect(earlier.pageInfo.hasPreviousPage).toBe(false);
  });

  it('applies the list filter', async () => {
    const none = await post(query, { first: 100, filter: { status: 'deprecated' } }, bearer(pagedKey.secret));
    expect(none.json().data.metricsConnection.edges).toEqual([]);
    const all = await post(query, { first: 100, filter: { status: 'approved' } }, bearer(pagedKey.secret));
    expect(all.json().data.metricsConnection.edges.map((edge: { node: { id: string } }) => edge.node.id)).toEqual(
      ordered(),
    );
  });

  it('refuses a cursor it did not make', async () => {
    const res = await post(query, { first: 2, after: 'nope' }, bearer(pagedKey.secret));
    expect(res.json().errors[0].message).toBe('Invalid cursor: nope');
  });
});

describe('a list page whose parts cannot be read with it', () => {
  const local = registry();
  const org = local.org();
  for (let i = 0; i < 3; i++) org.thread(org.metric({ name: `Broken ${i}` }), {});
  const localKey = org.key();
  let broken: TestApp;
  beforeAll(async () => {
    broken = await startTestApp({ fixture: local.build() });
    // Challenges can no longer be read (a throwaway database): the page's combined statement fails.
    await broken.database.prisma.$executeRawUnsafe('ALTER TABLE challenge RENAME TO challenge_gone');
  });
  afterAll(() => broken?.close());

  it('is read alone, and only the fields of the failed part fail', async () => {
    const query = (fields: string) =>
      broken.inject({
        method: 'POST',
        url: '/graphql',
        headers: { 'content-type': 'application/json', ...bearer(localKey.secret) },
        payload: { query: `{ metrics(pageSize: 5) { items { name discussionThreadCount ${fields} } } }` },
      });
    const counts = (await query('')).json();
    expect(counts.errors).toBeUndefined();
    expect(counts.data.metrics.items).toEqual(
      [0, 1, 2].map((i) => ({ name: `Broken ${i}`, discussionThreadCount: 1 })),
    );
    const failing = (await query('challengesCount')).json();
    expect(failing.errors.length).toBeGreaterThan(0);
    for (const error of failing.errors) expect(error.path.at(-1)).toBe('challengesCount');
  });
});

describe('compiled execution', () => {
  /** The same document three times: interpreted the first time, compiled by graphql-jit from then on. */
  async function thrice(query: string, variables: Record<string, unknown>) {
    const runs = [];
    for (let run = 0; run < 3; run++) runs.push((await post(query, variables, bearer(key.secret))).json());
    expect(runs[1]).toEqual(runs[0]);
    expect(runs[2]).toEqual(runs[0]);
    return runs[0];
  }

  it('a repeated document answers exactly as its first run', async () => {
    const body = await thrice(
      `query Mixed($id: ID!, $bad: ID!, $pageSize: Int!) {
        metric(id: $id) { id name status lifecycleStatus discussionThreadCount agentContextNotes { messageId body } }
        missing: metric(id: $bad) { id }
        metrics(pageSize: $pageSize) { items { id name discussionMessageCount } pagination { total page pageSize } }
      }`,
      { id: acmeMetrics[1]?.id, bad: 'not-a-uuid', pageSize: 3 },
    );
    expect(body.errors).toBeUndefined();
    expect(body.data.metric.id).toBe(acmeMetrics[1]?.id);
    expect(body.data.missing).toBeNull();
    expect(body.data.metrics.items).toHaveLength(3);
  });

  it('and so do its errors', async () => {
    const body = await thrice('query Long($q: String!) { metrics(search: $q) { pagination { total } } }', {
      q: 'x'.repeat(300),
    });
    expect(body.errors.map((error: { extensions: { code: string } }) => error.extensions.code)).toEqual([
      'BAD_USER_INPUT',
    ]);
  });
});

describe('authentication', () => {
  const query = '{ metrics(pageSize: 1) { pagination { total } } }';

  it('no credentials: 401 Missing Authorization header', async () => {
    const res = await post(query);
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 401,
      body: { error: 'Missing Authorization header' },
    });
  });

  it('a revoked key: 401', async () => {
    const res = await post(query, {}, bearer(revokedKey.secret));
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 401,
      body: { error: 'API key has been revoked' },
    });
  });

  it('a key with an unrelated scope: 403', async () => {
    const res = await post(query, {}, bearer(unrelatedKey.secret));
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 403,
      body: { error: 'Insufficient scope' },
    });
  });

  it('a signed-in session cookie works', async () => {
    const res = await post(query, {}, { cookie: `session=${sessionUser.session_token}` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: { metrics: { pagination: { total: 100 } } } });
  });

  it('an unknown session: 401 Not signed in', async () => {
    const res = await post(query, {}, { cookie: 'session=not-a-real-session' });
    expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 401, body: { error: 'Not signed in' } });
  });
});

describe('document limits', () => {
  function expectRejected(res: Awaited<ReturnType<typeof post>>) {
    expect([200, 400]).toContain(res.statusCode);
    const body = res.json();
    expect(Array.isArray(body.errors) && body.errors.length > 0).toBe(true);
    expect(body.data ?? null).toBeNull();
  }

  it('rejects a query deeper than the limit', async () => {
    let selection = 'id';
    for (let i = 0; i < 8; i++) selection = `relationships { target { ${selection} } }`;
    expectRejected(await post(`{ metric(id: "${acmeMetrics[0]?.id}") { ${selection} } }`, {}, bearer(key.secret)));
  });

  it('rejects a query with too many aliases', async () => {
    const aliases = Array.from({ length: 30 }, (_, i) => `a${i}: metric(id: "${randomUUID()}") { id }`).join(' ');
    expectRejected(await post(`{ ${aliases} }`, {}, bearer(key.secret)));
  });
});

describe('introspection and GraphiQL', () => {
  it('introspection works', async () => {
    const res = await post('{ __schema { queryType { name } } }', {}, bearer(key.secret));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
  });

  it('a browser gets the GraphiQL page without credentials', async () => {
    const res = await t.inject({ method: 'GET', url: '/graphql', headers: { accept: 'text/html' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/<html/i);
    expect(res.body).toMatch(/graphiql/i);
  });
});
