/**
 * At 100,000 metrics (the bench registry, bench/seed.ts), every statement
 * the list, filter, search, detail and contract routes send is explained on
 * the same database: no plan may read `metric` or `message` with a
 * sequential scan (nor the narrow `metric_search` that search ranks on). The statements are the ones the service really sent,
 * recorded at the driver adapter (src/db/query-stats.ts).
 */
import type { ArgType, SqlQuery } from '@prisma/driver-adapter-utils';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SeedResult, seed } from '../../bench/seed.js';
import { openDatabase } from '../../src/db/client.js';
import { compile } from '../../src/db/kysely.js';
import { recordStatements } from '../../src/db/query-stats.js';
import { buildTestInstance } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase, usingPostgres } from '../helpers/database.js';

const METRICS = 100_000;
const GUARDED = ['metric', 'metric_search', 'message'];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

function* planNodes(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* planNodes(child);
}

/** One line a node, indented like EXPLAIN's text format, for failure messages. */
function describePlan(node: PlanNode, depth = 0): string {
  const parts = [node['Node Type'], node['Relation Name'] && `on ${node['Relation Name']}`];
  parts.push(node['Index Name'] && `using ${node['Index Name']}`, node.Filter && `(filter ${node.Filter})`);
  const line = `${'  '.repeat(depth)}${parts.filter(Boolean).join(' ')}`;
  return [line, ...(node.Plans ?? []).map((child) => describePlan(child, depth + 1))].join('\n');
}

/** What the pg adapter does to an argument before pg sees it (its `mapArg`), as far as pg cannot take it as is. */
function pgValue(arg: unknown, type: ArgType | undefined): unknown {
  if (Array.isArray(arg)) return arg.map((value) => pgValue(value, type));
  if (typeof arg === 'string' && type?.scalarType === 'bytes') return Buffer.from(arg, 'base64');
  return arg;
}

type ExplainRow = { 'QUERY PLAN': [{ Plan: PlanNode }] };

/** A parameter as a SQL literal (strings, numbers and arrays of them: what the read statements take). */
function sqlLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Array.isArray(value)) {
    return pg.escapeLiteral(`{${value.map((item) => `"${String(item).replace(/["\\]/g, '\\$&')}"`).join(',')}}`);
  }
  return pg.escapeLiteral(String(value));
}

// EXPLAIN takes queries and DML; BEGIN, COMMIT and SET are not planned.
const explainable = (sql: string) => /^\s*(select|with|insert|update|delete|values)\b/i.test(sql);

describe.skipIf(!usingPostgres)('query plans at 100,000 metrics (PostgreSQL only: set TEST_DATABASE_URL)', () => {
  let database: TestDatabase;
  let app: FastifyInstance;
  let client: pg.Client;
  let bench: SeedResult;

  beforeAll(async () => {
    database = await createTestDatabase();
    if (database.target.kind !== 'postgres') throw new Error('expected PostgreSQL');
    const pool = new pg.Pool({ connectionString: database.target.url });
    try {
      bench = await seed(pool, METRICS);
      await pool.query('ANALYZE');
    } finally {
      await pool.end();
    }
    client = new pg.Client({ connectionString: database.target.url });
    await client.connect();
    await client.query('SET plan_cache_mode = force_generic_plan');
    app = await buildTestInstance(database);
  }, 300_000);

  afterAll(async () => {
    await app?.close();
    await client?.end();
    await database?.drop();
  });

  // bench/seed.ts: the first sample metric (number 25) has 5 threads of
  // discussion and all 20 of its messages pinned (over the cap of 10).
  const focus = () => bench.metricIds[0];
  const routes: [name: string, url: () => string, reads: string[]][] = [
    ['list', () => '/api/v1/metrics?page=3&pageSize=20', ['metric']],
    ['lifecycle_status', () => '/api/v1/metrics?lifecycle_status=CANDIDATE', ['metric']],
    ['status (legacy)', () => '/api/v1/metrics?status=review', ['metric']],
    ['policy_tier', () => '/api/v1/metrics?policy_tier=tier_2&page=2', ['metric']],
    ['scope', () => '/api/v1/metrics?scope=enterprise_canonical', ['metric']],
    ['type', () => '/api/v1/metrics?type=derived', ['metric']],
    ['search', () => '/api/v1/metrics?q=revenue', ['metric_search', 'metric']],
    ['search, typo', () => '/api/v1/metrics?q=revnue', ['metric_search', 'metric']],
    ['search, partial word', () => '/api/v1/metrics?q=reven', ['metric_search', 'metric']],
    ['search, several words', () => '/api/v1/metrics?q=weekly%20active%20users%20emea', ['metric_search', 'metric']],
    [
      'search and filter',
      () => '/api/v1/metrics?q=churn&lifecycle_status=RELEASED&page=2',
      ['metric_search', 'metric'],
    ],
    ['detail', () => `/api/v1/metrics/${focus()}`, ['metric']],
    ['contract', () => `/api/v1/metrics/${focus()}/contract`, ['metric', 'message']],
  ];

  it.each(routes)('%s: no sequential scan of metric, metric_search or message', async (_name, url, reads) => {
    const { result: res, statements } = await recordStatements(() =>
      app.inject({ method: 'GET', url: url(), headers: { authorization: `Bearer ${bench.apiKey}` } }),
    );
    expect(res.statusCode, res.body).toBe(200);

    // The plan for these values, and the generic plan a prepared statement runs (src/db/adapter.ts).
    const explained: { statement: SqlQuery; plan: PlanNode; kind: string }[] = [];
    for (const statement of statements.filter((s) => explainable(s.sql))) {
      const values = statement.args.map((arg, i) => pgValue(arg, statement.argTypes[i]));
      const custom = await client.query<ExplainRow>(`EXPLAIN (FORMAT JSON) ${statement.sql}`, values);
      await client.query(`PREPARE explained AS ${statement.sql}`);
      try {
        const literals = values.map(sqlLiteral).join(', ');
        const generic = await client.query<ExplainRow>(
          `EXPLAIN (FORMAT JSON) EXECUTE explained${values.length ? `(${literals})` : ''}`,
        );
        for (const [kind, result] of [
          ['custom', custom],
          ['generic', generic],
        ] as const) {
          const plan = result.rows[0]?.['QUERY PLAN'][0].Plan;
          if (plan) explained.push({ statement, plan, kind });
        }
      } finally {
        await client.query('DEALLOCATE explained');
      }
    }

    expect(explained.length, `statements recorded: ${statements.length}`).toBeGreaterThan(0);
    const relations = new Set(explained.flatMap(({ plan }) => [...planNodes(plan)].map((n) => n['Relation Name'])));
    expect([...relations], 'relations read by the explained statements').toEqual(expect.arrayContaining(reads));
    for (const { statement, plan, kind } of explained) {
      const seqScans = [...planNodes(plan)].filter(
        (n) => n['Node Type'] === 'Seq Scan' && GUARDED.includes(n['Relation Name'] ?? ''),
      );
      expect(
        seqScans.map((n) => n['Relation Name']),
        `sequential scan in the ${kind} plan of\n${statement.sql}\nargs ${JSON.stringify(statement.args)}\n${describePlan(plan)}\n`,
      ).toEqual([]);
    }
  });

  it('warm connection: every statement of every route is prepared and runs a generic plan', async () => {
    const single = await openDatabase(database.target, { poolSize: 1 });
    const warm = await buildTestInstance({ ...single });
    try {
      const texts = new Set<string>();
      for (let round = 0; round < 8; round++) {
        for (const [, url] of routes) {
          const { result: res, statements } = await recordStatements(() =>
            warm.inject({ method: 'GET', url: url(), headers: { authorization: `Bearer ${bench.apiKey}` } }),
          );
          expect(res.statusCode, res.body).toBe(200);
          for (const statement of statements) texts.add(statement.sql);
        }
      }
      const prepared = await single.sql.query(
        compile(
          sql<{ statement: string; generic_plans: number; custom_plans: number }>`
            SELECT statement, generic_plans::int, custom_plans::int FROM pg_prepared_statements`,
        ),
      );
      const byText = new Map(prepared.map((p) => [p.statement, p]));
      expect(texts.size).toBeGreaterThan(5);
      for (const text of texts) {
        // Planned once when prepared, then run with that plan: no custom plan, planned per execution.
        expect(byText.get(text), `not prepared:\n${text}`).toMatchObject({ custom_plans: 0 });
        expect(byText.get(text)?.generic_plans, `no generic plan:\n${text}`).toBeGreaterThan(0);
      }
    } finally {
      await warm.close();
      await single.close();
    }
  }, 120_000);
});
