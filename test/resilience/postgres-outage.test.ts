/**
 * PostgreSQL stopped under load and started again, through a real listening
 * socket: every route answers 503 with Retry-After while it is down (never a
 * 500; GraphQL with SERVICE_UNAVAILABLE, an MCP tool saying so), /readyz names
 * the database, an apply it interrupts leaves the registry entirely as before,
 * the process neither crashes nor hangs, and it serves again by itself within
 * seconds of the server's return. The test runs a PostgreSQL server of its own
 * on a spare port (never the shared one).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/client.js';
import { isDatabaseUnavailable } from '../../src/db/unavailable.js';
import { errors } from '../../src/errors.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { createKeyRateLimiter, type KeyRateLimiter } from '../../src/limits/key-rate-limiter.js';
import { openApiDocument } from '../../src/openapi/document.js';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance, silentLogger } from '../helpers/app.js';
import { freePort } from '../helpers/ports.js';
import { createConformance } from '../openapi/conformance.js';
import { doc, docMetric, HOST, newTeamOrg, type TeamOrg } from '../registry/support.js';

const bin = '/usr/lib/postgresql/15/bin';
const runnable = existsSync(join(bin, 'pg_ctl')) && process.getuid?.() === 0;

function asPostgres(command: string, args: string[]) {
  return execFileSync('runuser', ['-u', 'postgres', '--', join(bin, command), ...args], { stdio: 'pipe' });
}

const fixture = registry();
const org = fixture.org({ slug: 'outage' });
const key = org.key({ rate_limit_per_minute: 1_000_000 });
const metric = org.metric({ name: 'Revenue' });

const { expectConforms } = createConformance(openApiDocument());
const UNAVAILABLE = errors.serviceUnavailable.body;
const RETRY_AFTER = String(errors.serviceUnavailable.retryAfter);
const MCP_UNAVAILABLE = /"text":"Service temporarily unavailable: the database does not answer; retry in 5 seconds"/;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Generous bounds: the machine is shared and small. */
const FAIL_FAST_MS = 10_000;
const RECOVERY_BOUND_MS = 15_000;
const POOL_SIZE = 4;

describe.skipIf(!runnable)('a PostgreSQL outage', () => {
  let dir: string;
  let port: number;
  let database: Database;
  let app: FastifyInstance;
  let base: string;
  let team: TeamOrg;
  /**
   * GraphQL spends an operation's cost after admission and before execution: a request held there
   * is admitted while the database answers and executes once it does not.
   */
  const limiter = createKeyRateLimiter({ logger: silentLogger });
  let hold: { reached(): void; released: Promise<void> } | null = null;
  const holdingLimiter: KeyRateLimiter = {
    ...limiter,
    consume: async (subject, limit, cost) => {
      const held = hold;
      hold = null;
      if (held) {
        held.reached();
        await held.released;
      }
      return limiter.consume(subject, limit, cost);
    },
  };
  const pgCtl = (...args: string[]) => asPostgres('pg_ctl', ['-D', join(dir, 'data'), '-w', ...args]);
  const url = () => `postgresql://postgres@127.0.0.1:${port}/postgres`;
  const startServer = () =>
    pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, '-l', join(dir, 'log'), 'start');
  const stopServer = () => pgCtl('-m', 'immediate', 'stop');

  async function send(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
    const res = await fetch(`${base}${path}`, { method, headers, body });
    const answer: Answer = { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
    return answer;
  }
  const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
  const get = (path: string) => send('GET', path, bearer(key.secret));
  const graphql = () =>
    send(
      'POST',
      '/graphql',
      { ...bearer(key.secret), 'content-type': 'application/json' },
      JSON.stringify({
        query: `{ metric(id: "${metric.id}") { id name } metrics(pageSize: 100) { pagination { total } } }`,
      }),
    );
  const mcpCall = () =>
    send(
      'POST',
      '/mcp',
      { ...bearer(key.secret), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_metric', arguments: { id: metric.id } },
      }),
    );
  const apply = (body: unknown) =>
    send(
      'PUT',
      '/api/registry',
      { ...bearer(team.token), host: HOST, 'content-type': 'application/json' },
      JSON.stringify(body),
    );

  const conforms = (method: string, template: string, answer: Answer) =>
    expectConforms(method, template, { statusCode: answer.status, headers: answer.headers, body: answer.body });

  /** A 503 as every route answers it: the catalogue's body and Retry-After. */
  function expectUnavailable(answer: Answer) {
    expect(answer.status, answer.body).toBe(503);
    expect(JSON.parse(answer.body)).toEqual(UNAVAILABLE);
    expect(answer.headers['retry-after']).toBe(RETRY_AFTER);
  }

  function expectGraphqlUnavailable(answer: Answer) {
    expect(answer.status, answer.body).toBe(503);
    expect(answer.headers['retry-after']).toBe(RETRY_AFTER);
    const { errors: reported } = JSON.parse(answer.body) as { errors?: { message: string; extensions: unknown }[] };
    expect(reported?.length).toBeGreaterThan(0);
    for (const error of reported ?? []) {
      expect(error).toMatchObject({ message: UNAVAILABLE.error, extensions: { code: 'SERVICE_UNAVAILABLE' } });
    }
  }

  function expectGraphqlServed(answer: Answer) {
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ data: { metric: { id: metric.id } } });
    expect(JSON.parse(answer.body).errors).toBeUndefined();
  }

  /** Polls `request` until it answers 200; the milliseconds that took. */
  async function untilServed(request: () => Promise<Answer>): Promise<number> {
    const started = performance.now();
    for (;;) {
      const answer = await request();
      if (answer.status === 200) return performance.now() - started;
      expect(answer.status, answer.body).not.toBe(500);
      if (performance.now() - started > RECOVERY_BOUND_MS) {
        throw new Error(`not served again within ${RECOVERY_BOUND_MS} ms: ${answer.status} ${answer.body}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /**
   * The pool still has every connection: POOL_SIZE transactions each wait for all of them to be open,
   * so a connection lost for good (checked out by a transaction that never gave it back) fails them.
   */
  async function expectWholePool() {
    let open = 0;
    let allOpen: () => void = () => {};
    const everyOne = new Promise<void>((resolve) => {
      allOpen = resolve;
    });
    const held = Array.from({ length: POOL_SIZE }, () =>
      database.prisma.$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT 1`;
          if (++open === POOL_SIZE) allOpen();
          await everyOne;
        },
        { maxWait: 10_000, timeout: 20_000 },
      ),
    );
    await Promise.all(held);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mg-pg-'));
    execFileSync('chown', ['postgres', dir]);
    port = await freePort();
    asPostgres('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust']);
    startServer();
    database = await openDatabase({ kind: 'postgres', url: url() }, { migrate: true, poolSize: POOL_SIZE });
    await loadFixture(database.prisma, fixture.build());
    team = await newTeamOrg(database.prisma, 'outage-writer');
    app = await buildTestInstance(database, { rateLimiter: holdingLimiter });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await limiter.close();
    await database?.close().catch(() => {});
    try {
      stopServer();
    } catch {
      // already stopped
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 with Retry-After on every route while it is down, and recovers by itself', async () => {
    expect((await get(`/api/v1/metrics/${metric.id}`)).status).toBe(200);
    expectGraphqlServed(await graphql());

    // Under load: requests of every transport are in flight when the server goes away.
    const inFlight = Array.from({ length: 24 }, (_, i) =>
      [
        () => get('/api/v1/metrics'),
        () => get(`/api/v1/metrics/${metric.id}`),
        () => get(`/api/v1/metrics/${metric.id}/contract`),
        graphql,
        mcpCall,
        () => get('/api/v1/changes'),
      ][i % 6]?.(),
    );
    stopServer();
    for (const answer of await Promise.all(inFlight)) {
      if (!answer) continue;
      expect([200, 503], answer.body).toContain(answer.status);
      if (answer.status === 503) expect(answer.headers['retry-after']).toBe(RETRY_AFTER);
      // A tool that failed mid-call says the database did not answer, not that the fetch failed.
      expect(answer.body).not.toContain(errors.fetchFailed.body.error);
      expect(answer.body).not.toContain('INTERNAL_SERVER_ERROR');
      if (answer.body.includes('"isError":true')) expect(answer.body).toMatch(MCP_UNAVAILABLE);
    }

    const started = performance.now();
    const detail = await get(`/api/v1/metrics/${metric.id}`);
    expect(performance.now() - started).toBeLessThan(FAIL_FAST_MS);
    expectUnavailable(detail);
    expect(detail.body).not.toMatch(/\n\s+at /);
    conforms('GET', '/api/v1/metrics/{id}', detail);

    for (const [template, path] of [
      ['/api/v1/metrics', '/api/v1/metrics'],
      ['/api/v1/metrics/{id}/contract', `/api/v1/metrics/${metric.id}/contract`],
      ['/api/v1/changes', '/api/v1/changes'],
    ] as const) {
      const answer = await get(path);
      expectUnavailable(answer);
      conforms('GET', template, answer);
    }
    const keys = await send('GET', '/api/api-keys', { host: HOST, cookie: `session=${team.ownerSession}` });
    expectUnavailable(keys);
    conforms('GET', '/api/api-keys', keys);
    const write = await apply(doc(team.slug, [docMetric('during_outage')]));
    expectUnavailable(write);
    conforms('PUT', '/api/registry', write);
    // Admission reads the key, so an MCP request is turned away as the REST routes are.
    expectUnavailable(await mcpCall());
    // Admission is outside yoga too.
    expectUnavailable(await graphql());

    const ready = await send('GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body)).toEqual({ status: 'unavailable', database: 'down', redis: 'up' });
    expect((await send('GET', '/healthz')).status).toBe(200);

    // What the drivers throw while it is down is recognised, whichever way a route reads.
    const prismaError = await database.prisma.organization.count().catch((error: unknown) => error);
    expect(isDatabaseUnavailable(prismaError), String(prismaError)).toBe(true);
    const sqlError = await database.sql.query({ sql: 'SELECT 1', parameters: [] }).catch((e: unknown) => e);
    expect(isDatabaseUnavailable(sqlError), String(sqlError)).toBe(true);

    startServer();
    const recoveryMs = await untilServed(() => get(`/api/v1/metrics/${metric.id}`));
    console.info(`[outage] PostgreSQL back: REST served again after ${Math.round(recoveryMs)} ms`);

    // An operation admitted before the outage and executed during it: SERVICE_UNAVAILABLE, 503.
    let release: () => void = () => {};
    const reached = new Promise<void>((resolve) => {
      hold = { reached: resolve, released: new Promise<void>((go) => (release = go)) };
    });
    const admitted = graphql();
    await reached;
    stopServer();
    release();
    expectGraphqlUnavailable(await admitted);
    startServer();
    await untilServed(() => get(`/api/v1/metrics/${metric.id}`));
    expectGraphqlServed(await graphql());
    const mcp = await mcpCall();
    expect(mcp.status).toBe(200);
    expect(mcp.body).not.toContain('"isError":true');
    expect((await send('GET', '/readyz')).status).toBe(200);
  }, 120_000);

  it('answers an apply it interrupts with 503 and leaves the registry entirely as before', async () => {
    const keys = Array.from({ length: 1000 }, (_, i) => `interrupted_${String(i).padStart(4, '0')}`);
    const version = (label: string) =>
      doc(
        team.slug,
        keys.map((metricKey) => docMetric(metricKey, { description: `${label} ${metricKey}.` })),
      );
    const first = await apply(version('Before'));
    expect(first.status, first.body.slice(0, 500)).toBe(200);
    const snapshot = async () => {
      const organization = await database.prisma.organization.findUniqueOrThrow({ where: { id: team.id } });
      const metrics = await database.prisma.metric.findMany({
        where: { orgId: team.id },
        select: { key: true, description: true, updatedAt: true },
        orderBy: { key: 'asc' },
      });
      const versions = await database.prisma.metricVersion.count({ where: { metric: { orgId: team.id } } });
      const events = await database.prisma.changeEvent.count({ where: { orgId: team.id } });
      return { metricsVersion: organization.metricsVersion, metrics, versions, events };
    };
    const before = await snapshot();
    expect(before.metrics).toHaveLength(keys.length);

    // Stopped once the apply's transaction has written (it has a transaction id) and before it commits.
    const watcher = new pg.Client({ connectionString: url() });
    watcher.on('error', () => {});
    await watcher.connect();
    const interrupted = apply(version('After'));
    let writing = false;
    const deadline = performance.now() + 60_000;
    while (!writing && performance.now() < deadline) {
      const { rows } = await watcher.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()`,
      );
      writing = rows[0].n > 0;
    }
    expect(writing).toBe(true);
    stopServer();
    await watcher.end().catch(() => {});
    const answer = await interrupted;
    expectUnavailable(answer);
    conforms('PUT', '/api/registry', answer);

    startServer();
    const recoveryMs = await untilServed(() => get(`/api/v1/metrics/${metric.id}`));
    console.info(
      `[outage] PostgreSQL back after an interrupted apply: served again after ${Math.round(recoveryMs)} ms`,
    );
    expect(await snapshot()).toEqual(before);
    await expectWholePool();

    // The client retries, as Retry-After says: the whole document is applied.
    const retried = await apply(version('After'));
    expect(retried.status, retried.body.slice(0, 500)).toBe(200);
    const after = await snapshot();
    expect(after.metrics.every((row) => row.description?.startsWith('After '))).toBe(true);
    expect(after.metricsVersion).toBeGreaterThan(before.metricsVersion);
  }, 240_000);
});
