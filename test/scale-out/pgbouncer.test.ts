/**
 * Behind PgBouncer 1.18 in transaction mode (issue 29): 20 client
 * connections of the service over 2 server connections. With
 * DATABASE_POOL_MODE=transaction every route (REST list, detail, search,
 * conditional GET, GraphQL, MCP, an apply, an upload in parts, validations)
 * answers under concurrent load and PgBouncer never opens a third server
 * connection; in the default session mode the same setup fails with
 * prepared statement errors, so the test can fail.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/client.js';
import { compile } from '../../src/db/kysely.js';
import { migratePostgresInProcess, readMigrations } from '../../src/db/migrate.js';
import { POINT_READ } from '../../src/db/sql.js';
import { parseEnv } from '../../src/env.js';
import { buildTestInstance } from '../helpers/app.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES, SLOW_PEERS } from '../helpers/needs.js';
import { type PgBouncer, pgbouncerBinary, startPgBouncer } from '../helpers/pgbouncer.js';
import { doc, docMetric, newTeamOrg, planOf, postValidations, putRegistry, type TeamOrg } from '../registry/support.js';

async function adminQuery(statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

const skip = lacks(POSTGRES, SLOW_PEERS, [Boolean(pgbouncerBinary), 'pgbouncer (apt-get install pgbouncer)']);

const SERVER_CONNECTIONS = 2;
const CLIENT_CONNECTIONS = 20;

interface Pool {
  database: string;
  cl_active: number;
  cl_waiting: number;
  sv_active: number;
  sv_idle: number;
  sv_used: number;
  sv_tested: number;
  sv_login: number;
}

describe.skipIf(skip)('behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  const drops: (() => Promise<void>)[] = [];
  const closes: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    bouncer = await startPgBouncer({
      upstream: process.env.TEST_DATABASE_URL ?? '',
      poolMode: 'transaction',
      defaultPoolSize: SERVER_CONNECTIONS,
      maxClientConn: 200,
      // so that the session-mode service connects at all, and fails at its statements
      ignoreStartupParameters: ['options', 'statement_timeout'],
    });
  });
  afterAll(async () => {
    for (const close of closes.reverse()) await close().catch(() => {});
    await bouncer?.stop();
    for (const drop of drops) await drop().catch(() => {});
  });

  /** A database cloned from the template, opened through PgBouncer. */
  async function throughBouncer(options: Parameters<typeof openDatabase>[1]) {
    const { target, drop } = await createTestTarget();
    drops.push(drop);
    if (target.kind !== 'postgres') throw new Error('PostgreSQL only');
    const name = new URL(target.url).pathname.slice(1);
    const database = await openDatabase({ kind: 'postgres', url: bouncer.urlFor(name) }, options);
    closes.push(() => database.close());
    return { name, direct: target.url, database };
  }

  async function app(database: Database): Promise<FastifyInstance> {
    const instance = await buildTestInstance(database, { serviceTokenRateLimit: 1_000_000 });
    closes.push(() => instance.close());
    return instance;
  }

  const get = (instance: FastifyInstance, url: string, key: string, headers: Record<string, string> = {}) =>
    instance.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}`, ...headers } });

  async function seed(instance: FastifyInstance, database: Database): Promise<{ org: TeamOrg; ids: string[] }> {
    const org = await newTeamOrg(database.prisma, 'pooled');
    const metrics = Array.from({ length: 30 }, (_, i) =>
      docMetric(`metric_${i}`, { name: `Revenue metric ${i}`, lifecycle_status: 'RELEASED' }),
    );
    planOf(await putRegistry(instance, doc(org.slug, metrics), { token: org.token }));
    const list = await get(instance, '/api/v1/metrics?pageSize=100', org.key);
    expect(list.statusCode, list.body).toBe(200);
    const ids = (list.json().data as { id: string }[]).map((metric) => metric.id);
    expect(ids).toHaveLength(30);
    return { org, ids };
  }

  it('sets statement_timeout in each transaction it opens; says at start that the role has none for the rest', async () => {
    const { database } = await throughBouncer({ poolMode: 'transaction', poolSize: 2, statementTimeoutMs: 4000 });
    expect(database.settingsNotice).toMatch(
      /^DATABASE_POOL_MODE=transaction: .*statement_timeout \(none\), not DB_STATEMENT_TIMEOUT_MS \(4000 ms\).*ALTER ROLE/,
    );
    const inTransaction = await database.prisma.$transaction(
      (tx) => tx.$queryRaw<{ statement_timeout: string }[]>`SHOW statement_timeout`,
    );
    expect(inTransaction).toEqual([{ statement_timeout: '4s' }]);
    // Nothing was left on the server connection for the next client's statements.
    const after = await database.prisma.$queryRaw<{ statement_timeout: string }[]>`SHOW statement_timeout`;
    expect(after).toEqual([{ statement_timeout: '0' }]);
  });

  it('prints nothing when the role has the timeout (ALTER ROLE ... SET statement_timeout)', async () => {
    const { target, drop } = await createTestTarget();
    drops.push(drop);
    const name = new URL(target.kind === 'postgres' ? target.url : '').pathname.slice(1);
    await adminQuery(`ALTER ROLE CURRENT_USER IN DATABASE ${name} SET statement_timeout = 3000`);
    const database = await openDatabase(
      { kind: 'postgres', url: bouncer.urlFor(name) },
      { poolMode: 'transaction', poolSize: 2, statementTimeoutMs: 5000 },
    );
    closes.push(() => database.close());
    expect(database.settingsNotice).toBeNull();
  });

  it('serves every route concurrently over 20 client connections and 2 server connections', async () => {
    const { name, database } = await throughBouncer({
      poolMode: 'transaction',
      poolSize: CLIENT_CONNECTIONS,
      statementTimeoutMs: 5000,
    });
    const instance = await app(database);
    const { org, ids } = await seed(instance, database);
    const detailTag = String((await get(instance, `/api/v1/metrics/${ids[0]}`, org.key)).headers.etag);

    const requests: { label: string; options: InjectOptions; expected: number }[] = [];
    const auth = { authorization: `Bearer ${org.key}` };
    for (let round = 0; round < 8; round++) {
      for (const [i, id] of ids.entries()) {
        requests.push({
          label: 'detail',
          options: { method: 'GET', url: `/api/v1/metrics/${id}`, headers: auth },
          expected: 200,
        });
        if (i % 3 === 0)
          requests.push({
            label: 'contract',
            options: { method: 'GET', url: `/api/v1/metrics/${id}/contract`, headers: auth },
            expected: 200,
          });
      }
      requests.push(
        {
          label: 'list',
          options: { method: 'GET', url: `/api/v1/metrics?pageSize=${5 + round}&page=2`, headers: auth },
          expected: 200,
        },
        {
          label: 'search',
          options: { method: 'GET', url: `/api/v1/metrics?q=revenue+${round}`, headers: auth },
          expected: 200,
        },
        {
          label: 'conditional detail',
          options: {
            method: 'GET',
            url: `/api/v1/metrics/${ids[0]}`,
            headers: { ...auth, 'if-none-match': detailTag },
          },
          // an apply of this round may change the metric first
          expected: 0,
        },
        {
          label: 'graphql',
          options: {
            method: 'POST',
            url: '/graphql',
            headers: { ...auth, 'content-type': 'application/json', accept: 'application/json' },
            payload: { query: `{ metrics(pageSize: ${10 + round}) { items { id name } pagination { total } } }` },
          },
          expected: 200,
        },
        {
          label: 'mcp',
          options: {
            method: 'POST',
            url: '/mcp',
            headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
            payload: {
              jsonrpc: '2.0',
              id: round,
              method: 'tools/call',
              params: { name: 'get_metric', arguments: { key: `metric_${round}` } },
            },
          },
          expected: 200,
        },
      );
    }

    const peak = { servers: 0, clients: 0 };
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const pools = (await bouncer.admin<Pool>('SHOW POOLS')).filter((pool) => pool.database === name);
        for (const pool of pools) {
          peak.servers = Math.max(
            peak.servers,
            pool.sv_active + pool.sv_idle + pool.sv_used + pool.sv_tested + pool.sv_login,
          );
          peak.clients = Math.max(peak.clients, pool.cl_active + pool.cl_waiting);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    const writes = [
      ...[1, 2, 3].map(async (round) => {
        const metrics = Array.from({ length: 30 }, (_, i) =>
          docMetric(`metric_${i}`, {
            name: `Revenue metric ${i}`,
            lifecycle_status: 'RELEASED',
            description: `Round ${round}.`,
          }),
        );
        const res = await putRegistry(instance, doc(org.slug, metrics), { token: org.token });
        return { label: 'apply', status: res.statusCode, expected: 200, body: res.body };
      }),
      // An upload in parts: its apply's temporary tables and SET LOCAL stay in one transaction.
      (async () => {
        const headers = { authorization: `Bearer ${org.token}` };
        const opened = await instance.inject({ method: 'POST', url: '/api/registry/uploads', headers });
        const id = opened.json().data.upload_id as string;
        const parts = [
          [docMetric('uploaded_total', { metric_type: 'derived', inputs: ['uploaded_base'] })],
          [docMetric('uploaded_base', { relationships: [{ kind: 'related_to', target: 'uploaded_total' }] })],
        ];
        for (const [i, metrics] of parts.entries()) {
          const sent = await instance.inject({
            method: 'PUT',
            url: `/api/registry/uploads/${id}/parts/${i + 1}`,
            headers: { ...headers, 'content-type': 'application/json' },
            payload: JSON.stringify(doc(org.slug, metrics)),
          });
          if (sent.statusCode !== 200)
            return { label: 'upload part', status: sent.statusCode, expected: 200, body: sent.body };
        }
        const res = await instance.inject({ method: 'POST', url: `/api/registry/uploads/${id}/apply`, headers });
        return { label: 'upload', status: res.statusCode, expected: 200, body: res.body };
      })(),
      ...[1, 2, 3].map(async (round) => {
        const results = Array.from({ length: 10 }, (_, i) => ({
          metric_key: `metric_${i}`,
          ran_at: new Date(Date.UTC(2026, 0, round, i)).toISOString(),
          status: 'passed',
        }));
        const res = await postValidations(instance, { results }, { token: org.token });
        return { label: 'validations', status: res.statusCode, expected: 200, body: res.body };
      }),
    ];
    const reads = requests.map(async ({ label, options, expected }) => {
      const res = await instance.inject(options);
      return { label, status: res.statusCode, expected, body: res.body };
    });
    const outcomes = await Promise.all([...writes, ...reads]);
    sampling = false;
    await sampler;

    const failed = outcomes.filter(({ status, expected }) =>
      expected === 0 ? status !== 200 && status !== 304 : status !== expected,
    );
    expect(failed.map(({ label, status, body }) => `${label} ${status} ${body.slice(0, 200)}`)).toEqual([]);
    // MCP answers errors inside a 200: none of them may be one.
    for (const outcome of outcomes.filter(({ label }) => label === 'mcp'))
      expect(outcome.body).not.toMatch(/"isError":true|"error"/);
    const graphqlErrors = outcomes.filter(({ label, body }) => label === 'graphql' && body.includes('"errors"'));
    expect(graphqlErrors).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(300);
    const uploaded = await database.prisma.metricInput.count({
      where: { metric: { key: 'uploaded_total', orgId: org.id }, input: { key: 'uploaded_base' } },
    });
    expect(uploaded).toBe(1);

    // The 20 client connections were open at once, and PgBouncer never had more than 2 server connections.
    expect(peak.clients).toBeGreaterThan(SERVER_CONNECTIONS);
    expect(peak.servers).toBeGreaterThan(0);
    expect(peak.servers).toBeLessThanOrEqual(SERVER_CONNECTIONS);
    const servers = (await bouncer.admin<{ database: string }>('SHOW SERVERS')).filter(
      (server) => server.database === name,
    );
    expect(servers.length).toBeLessThanOrEqual(SERVER_CONNECTIONS);
    const direct = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await direct.connect();
    try {
      const { rows } = await direct.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND backend_type = $2',
        [name, 'client backend'],
      );
      expect(rows[0]?.n).toBeLessThanOrEqual(SERVER_CONNECTIONS);
    } finally {
      await direct.end();
    }
  });

  it('migrates an empty database through it, two instances at once, each migration once', async () => {
    const name = `mg_pooled_${randomBytes(6).toString('hex')}`;
    await adminQuery(`CREATE DATABASE ${name}`);
    drops.push(() => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    const url = bouncer.urlFor(name);
    const [first, second] = await Promise.all([
      migratePostgresInProcess(url, 'transaction'),
      migratePostgresInProcess(url, 'transaction'),
    ]);
    expect([...first.applied, ...second.applied].sort()).toEqual(readMigrations().map((migration) => migration.name));
    expect(await migratePostgresInProcess(url, 'transaction')).toEqual({ applied: [], locked: false });
  });

  it('fails in session mode through the same PgBouncer: prepared statements land on other server connections', async () => {
    const { database } = await throughBouncer({ poolSize: CLIENT_CONNECTIONS });
    const reads = Array.from({ length: 200 }, (_, i) =>
      database.sql.query(compile(sql<{ n: number }>`SELECT ${i}::int AS n`), POINT_READ).then(
        () => null,
        (error: Error) => error.message,
      ),
    );
    const errors = (await Promise.all(reads)).filter((message) => message !== null);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatch(/^prepared statement "read_0" (does not exist|already exists)$/);

    // Prisma's own statements are unnamed and pass; the prepared reads of a request fail it.
    const instance = await app(database);
    const org = await newTeamOrg(database.prisma, 'session');
    const statuses = await Promise.all(
      Array.from({ length: 100 }, async () => (await get(instance, '/api/v1/metrics', org.key)).statusCode),
    );
    expect(statuses).toContain(500);
  });
});

describe('DATABASE_POOL_MODE', () => {
  it('is session unless set; transaction needs DATABASE_URL', () => {
    expect(parseEnv({}).DATABASE_POOL_MODE).toBe('session');
    const url = 'postgresql://app@pooler:6432/metrics';
    expect(parseEnv({ DATABASE_URL: url, DATABASE_POOL_MODE: 'transaction' }).DATABASE_POOL_MODE).toBe('transaction');
    expect(() => parseEnv({ DATABASE_POOL_MODE: 'transaction' })).toThrow(
      'DATABASE_POOL_MODE: transaction needs DATABASE_URL (the pooler); the embedded database has none',
    );
    expect(() => parseEnv({ DATABASE_URL: url, DATABASE_POOL_MODE: 'statement' })).toThrow('DATABASE_POOL_MODE:');
  });
});
