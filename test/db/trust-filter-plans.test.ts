/**
 * The list's `trust` filter reads the announced verdicts (metric_trust_state)
 * through an index. On the bench registry (bench/seed.ts) at 10,000 metrics
 * and another organization beside it, with every verdict evaluated as the
 * sweep does, each statement a trust-filtered list, search or connection
 * sends is explained, in the plan for its values and in the generic plan a
 * prepared statement runs: the page (a list's and a connection's, or a
 * search's matches) reads metric_trust_state by index only, and no plan reads
 * `metric` with a sequential scan. A list's total (counted once per
 * metrics_version, then kept) may hash the states of a common verdict.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SeedResult, seed } from '../../bench/seed.js';
import { trustTransitions } from '../../src/changes/trust-transitions.js';
import { recordStatements } from '../../src/db/query-stats.js';
import { buildTestInstance } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';

const METRICS = 10_000;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** The nodes of a plan, each with whether it is below an aggregate (a list's total). */
function* nodes(node: PlanNode, counted = false): Generator<{ node: PlanNode; counted: boolean }> {
  yield { node, counted };
  for (const child of node.Plans ?? []) yield* nodes(child, counted || node['Node Type'] === 'Aggregate');
}

const INDEX_READS = ['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan'];

describe.skipIf(lacks(POSTGRES))(`the trust filter's plans at ${METRICS.toLocaleString('en')} metrics`, () => {
  let database: TestDatabase;
  let client: pg.Client;
  let bench: SeedResult;
  let app: Awaited<ReturnType<typeof buildTestInstance>>;

  beforeAll(async () => {
    database = await createTestDatabase();
    if (database.target.kind !== 'postgres') throw new Error('expected PostgreSQL');
    const pool = new pg.Pool({ connectionString: database.target.url });
    try {
      bench = await seed(pool, METRICS, database.target.url);
    } finally {
      await pool.end();
    }
    // The seed writes metrics with SQL: their verdicts are announced as the sweep would.
    for (const orgId of [bench.orgId, bench.otherOrgId]) {
      const ids = (await database.prisma.metric.findMany({ where: { orgId }, select: { id: true } })).map((m) => m.id);
      await database.prisma.$transaction(
        (tx) => trustTransitions(tx, orgId, ids, { staleValidationDays: 30 }, new Date()),
        { timeout: 120_000 },
      );
    }
    client = new pg.Client({ connectionString: database.target.url });
    await client.connect();
    await client.query('ANALYZE');
    await client.query('SET plan_cache_mode = force_generic_plan');
    app = await buildTestInstance(database);
  }, 300_000);

  afterAll(async () => {
    await app?.close();
    await client?.end();
    await database?.drop();
  });

  const connection = (verdict: string) =>
    `/graphql?query=${encodeURIComponent(`{ metricsConnection(first: 50, filter: { trust: ${verdict} }) { edges { node { id name } } } }`)}`;

  it.each([
    ['a rare verdict', '/api/v1/metrics?trust=do_not_use'],
    ['a common verdict, a later page', '/api/v1/metrics?trust=use_with_caution&page=3'],
    ['with a lifecycle filter', '/api/v1/metrics?trust=do_not_use&lifecycle_status=DEPRECATED'],
    ['a search', '/api/v1/metrics?q=revenue&trust=use_with_caution'],
    ['metricsConnection', connection('do_not_use')],
  ])('%s: the page reads the verdicts by index, and metric never sequentially', async (_name, url) => {
    const { result: res, statements } = await recordStatements(() =>
      app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${bench.apiKey}` } }),
    );
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.errors).toBeUndefined();
    const rows = body.data?.metricsConnection?.edges ?? body.data;
    expect(rows.length, 'the filter keeps some metrics here').toBeGreaterThan(0);

    let filtered = 0;
    for (const statement of statements.filter((s) => /^\s*(select|with)\b/i.test(s.sql))) {
      const values = statement.args as unknown[];
      // Arrays (the search's words) as array literals.
      const literal = (value: unknown) =>
        pg.escapeLiteral(
          Array.isArray(value) ? `{${value.map((v) => JSON.stringify(String(v))).join(',')}}` : String(value),
        );
      const literals = values.map(literal).join(', ');
      const custom = await client.query(`EXPLAIN (FORMAT JSON) ${statement.sql}`, values);
      await client.query(`PREPARE explained AS ${statement.sql}`);
      let generic: pg.QueryResult;
      try {
        generic = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE explained${literals ? `(${literals})` : ''}`);
      } finally {
        await client.query('DEALLOCATE explained');
      }
      for (const [kind, explained] of [
        ['custom', custom],
        ['generic', generic],
      ] as const) {
        const plan: PlanNode = explained.rows[0]['QUERY PLAN'][0].Plan;
        const all = [...nodes(plan)];
        const context = `the ${kind} plan of\n${statement.sql}\n${JSON.stringify(plan, null, 1)}`;
        const scans = all
          .filter(({ node }) => node['Node Type'] === 'Seq Scan')
          .map(({ node }) => node['Relation Name']);
        expect.soft(scans, `sequential scan of metric in ${context}`).not.toContain('metric');
        const verdictReads = all.filter(
          ({ node, counted }) => !counted && node['Relation Name'] === 'metric_trust_state',
        );
        for (const { node } of verdictReads) {
          expect
            .soft(INDEX_READS, `metric_trust_state read without an index in ${context}`)
            .toContain(node['Node Type']);
        }
        if (statement.sql.includes('metric_trust_state ts') && verdictReads.length) filtered++;
      }
    }
    expect(filtered, 'plans whose page reads the verdicts').toBeGreaterThan(0);
  });

  it('the totals are the announced verdicts of the organization', async () => {
    for (const verdict of ['use', 'use_with_caution', 'do_not_use']) {
      const res = await app.inject({
        method: 'GET',
        url: `/api/v1/metrics?trust=${verdict}`,
        headers: { authorization: `Bearer ${bench.apiKey}` },
      });
      const { rows } = await client.query<{ count: number }>(
        `SELECT count(*)::int AS count FROM metric_trust_state s JOIN metric m ON m.id = s.metric_id
         WHERE m.org_id = $1 AND s.verdict = $2`,
        [bench.orgId, verdict],
      );
      expect(res.json().pagination.total, verdict).toBe(rows[0]?.count);
    }
  });
});
