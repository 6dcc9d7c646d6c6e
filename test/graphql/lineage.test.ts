/**
 * Lineage on /graphql, over a listening socket: `Metric.inputs` and
 * `dependentsCount`, the `dependents` connection and its pages, batched for
 * a list (statements that do not grow with the page), and `lineage`, the
 * same walk as the REST route, refused on lists, its arguments bounded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetricJson, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { announceVerdict, insertEdges, insertInputs } from '../helpers/lineage.js';

const r = registry();
const org = r.org();
const key = org.key();
const definitionOnly = org.key({ scopes: ['definition:read'] });
const revenue = org.metric({ key: 'total_revenue', name: 'Total Revenue', lifecycle_status: 'DEPRECATED' });
const expense = org.metric({ key: 'total_expense', name: 'Total Expense' });
const profit = org.metric({ key: 'total_profit', name: 'Total Profit', lifecycle_status: 'CANDIDATE' });
const margin = org.metric({ key: 'margin', name: 'Margin' });
// First by name: a page of two holds it and its dependents.
const hub = org.metric({ key: 'hub', name: 'A hub' });
const spokes = Array.from({ length: 7 }, (_, i) => org.metric({ key: `spoke_${i}` }));
const byId = (a: MetricJson, b: MetricJson) => (a.id < b.id ? -1 : 1);

let t: TestApp;
let base: string;

beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), serverTiming: true });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { prisma } = t.database;
  await insertInputs(prisma, profit.id, [revenue.id, expense.id]);
  await insertInputs(prisma, margin.id, [profit.id, revenue.id]);
  await insertEdges(
    prisma,
    spokes.map((spoke) => [spoke.id, hub.id] as const),
  );
  await announceVerdict(prisma, revenue.id, 'do_not_use', ['deprecated']);
  await announceVerdict(prisma, profit.id, 'use_with_caution', ['pre_release']);
});
afterAll(() => t?.close());

async function graphql(query: string, variables: Record<string, unknown> = {}, secret = key.secret) {
  const res = await fetch(new URL('/graphql', base), {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  expect(res.status).toBe(200);
  const statements = Number(/desc="(\d+) queries"/.exec(res.headers.get('server-timing') ?? '')?.[1]);
  return { ...(await res.json()), statements };
}

async function data(query: string, variables: Record<string, unknown> = {}, secret = key.secret) {
  const body = await graphql(query, variables, secret);
  expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
  return body.data;
}

describe('Metric.inputs and Metric.dependentsCount', () => {
  it('lists the inputs in position order with their lifecycle and announced verdict', async () => {
    const { metric } = await data(
      'query ($id: ID!) { metric(id: $id) { inputs { id key name lifecycleStatus position verdict } dependentsCount } }',
      { id: profit.id },
    );
    expect(metric).toEqual({
      inputs: [
        {
          id: revenue.id,
          key: 'total_revenue',
          name: 'Total Revenue',
          lifecycleStatus: 'DEPRECATED',
          position: 0,
          verdict: 'do_not_use',
        },
        // No verdict announced yet.
        {
          id: expense.id,
          key: 'total_expense',
          name: 'Total Expense',
          lifecycleStatus: 'RELEASED',
          position: 1,
          verdict: null,
        },
      ],
      dependentsCount: 1,
    });
  });

  it('shows no verdict to a key that may not read the contract', async () => {
    const { metric } = await data(
      'query ($id: ID!) { metric(id: $id) { inputs { key verdict } } }',
      { id: profit.id },
      definitionOnly.secret,
    );
    expect(metric.inputs).toEqual([
      { key: 'total_revenue', verdict: null },
      { key: 'total_expense', verdict: null },
    ]);
  });
});

describe('Metric.dependents', () => {
  const page = `query ($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    metric(id: $id) {
      dependents(first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { id key } }
        pageInfo { hasNextPage hasPreviousPage endCursor startCursor }
      }
    }
  }`;
  const ids = (connection: { edges: { node: { id: string } }[] }) => connection.edges.map((edge) => edge.node.id);

  it('pages forward by id with first and after, and back with last and before', async () => {
    const expected = [...spokes].sort(byId).map((spoke) => spoke.id);
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const { metric } = await data(page, { id: hub.id, first: 3, after });
      seen.push(...ids(metric.dependents));
      if (!metric.dependents.pageInfo.hasNextPage) break;
      after = metric.dependents.pageInfo.endCursor;
    }
    expect(seen).toEqual(expected);
    const { metric } = await data(page, { id: hub.id, last: 2 });
    expect(ids(metric.dependents)).toEqual(expected.slice(-2));
    const before = metric.dependents.pageInfo.startCursor;
    const earlier = (await data(page, { id: hub.id, last: 2, before })).metric;
    expect(ids(earlier.dependents)).toEqual(expected.slice(-4, -2));
    // A metric nothing is built on.
    expect(ids((await data(page, { id: margin.id })).metric.dependents)).toEqual([]);
  });

  it('a list reads its inputs, counts and dependents in statements that do not grow with the page', async () => {
    const query = `{ metrics(pageSize: $n) { items { key inputs { key verdict } dependentsCount
      dependents(first: 2) { edges { node { key trust { verdict } } } } } } }`;
    const small = await graphql(query.replace('$n', '2'));
    const large = await graphql(query.replace('$n', '100'));
    expect(small.errors).toBeUndefined();
    expect(large.errors).toBeUndefined();
    expect(large.data.metrics.items).toHaveLength(12);
    expect(large.statements).toBe(small.statements);
    // The key, the page with its parts, the dependents of every item, their metrics, their verdicts.
    expect(large.statements).toBeLessThanOrEqual(5);
    const hubItem = large.data.metrics.items.find((item: { key: string }) => item.key === 'hub');
    expect(hubItem.dependentsCount).toBe(7);
    expect(hubItem.dependents.edges).toHaveLength(2);
    const marginItem = large.data.metrics.items.find((item: { key: string }) => item.key === 'margin');
    expect(marginItem.inputs).toEqual([
      { key: 'total_profit', verdict: 'use_with_caution' },
      { key: 'total_revenue', verdict: 'do_not_use' },
    ]);
  });
});

describe('Metric.lineage', () => {
  const lineage = `query ($id: ID!, $direction: LineageDirection, $depth: Int, $first: Int, $after: String) {
    metric(id: $id) {
      lineage(direction: $direction, depth: $depth, first: $first, after: $after) {
        direction depth total truncated nextCursor
        nodes { id key name lifecycleStatus verdict depth via { metricId inputMetricId position } }
      }
    }
  }`;

  it('answers what the REST route answers, page by page', async () => {
    for (const [metric, direction] of [
      [margin, 'upstream'],
      [revenue, 'downstream'],
    ] as const) {
      const nodes: unknown[] = [];
      let after: string | null = null;
      do {
        const page: { nodes: unknown[]; nextCursor: string | null } = (
          await data(lineage, { id: metric.id, direction, depth: 10, first: 1, after })
        ).metric.lineage;
        expect(page).toMatchObject({ direction, depth: 10, truncated: false });
        nodes.push(...page.nodes);
        after = page.nextCursor;
      } while (after);
      const rest = await fetch(new URL(`/api/v1/metrics/${metric.id}/lineage?direction=${direction}&depth=10`, base), {
        headers: { authorization: `Bearer ${key.secret}` },
      });
      const body = await rest.json();
      expect(body.data.total).toBe(nodes.length);
      expect(nodes).toEqual(
        body.data.nodes.map(
          (node: {
            lifecycle_status: string;
            via: { metric_id: string; input_metric_id: string; position: number };
            [k: string]: unknown;
          }) => ({
            id: node.id,
            key: node.key,
            name: node.name,
            lifecycleStatus: node.lifecycle_status,
            verdict: node.verdict,
            depth: node.depth,
            via: { metricId: node.via.metric_id, inputMetricId: node.via.input_metric_id, position: node.via.position },
          }),
        ),
      );
    }
    const up = (await data(lineage, { id: margin.id })).metric.lineage;
    // Defaults: upstream, depth 3; revenue is met twice and listed once, at depth 1.
    expect(up).toMatchObject({ direction: 'upstream', depth: 3, total: 3, nextCursor: null });
    expect(up.nodes.map((node: { key: string; depth: number }) => [node.key, node.depth]).sort()).toEqual([
      ['total_expense', 2],
      ['total_profit', 1],
      ['total_revenue', 1],
    ]);
  });

  it.each([
    ['depth: 0', 'depth must be an integer from 1 to 10'],
    ['depth: 11', 'depth must be an integer from 1 to 10'],
    ['first: 0', 'first must be an integer from 1 to 500'],
    ['first: 501', 'first must be an integer from 1 to 500'],
    ['after: "x"', 'after must be a cursor an earlier page returned'],
  ])('%s is a BAD_USER_INPUT error', async (args, message) => {
    const query = `query ($id: ID!) { metric(id: $id) { lineage(${args}) { total } } }`;
    const body = await graphql(query, { id: margin.id });
    expect(body.data?.metric ?? null).toBeNull();
    expect(body.errors).toHaveLength(1);
    expect(body.errors[0]).toMatchObject({ message, extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('a direction that is none is refused by the schema', async () => {
    const body = await graphql('query ($id: ID!) { metric(id: $id) { lineage(direction: sideways) { total } } }', {
      id: margin.id,
    });
    expect(body.errors[0].message).toMatch(/sideways/);
  });

  it('is refused on the items of a list, which would walk once per metric', async () => {
    const body = await graphql('{ metrics(pageSize: 100) { items { key lineage { total } } } }');
    expect(body.errors[0]).toMatchObject({
      message: 'lineage is only available on a single metric (metric, metricByKey, metricByName)',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });

  it('shows no verdict to a key that may not read the contract', async () => {
    const { metric } = await data(lineage, { id: margin.id }, definitionOnly.secret);
    expect(metric.lineage.nodes.map((node: { verdict: unknown }) => node.verdict)).toEqual([null, null, null]);
  });
});
