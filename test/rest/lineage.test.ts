/**
 * Lineage on REST, over a listening socket: the detail's and the contract's
 * `inputs` (position order, announced verdicts) and `dependents_count`, in
 * the route's one statement, and the detail's ETag following its inputs'
 * verdicts; GET /api/v1/metrics/{id}/lineage up and down, its depth, pages,
 * bounds, 400s and 404s.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LINEAGE_STEPS } from '../../src/metric/lineage.js';
import { type MetricJson, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { announceVerdict, insertEdges, insertInputs } from '../helpers/lineage.js';

const r = registry();
const org = r.org();
const key = org.key();
const definitionOnly = org.key({ scopes: ['definition:read'] });
const revenue = org.metric({ key: 'total_revenue', name: 'Total Revenue' });
const expense = org.metric({ key: 'total_expense', name: 'Total Expense' });
const refunds = org.metric({ key: 'refunds', name: 'Refunds' });
const profit = org.metric({ key: 'total_profit', name: 'Total Profit', metric_type: 'derived' });
const margin = org.metric({ key: 'margin', name: 'Margin', metric_type: 'ratio' });
const plain = org.metric({ key: 'plain', name: 'Plain' });
// A diamond: top over left and right, both over bottom.
const top = org.metric({ key: 'top' });
const left = org.metric({ key: 'left' });
const right = org.metric({ key: 'right' });
const bottom = org.metric({ key: 'bottom' });
// A chain: chain[i + 1] has chain[i] as its input.
const chain = Array.from({ length: 12 }, (_, i) => org.metric({ key: `chain_${String(i).padStart(2, '0')}` }));
// A hub with 250 direct dependents.
const hub = org.metric({ key: 'hub' });
const spokes = Array.from({ length: 250 }, (_, i) => org.metric({ key: `spoke_${String(i).padStart(3, '0')}` }));
// Layers of 101, each metric of a layer over every metric of the next: 10,201 edges between two layers.
const dense = org.metric({ key: 'dense' });
const layers = [1, 2].map((layer) =>
  Array.from({ length: 101 }, (_, i) => org.metric({ key: `layer${layer}_${String(i).padStart(3, '0')}` })),
);
// A cycle, which a document cannot make but the walk must survive.
const ping = org.metric({ key: 'ping' });
const pong = org.metric({ key: 'pong' });

const other = r.org();
const otherKey = other.key();
const otherMetric = other.metric({ key: 'total_revenue' });

let t: TestApp;
let base: string;

beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), serverTiming: true });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { prisma } = t.database;
  await insertInputs(prisma, profit.id, [revenue.id, expense.id, refunds.id]);
  await insertInputs(prisma, margin.id, [profit.id, revenue.id]);
  await insertEdges(prisma, [
    [top.id, left.id],
    [top.id, right.id],
    [left.id, bottom.id],
    [right.id, bottom.id],
    ...chain.slice(1).map((metric, i) => [metric.id, (chain[i] as MetricJson).id] as const),
    ...spokes.map((spoke) => [spoke.id, hub.id] as const),
    ...(layers[0] ?? []).map((metric) => [dense.id, metric.id] as const),
    ...(layers[0] ?? []).flatMap((upper) => (layers[1] ?? []).map((lower) => [upper.id, lower.id] as const)),
    [ping.id, pong.id],
    [pong.id, ping.id],
  ]);
  await announceVerdict(prisma, revenue.id, 'do_not_use', ['deprecated']);
  await announceVerdict(prisma, expense.id, 'use');
  await announceVerdict(prisma, profit.id, 'use_with_caution', ['pre_release']);
});
afterAll(() => t?.close());

async function get(path: string, secret = key.secret, headers: Record<string, string> = {}) {
  const res = await fetch(new URL(path, base), { headers: { authorization: `Bearer ${secret}`, ...headers } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

async function ok(path: string, secret = key.secret) {
  const res = await get(path, secret);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res;
}

const statements = (res: { headers: Headers }) =>
  Number(/desc="(\d+) queries"/.exec(res.headers.get('server-timing') ?? '')?.[1]);

const input = (metric: MetricJson, verdict: string | null) => ({
  id: metric.id,
  key: metric.key,
  name: metric.name,
  verdict,
});

describe('detail and contract', () => {
  it('the detail lists the inputs in position order with their announced verdicts, and counts dependents', async () => {
    const { body } = await ok(`/api/v1/metrics/${profit.id}`);
    expect(body.data.inputs).toEqual([
      input(revenue, 'do_not_use'),
      input(expense, 'use'),
      // No verdict announced yet for this one: null, not a guess.
      input(refunds, null),
    ]);
    expect(body.data.dependents_count).toBe(1);
    expect(body.data.metric).not.toHaveProperty('inputs');
    const revenueDetail = (await ok(`/api/v1/metrics/${revenue.id}`)).body.data;
    expect(revenueDetail.inputs).toEqual([]);
    expect(revenueDetail.dependents_count).toBe(2);
  });

  it('the contract carries the same', async () => {
    const { body } = await ok(`/api/v1/metrics/${margin.id}/contract`);
    expect(body.data.inputs).toEqual([input(profit, 'use_with_caution'), input(revenue, 'do_not_use')]);
    expect(body.data.dependents_count).toBe(0);
    const plainContract = (await ok(`/api/v1/metrics/${plain.id}/contract`)).body.data;
    expect(plainContract.inputs).toEqual([]);
    expect(plainContract.dependents_count).toBe(0);
  });

  it('the detail shows no verdict to a key that may not read the contract', async () => {
    const { body } = await ok(`/api/v1/metrics/${profit.id}`, definitionOnly.secret);
    expect(body.data.inputs).toEqual([input(revenue, null), input(expense, null), input(refunds, null)]);
  });

  it('costs no statement more: the detail and the contract are one statement each, with or without inputs', async () => {
    for (const metric of [profit, plain, hub]) {
      expect(statements(await ok(`/api/v1/metrics/${metric.id}`))).toBe(1);
      expect(statements(await ok(`/api/v1/metrics/${metric.id}/contract`))).toBe(1);
    }
  });

  it("the detail's ETag moves when an input's verdict changes, and not for a metric it does not show", async () => {
    const path = `/api/v1/metrics/${profit.id}`;
    const before = await ok(path);
    const tag = before.headers.get('etag') ?? '';
    expect(tag).not.toBe('');
    expect((await get(path, key.secret, { 'if-none-match': tag })).status).toBe(304);
    // Not one of its inputs: the tag stays.
    await announceVerdict(t.database.prisma, plain.id, 'use_with_caution', ['never_validated']);
    expect((await get(path, key.secret, { 'if-none-match': tag })).status).toBe(304);
    await announceVerdict(t.database.prisma, refunds.id, 'do_not_use', ['deprecated']);
    const after = await get(path, key.secret, { 'if-none-match': tag });
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(tag);
    expect(after.body.data.inputs[2]).toEqual(input(refunds, 'do_not_use'));
    // A key that sees no verdict gets another tag for the same metric.
    const hidden = await get(path, definitionOnly.secret, { 'if-none-match': after.headers.get('etag') ?? '' });
    expect(hidden.status).toBe(200);
  });
});

const lineage = (metric: MetricJson, query = '') => `/api/v1/metrics/${metric.id}/lineage${query}`;

describe('GET /api/v1/metrics/{id}/lineage', () => {
  it('upstream by default, to depth 3: each metric once, at its least depth, with the edge it was reached by', async () => {
    const { body, headers } = await ok(lineage(margin));
    expect(headers.get('cache-control')).toBe('no-store');
    expect(body.meta).toEqual({ apiVersion: 'v1' });
    expect(body.next_cursor).toBeNull();
    const { nodes, ...rest } = body.data;
    expect(rest).toEqual({ metric_id: margin.id, direction: 'upstream', depth: 3, total: 4, truncated: false });
    // revenue is a direct input of margin and an input of profit: once, at depth 1, reached from margin.
    const byKey = Object.fromEntries(nodes.map((node: { key: string }) => [node.key, node]));
    expect(byKey.total_revenue).toEqual({
      id: revenue.id,
      key: 'total_revenue',
      name: 'Total Revenue',
      lifecycle_status: 'RELEASED',
      verdict: 'do_not_use',
      depth: 1,
      via: { metric_id: margin.id, input_metric_id: revenue.id, position: 1 },
    });
    expect(byKey.total_profit.depth).toBe(1);
    expect(byKey.total_expense).toMatchObject({
      depth: 2,
      verdict: 'use',
      via: { metric_id: profit.id, input_metric_id: expense.id, position: 1 },
    });
    expect(byKey.refunds.depth).toBe(2);
    // Ordered by depth, then id.
    const order = nodes.map((node: { depth: number; id: string }) => [node.depth, node.id]);
    expect(order).toEqual([...order].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1)));
  });

  it('downstream', async () => {
    const { body } = await ok(lineage(revenue, '?direction=downstream'));
    expect(body.data.total).toBe(2);
    const expected = [margin, profit].sort((a, b) => (a.id < b.id ? -1 : 1)).map((metric) => [metric.key, 1]);
    expect(body.data.nodes.map((node: { key: string; depth: number }) => [node.key, node.depth])).toEqual(expected);
    const profitNode = body.data.nodes.find((node: { key: string }) => node.key === 'total_profit');
    expect(profitNode.via).toEqual({ metric_id: profit.id, input_metric_id: revenue.id, position: 0 });
  });

  it('a diamond meets once', async () => {
    const { body } = await ok(lineage(top, '?depth=10'));
    expect(body.data.total).toBe(3);
    expect(body.data.nodes.filter((node: { key: string }) => node.key === 'bottom')).toHaveLength(1);
    const down = (await ok(lineage(bottom, '?direction=downstream'))).body.data;
    expect(down.nodes.map((node: { key: string }) => node.key).sort()).toEqual(['left', 'right', 'top']);
  });

  it('stops at the depth asked for, 10 at most', async () => {
    const last = chain.at(-1) as MetricJson;
    const depths = async (query: string) =>
      (await ok(lineage(last, query))).body.data.nodes.map((node: { depth: number }) => node.depth);
    expect(await depths('?depth=1')).toEqual([1]);
    expect(await depths('')).toEqual([1, 2, 3]);
    expect(await depths('?depth=10')).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // chain_01 is 10 edges away; chain_00 is 11.
    const keys = (await ok(lineage(last, '?depth=10'))).body.data.nodes.map((node: { key: string }) => node.key);
    expect(keys).toContain('chain_01');
    expect(keys).not.toContain('chain_00');
  });

  it('pages with limit and after until next_cursor is null, each node once', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?direction=downstream&limit=100${cursor ? `&after=${cursor}` : ''}`;
      const { body } = await ok(lineage(hub, query));
      expect(body.data.total).toBe(250);
      expect(body.data.nodes.length).toBeLessThanOrEqual(100);
      seen.push(...body.data.nodes.map((node: { id: string }) => node.id));
      cursor = body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toHaveLength(250);
    expect(new Set(seen)).toEqual(new Set(spokes.map((spoke) => spoke.id)));
    expect(seen).toEqual([...seen].sort());
    // The default page is 100.
    expect((await ok(lineage(hub, '?direction=downstream'))).body.data.nodes).toHaveLength(100);
  });

  it(`walks at most ${MAX_LINEAGE_STEPS} edges and says it was truncated`, async () => {
    const started = Date.now();
    const { body } = await ok(lineage(dense, '?depth=10&limit=500'));
    expect(Date.now() - started).toBeLessThan(5000);
    expect(body.data.truncated).toBe(true);
    // All of the first layer (nearer first), part of the second.
    expect(body.data.total).toBeGreaterThan(101);
    expect(body.data.total).toBeLessThanOrEqual(202);
    expect(body.data.nodes.filter((node: { depth: number }) => node.depth === 1)).toHaveLength(101);
    // The first layer alone is 101 edges: complete.
    const shallow = (await ok(lineage(dense, '?depth=1'))).body.data;
    expect(shallow).toMatchObject({ total: 101, truncated: false });
  });

  it('survives a cycle: the metric walked from is never a node of its own lineage', async () => {
    const { body } = await ok(lineage(ping, '?depth=10'));
    expect(body.data.nodes.map((node: { key: string }) => node.key)).toEqual(['pong']);
  });

  it('shows no verdict to a key that may not read the contract', async () => {
    const { body } = await ok(lineage(margin), definitionOnly.secret);
    expect(body.data.nodes.map((node: { verdict: unknown }) => node.verdict)).toEqual([null, null, null, null]);
  });

  const depthRule = 'depth must be an integer from 1 to 10';
  const limitRule = 'limit must be an integer from 1 to 500';
  const cursorRule = 'after must be a cursor an earlier page returned';
  it.each([
    ['direction=sideways', '?direction=sideways', 'direction must be upstream or downstream'],
    ['an empty direction', '?direction=', 'direction must be upstream or downstream'],
    ['depth=0', '?depth=0', depthRule],
    ['depth=11', '?depth=11', depthRule],
    ['depth=2.5', '?depth=2.5', depthRule],
    ['depth=-1', '?depth=-1', depthRule],
    ['a depth of 1,000 digits', `?depth=${'9'.repeat(1000)}`, depthRule],
    ['limit=0', '?limit=0', limitRule],
    ['limit=501', '?limit=501', limitRule],
    ['limit=ten', '?limit=ten', limitRule],
    ['a cursor this route never gave', '?after=not-a-cursor', cursorRule],
    [
      'a cursor past the deepest depth',
      `?after=${Buffer.from(`11:${randomUUID()}`).toString('base64url')}`,
      cursorRule,
    ],
    ['a cursor of 10,000 characters', `?after=${'A'.repeat(10_000)}`, cursorRule],
  ])('%s is 400', async (_label, query, message) => {
    const res = await get(lineage(margin, query));
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: message } });
  });

  it('an id that is no UUID is 400; a random one and another organization’s metric are the same 404', async () => {
    expect(await get('/api/v1/metrics/not-a-uuid/lineage')).toMatchObject({
      status: 400,
      body: { error: 'Invalid metric ID format' },
    });
    const missing = await get(`/api/v1/metrics/${randomUUID()}/lineage`);
    const foreign = await get(lineage(otherMetric));
    expect(missing).toMatchObject({ status: 404, body: { error: 'Metric not found' } });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(missing.body);
    // The other organization's own key reads it (its metric has no inputs).
    expect((await ok(lineage(otherMetric), otherKey.secret)).body.data.total).toBe(0);
  });

  it('authenticates first and spends one unit of the key’s rate limit', async () => {
    const anonymous = await fetch(new URL(lineage(margin, '?depth=99'), base));
    expect(anonymous.status).toBe(401);
    const first = await ok(lineage(margin));
    const second = await ok(lineage(margin, '?depth=10'));
    const remaining = (res: { headers: Headers }) => Number(res.headers.get('ratelimit-remaining'));
    expect(remaining(first) - remaining(second)).toBe(1);
  });
});
