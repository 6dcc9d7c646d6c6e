/**
 * Reads of one metric counted per key, metric and UTC day (src/metric/usage.ts):
 * through REST (200 and 304), GraphQL and MCP, each metric once a request, a
 * session never; written in one batch when flushed, at the bound, and at close;
 * a metric deleted before the write leaves the batch whole; old days forgotten
 * by the sweep. Then GET /api/metrics/{id}/usage as admins and CI read it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiKey } from '../../src/admin/api-keys.js';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { createSession } from '../../src/admin/sessions.js';
import { addUser } from '../../src/admin/users.js';
import { sweepOnce } from '../../src/changes/sweep.js';
import { createUsageCounter } from '../../src/metric/usage.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, HOST, newTeamOrg, putRegistry, type TeamOrg } from '../registry/support.js';

const DAY = 24 * 60 * 60 * 1000;
const today = () => new Date().toISOString().slice(0, 10);
const dayBefore = (days: number) => new Date(Date.now() - days * DAY).toISOString().slice(0, 10);

let t: TestApp;
let org: TeamOrg;
let other: TeamOrg;
let url: URL;
/** metric id by key, in `org` */
const ids: Record<string, string> = {};
let readerId: string;

beforeAll(async () => {
  t = await startTestApp();
  url = new URL('/mcp', await t.app.listen({ port: 0, host: '127.0.0.1' }));
  org = await newTeamOrg(t.database.prisma, 'usage');
  other = await newTeamOrg(t.database.prisma, 'usage-other');
  const metrics = ['a', 'b', 'c', 'd', 'e', 'gone'].map((key) =>
    // `d` is named as `c`'s key: resolve_metric("c") finds c by key and d by name.
    docMetric(key, { lifecycle_status: 'RELEASED', ...(key === 'd' ? { name: 'c' } : {}) }),
  );
  const applied = await putRegistry(t, doc(org.slug, metrics), { token: org.token });
  expect(applied.statusCode, applied.body).toBe(200);
  const otherApplied = await putRegistry(t, doc(other.slug, [docMetric('theirs')]), { token: other.token });
  expect(otherApplied.statusCode, otherApplied.body).toBe(200);
  for (const row of await t.database.prisma.metric.findMany({ where: { orgId: org.id } })) ids[row.key] = row.id;
  readerId = (await t.database.prisma.apiKey.findFirstOrThrow({ where: { orgId: org.id, name: 'reader' } })).id;
});
afterAll(() => t?.close());

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

interface UsageRow {
  metric: string;
  key_id: string;
  day: string;
  reads: number;
}

/** The organization's usage rows, by metric key. */
async function usageRows(orgId = org.id): Promise<UsageRow[]> {
  return t.database.prisma.$queryRaw<UsageRow[]>`
    SELECT m.key AS metric, u.key_id::text AS key_id, u.day::text AS day, u.reads
    FROM metric_usage u JOIN metric m ON m.id = u.metric_id
    WHERE u.org_id = ${orgId}::uuid ORDER BY m.key, u.key_id, u.day`;
}

async function clearUsage(): Promise<void> {
  await t.app.flushUsage();
  await t.database.prisma.$executeRaw`DELETE FROM metric_usage`;
}

function graphql(query: string, headers: Record<string, string>) {
  return t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { ...headers, host: HOST, 'content-type': 'application/json' },
    payload: JSON.stringify({ query }),
  });
}

async function mcp(secret: string): Promise<Client> {
  const client = new Client({ name: 'usage-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: bearer(secret) } }));
  return client;
}

describe('reads counted per key, metric and day', () => {
  it('REST detail and contract, a 304 included; not a list, a missing metric or another organization’s', async () => {
    await clearUsage();
    const detail = await t.get(`/api/v1/metrics/${ids.a}`, org.key);
    expect(detail.statusCode).toBe(200);
    const again = await t.get(`/api/v1/metrics/${ids.a}`, org.key, { 'if-none-match': String(detail.headers.etag) });
    expect(again.statusCode).toBe(304);
    const contract = await t.get(`/api/v1/metrics/${ids.a}/contract`, org.key);
    expect(contract.statusCode).toBe(200);
    const contractAgain = await t.get(`/api/v1/metrics/${ids.a}/contract`, org.key, {
      'if-none-match': String(contract.headers.etag),
    });
    expect(contractAgain.statusCode).toBe(304);
    expect((await t.get('/api/v1/metrics', org.key)).statusCode).toBe(200);
    expect((await t.get(`/api/v1/metrics/${crypto.randomUUID()}`, org.key)).statusCode).toBe(404);
    const theirs = (await t.database.prisma.metric.findFirstOrThrow({ where: { orgId: other.id } })).id;
    expect((await t.get(`/api/v1/metrics/${theirs}`, org.key)).statusCode).toBe(404);
    // Nothing is written before the flush.
    expect(await usageRows()).toEqual([]);
    await t.app.flushUsage();
    expect(await usageRows()).toEqual([{ metric: 'a', key_id: readerId, day: today(), reads: 4 }]);
    expect(await usageRows(other.id)).toEqual([]);
  });

  it('GraphQL: metric, metricByKey and metricByName, each metric once a request; a session is not counted', async () => {
    await clearUsage();
    const res = await graphql(
      `{ one: metric(id: "${ids.a}") { id } two: metricByKey(key: "a") { id } b: metricByKey(key: "b") { id }
         none: metric(id: "${crypto.randomUUID()}") { id } list: metrics { items { id } } }`,
      bearer(org.key),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().errors).toBeUndefined();
    const byName = await graphql('{ metricByName(name: "Metric e") { id } }', bearer(org.key));
    expect(byName.json().data.metricByName.id).toBe(ids.e);
    const asSession = await graphql(`{ metric(id: "${ids.b}") { id } }`, { cookie: `session=${org.ownerSession}` });
    expect(asSession.json().data.metric.id).toBe(ids.b);
    await t.app.flushUsage();
    expect(await usageRows()).toEqual([
      { metric: 'a', key_id: readerId, day: today(), reads: 1 },
      { metric: 'b', key_id: readerId, day: today(), reads: 1 },
      { metric: 'e', key_id: readerId, day: today(), reads: 1 },
    ]);
  });

  it('MCP: get_metric and get_metric_contract (by key: one read), resolve_metric (its match only)', async () => {
    await clearUsage();
    const client = await mcp(org.key);
    try {
      for (const [name, args] of [
        ['get_metric', { id: ids.a }],
        ['get_metric', { key: 'b' }],
        ['get_metric_contract', { key: 'b' }],
        ['resolve_metric', { name: 'c' }],
        ['search_metrics', { query: 'metric' }],
      ] as const) {
        const result = await client.callTool({ name, arguments: args });
        expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy();
      }
      const resolved = await client.callTool({ name: 'resolve_metric', arguments: { name: 'c' } });
      expect((resolved.structuredContent as { match: { key: string } }).match.key).toBe('c');
    } finally {
      await client.close();
    }
    await t.app.flushUsage();
    expect(await usageRows()).toEqual([
      { metric: 'a', key_id: readerId, day: today(), reads: 1 },
      { metric: 'b', key_id: readerId, day: today(), reads: 2 },
      { metric: 'c', key_id: readerId, day: today(), reads: 2 },
    ]);
  });

  it('a flush adds to the day’s row; at close the held counts are written', async () => {
    await clearUsage();
    await t.get(`/api/v1/metrics/${ids.a}`, org.key);
    await t.app.flushUsage();
    await t.get(`/api/v1/metrics/${ids.a}`, org.key);
    await t.get(`/api/v1/metrics/${ids.a}`, org.key);
    await t.app.flushUsage();
    expect(await usageRows()).toEqual([{ metric: 'a', key_id: readerId, day: today(), reads: 3 }]);

    // A second instance over the same database, closed with a count held: the count is written.
    const instance = await buildTestInstance(t.database);
    const res = await instance.inject({ method: 'GET', url: `/api/v1/metrics/${ids.b}`, headers: bearer(org.key) });
    expect(res.statusCode).toBe(200);
    await instance.close();
    expect((await usageRows()).find((row) => row.metric === 'b')).toEqual({
      metric: 'b',
      key_id: readerId,
      day: today(),
      reads: 1,
    });
  });
});

describe('the counter', () => {
  const warnings: unknown[] = [];
  const onError = (error: unknown) => warnings.push(error);

  it('a metric deleted between its reads and the write leaves the rest of the batch written', async () => {
    await clearUsage();
    const counter = createUsageCounter(t.database.prisma, onError);
    try {
      counter.count(readerId, ids.gone as string);
      counter.count(readerId, ids.a as string);
      counter.count(readerId, ids.a as string);
      await t.database.prisma.metric.delete({ where: { id: ids.gone } });
      await counter.flush();
    } finally {
      await counter.close();
    }
    expect(warnings).toEqual([]);
    expect(await usageRows()).toEqual([{ metric: 'a', key_id: readerId, day: today(), reads: 2 }]);
  });

  it('writes early when as many (key, metric) pairs as its bound are held', async () => {
    await clearUsage();
    const counter = createUsageCounter(t.database.prisma, onError, { maxEntries: 3, intervalMs: 3_600_000 });
    try {
      counter.count(readerId, ids.a as string);
      counter.count(readerId, ids.a as string);
      counter.count(readerId, ids.b as string);
      // Two pairs: held, not written.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await usageRows()).toEqual([]);
      counter.count(readerId, ids.c as string);
      await vi.waitFor(async () => expect(await usageRows()).toHaveLength(3), { timeout: 5000 });
      expect(await usageRows()).toEqual([
        { metric: 'a', key_id: readerId, day: today(), reads: 2 },
        { metric: 'b', key_id: readerId, day: today(), reads: 1 },
        { metric: 'c', key_id: readerId, day: today(), reads: 1 },
      ]);
    } finally {
      await counter.close();
    }
    expect(warnings).toEqual([]);
  });

  it('counts a read on the UTC day it happened, across midnight', async () => {
    await clearUsage();
    const midnight = Date.UTC(2026, 0, 15);
    let now = midnight - 1000;
    const counter = createUsageCounter(t.database.prisma, onError, { now: () => now });
    counter.count(readerId, ids.a as string);
    now = midnight + 1000;
    counter.count(readerId, ids.a as string);
    counter.count(readerId, ids.a as string);
    await counter.close();
    expect(await usageRows()).toEqual([
      { metric: 'a', key_id: readerId, day: '2026-01-14', reads: 1 },
      { metric: 'a', key_id: readerId, day: '2026-01-15', reads: 2 },
    ]);
    expect(warnings).toEqual([]);
  });

  it('the sweep forgets usage older than 90 days', async () => {
    await clearUsage();
    await t.database.prisma.$executeRaw`
      INSERT INTO metric_usage (metric_id, day, key_id, org_id, reads) VALUES
        (${ids.a}::uuid, ${dayBefore(91)}::date, ${readerId}::uuid, ${org.id}::uuid, 5),
        (${ids.a}::uuid, ${dayBefore(89)}::date, ${readerId}::uuid, ${org.id}::uuid, 7)`;
    await sweepOnce(t.database.prisma, { intervalMs: 60_000, retentionDays: 30, trust: { staleValidationDays: 30 } });
    expect(await usageRows()).toEqual([{ metric: 'a', key_id: readerId, day: dayBefore(89), reads: 7 }]);
  });
});

describe('GET /api/metrics/{id}/usage', () => {
  let second: { id: string; secret: string };
  let validationsToken: string;
  let memberSession: string;

  beforeAll(async () => {
    await clearUsage();
    const created = await createApiKey(t.database.prisma, { org: org.slug, name: 'dashboards' });
    second = { id: created.id, secret: created.secret };
    validationsToken = (
      await createServiceToken(t.database.prisma, { org: org.slug, name: 'checks', scopes: ['validations:write'] })
    ).secret;
    await addUser(t.database.prisma, { org: org.slug, email: `m-${org.slug}@example.com`, name: 'M', role: 'member' });
    memberSession = (await createSession(t.database.prisma, { user: `m-${org.slug}@example.com`, org: org.slug }))
      .token;
    for (let i = 0; i < 3; i++) await t.get(`/api/v1/metrics/${ids.a}`, org.key);
    await t.get(`/api/v1/metrics/${ids.a}/contract`, second.secret);
    // An older read, in the window, and one before it.
    await t.database.prisma.$executeRaw`
      INSERT INTO metric_usage (metric_id, day, key_id, org_id, reads) VALUES
        (${ids.a}::uuid, ${dayBefore(29)}::date, ${second.id}::uuid, ${org.id}::uuid, 10),
        (${ids.a}::uuid, ${dayBefore(30)}::date, ${second.id}::uuid, ${org.id}::uuid, 100)`;
  });

  const usage = (id: string, headers: Record<string, string>, query = '') =>
    t.inject({ method: 'GET', url: `/api/metrics/${id}/usage${query}`, headers: { host: HOST, ...headers } });

  it('as an admin: the reads of the last 30 days per key (this instance’s held counts first) and per day', async () => {
    const res = await usage(ids.a as string, { cookie: `session=${org.ownerSession}` });
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json();
    const key = await t.database.prisma.apiKey.findUniqueOrThrow({ where: { id: readerId } });
    expect(data).toEqual({
      metric_id: ids.a,
      key: 'a',
      days: 30,
      since: dayBefore(29),
      reads: 14,
      readers: 2,
      keys: [
        {
          id: second.id,
          kind: 'api_key',
          name: 'dashboards',
          prefix: expect.stringMatching(/^cl_[0-9a-f]{8}$/),
          revoked_at: null,
          reads: 11,
          last_read_on: today(),
        },
        {
          id: readerId,
          kind: 'api_key',
          name: 'reader',
          prefix: key.keyPrefix,
          revoked_at: null,
          reads: 3,
          last_read_on: today(),
        },
      ],
      daily: [
        { day: dayBefore(29), reads: 10 },
        { day: today(), reads: 4 },
      ],
    });
  });

  it('with a registry:write service token; a metric never read has none', async () => {
    const res = await usage(ids.e as string, bearer(org.token));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toMatchObject({ key: 'e', reads: 0, readers: 0, keys: [], daily: [] });
  });

  it('refuses what it must: 400, 401, 403, 404', async () => {
    const theirs = (await t.database.prisma.metric.findFirstOrThrow({ where: { orgId: other.id } })).id;
    const admin = { cookie: `session=${org.ownerSession}` };
    const cases: [string, Record<string, string>, string, number, unknown][] = [
      [ids.a as string, admin, '?days=7', 400, { error: 'unknown query parameter "days": this route takes none' }],
      ['not-a-uuid', admin, '', 400, { error: 'Invalid metric ID format' }],
      [theirs, admin, '', 404, { error: 'Metric not found' }],
      [crypto.randomUUID(), bearer(org.token), '', 404, { error: 'Metric not found' }],
      [ids.a as string, {}, '', 401, { error: 'Not signed in' }],
      [ids.a as string, bearer(org.key), '', 401, { error: 'Invalid API key format' }],
      [ids.a as string, bearer(validationsToken), '', 403, { error: 'Insufficient scope' }],
      [ids.a as string, { cookie: `session=${memberSession}` }, '', 403, { error: 'Forbidden' }],
      [ids.a as string, { ...admin, origin: 'https://evil.example' }, '', 403, { error: 'Forbidden' }],
    ];
    for (const [id, headers, query, status, body] of cases) {
      const res = await usage(id, headers, query);
      expect([res.statusCode, res.json()], `${id}${query} ${JSON.stringify(headers)}`).toEqual([status, body]);
    }
  });
});
