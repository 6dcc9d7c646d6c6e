/**
 * The lineage reads' plans at 10,000 metrics in chains 10 deep with a
 * fan-in of 5 (the issue's shape): the detail's and the contract's inputs
 * and dependents count, the lineage walk both ways, and a GraphQL list of
 * inputs and dependents, as the service sends them (recorded at the driver
 * adapter), explained in the plan for their values and in the generic plan
 * a prepared statement runs. None reads metric_input or metric_trust_state
 * with a sequential scan, nor metric (a list page's own reads of it aside,
 * which test/db/query-plans.test.ts holds at 100,000); metric_input is read through
 * its primary key (a metric's inputs, the walk upstream) and its
 * (input_metric_id, metric_id) index (dependents, the walk downstream).
 */
import type { SqlQuery } from '@prisma/driver-adapter-utils';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordStatements } from '../../src/db/query-stats.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { insertEdges } from '../helpers/lineage.js';
import { insertMetricsBeside } from '../helpers/metric-sql.js';
import { lacks, POSTGRES } from '../helpers/needs.js';
import { explainBoth, type PlanNode, planNodes } from '../helpers/plans.js';

const BLOCKS = 200;
const LEVELS = 10;
const FAN_IN = 5;
/** Read through an index only by the statements of the routes here (a list page's own reads of metric are not lineage's). */
const GUARDED = ['metric', 'metric_input', 'metric_trust_state'];
const GUARDED_IN_LISTS = ['metric_input', 'metric_trust_state'];
const PRIMARY_KEY = 'metric_input_pkey';
const DEPENDENTS_INDEX = 'metric_input_input_metric_id_metric_id_idx';

const r = registry();
const org = r.org();
const key = org.key();
const seedMetric = org.metric({ key: 'seed' });

/** One line a node, indented as EXPLAIN's text format, for failure messages. */
function describePlan(node: PlanNode, depth = 0): string {
  const line = [node['Node Type'], node['Relation Name'] && `on ${node['Relation Name']}`]
    .concat(node['Index Name'] ? [`using ${node['Index Name']}`] : [])
    .filter(Boolean)
    .join(' ');
  return [`${'  '.repeat(depth)}${line}`, ...(node.Plans ?? []).map((child) => describePlan(child, depth + 1))].join(
    '\n',
  );
}

describe.skipIf(lacks(POSTGRES))('lineage query plans at 10,000 metrics', () => {
  let t: TestApp;
  let client: pg.Client;
  /** ids by block, then level, then place in the level */
  let grid: string[][][];

  beforeAll(async () => {
    t = await startTestApp({ fixture: r.build() });
    const { prisma } = t.database;
    const ids = await insertMetricsBeside(prisma, seedMetric.id, BLOCKS * LEVELS * FAN_IN, 'grid');
    grid = Array.from({ length: BLOCKS }, (_, block) =>
      Array.from({ length: LEVELS }, (_, level) =>
        ids.slice((block * LEVELS + level) * FAN_IN, (block * LEVELS + level + 1) * FAN_IN),
      ),
    );
    // Each metric of a level has the 5 of the level below as its inputs: chains 10 deep, fan-in 5.
    const edges: [string, string][] = [];
    for (const block of grid) {
      for (let level = 1; level < LEVELS; level++) {
        for (const metric of block[level] ?? [])
          for (const input of block[level - 1] ?? []) edges.push([metric, input]);
      }
    }
    await insertEdges(prisma, edges);
    await prisma.$executeRaw`
      INSERT INTO metric_trust_state (metric_id, verdict, reasons, evaluated_at)
      SELECT id, 'use', '{}', now() FROM metric
      ON CONFLICT (metric_id) DO UPDATE SET verdict = 'use', reasons = '{}'`;
    await prisma.$executeRawUnsafe('ANALYZE');
    if (t.database.target.kind !== 'postgres') throw new Error('expected PostgreSQL');
    client = new pg.Client({ connectionString: t.database.target.url });
    await client.connect();
    await client.query('SET plan_cache_mode = force_generic_plan');
  }, 120_000);

  afterAll(async () => {
    await client?.end();
    await t?.close();
  });

  const top = () => grid[7]?.[LEVELS - 1]?.[0] as string;
  const bottom = () => grid[7]?.[0]?.[0] as string;
  const listQuery =
    '{ metrics(pageSize: 100) { items { key inputs { key verdict } dependentsCount dependents(first: 5) { edges { node { key } } } } } }';

  const routes: [
    name: string,
    request: () => { method: 'GET' | 'POST'; url: string; payload?: Record<string, unknown> },
    indexes: string[],
  ][] = [
    ['detail', () => ({ method: 'GET', url: `/api/v1/metrics/${top()}` }), [PRIMARY_KEY, DEPENDENTS_INDEX]],
    ['contract', () => ({ method: 'GET', url: `/api/v1/metrics/${top()}/contract` }), [PRIMARY_KEY, DEPENDENTS_INDEX]],
    ['lineage upstream', () => ({ method: 'GET', url: `/api/v1/metrics/${top()}/lineage?depth=10` }), [PRIMARY_KEY]],
    [
      'lineage downstream',
      () => ({ method: 'GET', url: `/api/v1/metrics/${bottom()}/lineage?direction=downstream&depth=10` }),
      [DEPENDENTS_INDEX],
    ],
    [
      'graphql list with inputs and dependents',
      () => ({ method: 'POST', url: '/graphql', payload: { query: listQuery } }),
      [PRIMARY_KEY, DEPENDENTS_INDEX],
    ],
  ];

  it.each(routes)('%s: indexes only, no sequential scan', async (name, request, indexes) => {
    const { result: res, statements } = await recordStatements(() =>
      t.inject({ ...request(), headers: { authorization: `Bearer ${key.secret}` } }),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().errors).toBeUndefined();
    const plans: { statement: SqlQuery; kind: string; plan: PlanNode }[] = [];
    for (const statement of statements.filter((s) => /^\s*(select|with)\b/i.test(s.sql))) {
      const { custom, generic } = await explainBoth(client, statement);
      plans.push({ statement, kind: 'custom', plan: custom }, { statement, kind: 'generic', plan: generic });
    }
    const used = new Set<string>();
    for (const { statement, kind, plan } of plans) {
      const nodes = [...planNodes(plan)];
      const context = `${name}: the ${kind} plan of\n${statement.sql}\n${describePlan(plan)}`;
      const guarded = request().url === '/graphql' ? GUARDED_IN_LISTS : GUARDED;
      const seqScans = nodes.filter((n) => n['Node Type'] === 'Seq Scan' && guarded.includes(n['Relation Name'] ?? ''));
      expect
        .soft(
          seqScans.map((n) => n['Relation Name']),
          context,
        )
        .toEqual([]);
      for (const node of nodes) if (node['Index Name']?.startsWith('metric_input')) used.add(node['Index Name']);
    }
    expect([...used].sort(), `${name}: metric_input indexes read`).toEqual(expect.arrayContaining(indexes));
  });

  it('the walk, the list and the detail answer as the graph is', async () => {
    const headers = { authorization: `Bearer ${key.secret}` };
    const up = (
      await t.inject({ method: 'GET', url: `/api/v1/metrics/${top()}/lineage?depth=10&limit=500`, headers })
    ).json();
    // Levels 0 to 8 of its block: 45 metrics, the nearest level at depth 1.
    expect(up.data).toMatchObject({ total: (LEVELS - 1) * FAN_IN, truncated: false });
    expect(up.data.nodes.filter((node: { depth: number }) => node.depth === 1)).toHaveLength(FAN_IN);
    const detail = (await t.inject({ method: 'GET', url: `/api/v1/metrics/${grid[7]?.[4]?.[0]}`, headers })).json();
    expect(detail.data.inputs).toHaveLength(FAN_IN);
    expect(detail.data.dependents_count).toBe(FAN_IN);
  });
});
