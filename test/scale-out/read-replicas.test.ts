/**
 * Read replicas (DATABASE_REPLICA_URLS) against real servers: a primary and
 * a streaming replica of it (`pg_basebackup -R`), each on its own port, with
 * `log_statement = all` so that each server's log says which statements it
 * ran. Reads go to the replica; a replica behind by more than
 * REPLICA_MAX_LAG_MS (replay paused) takes none; a conditional GET never
 * answers older than the tag a client presents; a replica stopped under load
 * costs no 5xx; after an apply on one instance, another instance (sharing
 * Redis) reads the organization from the primary until the replica has
 * replayed the write.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/auth/secrets.js';
import { type Database, openDatabase } from '../../src/db/client.js';
import { ReadRouting } from '../../src/db/read-routing.js';
import type { SqlReader } from '../../src/db/sql.js';
import { createWriteMarks, type WriteMarksOptions } from '../../src/db/write-marks.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { createMetrics } from '../../src/http/metrics.js';
import { type AccessDeps, readsOf } from '../../src/http/request-auth.js';
import { readMetricState } from '../../src/metric/state.js';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance } from '../helpers/app.js';
import { lacks, SLOW_PEERS } from '../helpers/needs.js';
import { freePort } from '../helpers/ports.js';
import { startRedis } from '../helpers/redis.js';
import { canRunReplicas, type PrimaryWithReplica, startPrimaryWithReplica } from '../helpers/streaming-replica.js';
import { doc, docMetric, HOST, newTeamOrg, putRegistry } from '../registry/support.js';

const fixture = registry();
const org = fixture.org({ slug: 'replicated' });
const key = org.key();
const metric = org.metric({ name: 'Revenue', description: 'As first written.' });

/** Key lookups a server ran as the read path's prepared statements (its log, `log_statement = all`). */
const keyLookups = (log: string) => log.split('\n').filter((line) => /execute read_\d+: .*"api_key"/.test(line)).length;

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface LogLine {
  level: 'info' | 'warn';
  fields: object;
  message: string;
}

const skip = lacks(SLOW_PEERS, [canRunReplicas, 'PostgreSQL server binaries to start a primary and a replica']);

describe.skipIf(skip)('read replicas', () => {
  let servers: PrimaryWithReplica;
  let primaryDb: Database;
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    servers = await startPrimaryWithReplica({ logStatements: true });
    primaryDb = await openDatabase({ kind: 'postgres', url: servers.primary.url }, { migrate: true, poolSize: 4 });
    await loadFixture(primaryDb.prisma, fixture.build());
    await servers.caughtUp();
  }, 120_000);

  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
    await primaryDb?.close().catch(() => {});
    servers?.close();
  });

  /** An app instance reading from the replica (`maxLagMs`), with its own logger, metrics and marks. */
  async function instance(
    maxLagMs: number,
    marks: Omit<WriteMarksOptions, 'logger'> = {},
    statementTimeoutMs?: number,
  ) {
    const logs: LogLine[] = [];
    const logger = {
      info: (fields: object, message: string) => logs.push({ level: 'info', fields, message }),
      warn: (fields: object, message: string) => logs.push({ level: 'warn', fields, message }),
    };
    const database = await openDatabase(
      { kind: 'postgres', url: servers.primary.url },
      { poolSize: 4, statementTimeoutMs, replicas: { urls: [servers.replica.url], maxLagMs, logger } },
    );
    const replicas = database.replicas;
    if (!replicas) throw new Error('no replica set');
    const routing = new ReadRouting(database.sql, replicas, createWriteMarks({ ...marks, logger }));
    const metrics = createMetrics();
    const app = await buildTestInstance(database, { readRouting: routing, metrics, defaultRateLimit: 1_000_000 });
    closers.push(async () => {
      await app.close();
      await routing.close();
      await database.close();
    });
    const replica = replicas.replicas[0];
    if (!replica) throw new Error('no replica');
    return { app, database, routing, replica, logs, metrics, get: getter(app) };
  }

  const getter =
    (app: FastifyInstance) =>
    (url: string, headers: Record<string, string> = {}, secret = key.secret) =>
      app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${secret}`, ...headers } });

  const detail = `/api/v1/metrics/${metric.id}`;
  const describeMetric = (text: string) =>
    servers.query(servers.primary.url, 'UPDATE metric SET description = $1 WHERE id = $2', [text, metric.id]);

  it('serves reads from the replica: the replica runs the statements, the primary none of them', async () => {
    const a = await instance(60_000);
    expect(a.replica.reads).toBe(true);
    const before = { primary: keyLookups(servers.primary.log()), replica: keyLookups(servers.replica.log()) };
    for (let i = 0; i < 10; i++) {
      for (const url of [detail, '/api/v1/metrics', `${detail}/contract`]) {
        expect((await a.get(url)).statusCode).toBe(200);
      }
    }
    const graphql = await a.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ query: `{ metric(id: "${metric.id}") { name } }` }),
    });
    expect(graphql.json()).toEqual({ data: { metric: { name: 'Revenue' } } });
    // The logs are written as the statements run; give the last lines a moment.
    await until(() => keyLookups(servers.replica.log()) - before.replica >= 31, 'the replica log');
    expect(keyLookups(servers.primary.log()) - before.primary).toBe(0);

    // What the replica has is what is served: a change it has not replayed is not seen.
    await servers.pauseReplay();
    try {
      await describeMetric('Changed while replay is paused.');
      expect((await a.get(detail)).json().data.metric.description).toBe('As first written.');
    } finally {
      await servers.resumeReplay();
      await describeMetric('As first written.');
      await servers.caughtUp();
    }
  });

  it('a lagging replica takes no reads, and a conditional GET never answers older than its tag', async () => {
    const lenient = await instance(60_000);
    const strict = await instance(300);
    const primaryOnly = getter(await buildTestInstance(primaryDb, { defaultRateLimit: 1_000_000 }));
    const old = await lenient.get(detail);
    const oldTag = String(old.headers.etag);
    await servers.pauseReplay();
    try {
      await describeMetric('Changed on the primary.');
      // What a client that read the primary (another instance, a moment ago) holds.
      const fresh = await primaryOnly(detail);
      expect(fresh.json().data.metric.description).toBe('Changed on the primary.');
      const freshTags = {
        detail: String(fresh.headers.etag),
        list: String((await primaryOnly('/api/v1/metrics')).headers.etag),
        contract: String((await primaryOnly(`${detail}/contract`)).headers.etag),
      };
      expect(freshTags.detail).not.toBe(oldTag);

      // The lenient instance still reads the stale replica...
      expect(lenient.replica.reads).toBe(true);
      expect((await lenient.get(detail)).json().data.metric.description).toBe('As first written.');
      // ...but a tag newer than its state is answered from the primary: 304, never the older body.
      for (const [url, tag] of [
        [detail, freshTags.detail],
        ['/api/v1/metrics', freshTags.list],
        [`${detail}/contract`, freshTags.contract],
      ] as const) {
        const res = await lenient.get(url, { 'if-none-match': tag });
        expect(res.statusCode, url).toBe(304);
        expect(res.headers.etag).toBe(tag);
      }
      // A tag of the replica's own state is the client's state: 304 too.
      expect((await lenient.get(detail, { 'if-none-match': oldTag })).statusCode).toBe(304);
      // A tag the primary does not know (another release's) gets the primary's body, not the replica's.
      const unknown = await lenient.get(detail, { 'if-none-match': '"another-release"' });
      expect(unknown.statusCode).toBe(200);
      expect(unknown.json().data.metric.description).toBe('Changed on the primary.');

      // The strict instance sees the replica fall behind and reads from the primary.
      await until(() => !strict.replica.reads, 'the replica to leave the read set');
      expect((await strict.get(detail)).json().data.metric.description).toBe('Changed on the primary.');
      const ready = await strict.app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(200);
      const [status] = ready.json().replicas;
      expect(status).toMatchObject({ reads: false, replica: strict.replica.name });
      expect(status.lag_ms).toBeGreaterThan(300);
      expect(status.reason).toMatch(/ms behind/);
      const scraped = await strict.metrics.registry.metrics();
      expect(scraped).toContain(`db_replica_reads{replica="${strict.replica.name}"} 0`);
      expect(scraped).toMatch(
        /db_replica_lag_seconds\{replica="[^"]+"\} 0\.[3-9]|db_replica_lag_seconds\{replica="[^"]+"\} [1-9]/,
      );
      expect(strict.logs).toContainEqual(
        expect.objectContaining({ level: 'warn', message: 'replica left the read set' }),
      );
    } finally {
      await servers.resumeReplay();
    }
    await until(() => strict.replica.reads, 'the replica to rejoin the read set');
    expect(strict.logs).toContainEqual(
      expect.objectContaining({ level: 'info', message: 'replica joined the read set' }),
    );
    expect((await strict.get(detail)).json().data.metric.description).toBe('Changed on the primary.');
    const ready = await strict.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.json().replicas[0]).toMatchObject({ reads: true });
    await describeMetric('As first written.');
    await servers.caughtUp();
  });

  it('a reader can be asked for a state the client has seen (a feed cursor): the replica when it has it', async () => {
    const a = await instance(60_000);
    const deps = { routing: a.routing, sql: a.database.sql } as unknown as AccessDeps;
    const versionOn = async (sql: SqlReader) =>
      BigInt((await readMetricState(sql, org.id, metric.id, null))?.version ?? 0);
    const versionOnPrimary = async () =>
      BigInt(
        (
          await servers.query<{ v: string }>(
            servers.primary.url,
            'SELECT version AS v FROM metric_etag WHERE metric_id = $1',
            [metric.id],
          )
        )[0]?.v ?? 0,
      );
    const seen = await versionOnPrimary();
    await servers.pauseReplay();
    try {
      await describeMetric('Changed for a cursor.');
      const latest = await versionOnPrimary();
      expect(latest).toBeGreaterThan(seen);
      // A client that saw `seen`: the paused replica has it, and serves it.
      const readerAtLeast = (request: object) => readsOf(deps, request as FastifyRequest).readerAtLeast;
      const onReplica = await readerAtLeast({})?.(async (sql) => (await versionOn(sql)) >= seen);
      expect(onReplica && (await versionOn(onReplica))).toBe(seen);
      // A client that saw `latest`: the replica has not, so the primary serves.
      const onPrimary = await readerAtLeast({})?.(async (sql) => (await versionOn(sql)) >= latest);
      expect(onPrimary && (await versionOn(onPrimary))).toBe(latest);
    } finally {
      await servers.resumeReplay();
      await describeMetric('As first written.');
      await servers.caughtUp();
    }
  });

  it('a replica stopped under load costs no 5xx: its reads run on the primary', async () => {
    const a = await instance(60_000);
    const urls = [detail, '/api/v1/metrics', `${detail}/contract`, '/api/v1/metrics?q=revenue'];
    const statuses: number[] = [];
    try {
      for (let wave = 0; wave < 12; wave++) {
        const requests = Array.from({ length: 24 }, (_, i) => a.get(urls[i % urls.length] as string));
        if (wave === 4) servers.replica.stop();
        for (const res of await Promise.all(requests)) statuses.push(res.statusCode);
      }
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      // Reads were under way on the replica when it stopped: they ran again on the primary.
      expect(a.replica.failedReads).toBeGreaterThan(0);
      expect(a.replica.reads).toBe(false);
      expect(a.logs).toContainEqual(expect.objectContaining({ level: 'warn', message: 'replica left the read set' }));
    } finally {
      servers.replica.start();
    }
    await until(() => a.replica.reads, 'the restarted replica to rejoin the read set', 30_000);
    expect((await a.get(detail)).statusCode).toBe(200);
  });

  it('a replica that stops answering (frozen) costs no 5xx: its reads give up and run on the primary', async () => {
    // A statement timeout of 1 s: a read on the frozen replica is given up after 2 s (src/db/replicas.ts).
    const a = await instance(60_000, {}, 1000);
    try {
      servers.replica.freeze();
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => a.get(i % 2 ? detail : '/api/v1/metrics').then((res) => res.statusCode)),
      );
      expect(answers).toEqual(Array(8).fill(200));
      expect(performance.now() - started).toBeLessThan(10_000);
      await until(() => !a.replica.reads, 'the frozen replica to leave the read set');
      expect(a.replica.reason).toMatch(/not answering|failed a read/);
      // Out of the read set, the next requests do not wait for it at all.
      const next = performance.now();
      expect((await a.get(detail)).statusCode).toBe(200);
      expect(performance.now() - next).toBeLessThan(1000);
    } finally {
      servers.replica.thaw();
    }
    await until(() => a.replica.reads, 'the thawed replica to rejoin the read set', 30_000);
  });

  it('after an apply or a revocation, another instance sharing Redis reads the organization from the primary', async () => {
    const redisPort = await freePort();
    const redis = await startRedis(redisPort);
    closers.push(async () => void redis.kill());
    const shared = { redis: { url: `redis://127.0.0.1:${redisPort}` }, keyPrefix: `rw-test-${redisPort}` };
    const writer = await instance(60_000, shared);
    const reader = await instance(60_000, shared);
    const alone = await instance(60_000);
    const team = await newTeamOrg(primaryDb.prisma, 'ryw');
    await servers.caughtUp();
    await Promise.all([writer, reader, alone].map(({ routing }) => routing.replicas.check()));
    const list = (from: typeof reader) => from.get('/api/v1/metrics', {}, team.key);
    expect((await list(reader)).json().pagination.total).toBe(0);

    await servers.pauseReplay();
    try {
      const applied = await putRegistry(writer.app, doc(team.slug, [docMetric('net_revenue')]), { token: team.token });
      expect(applied.statusCode, applied.body).toBe(200);
      // The other instance knows of the write through Redis: it reads from the primary.
      const seen = await list(reader);
      expect(seen.json().pagination.total).toBe(1);
      expect(seen.json().data[0].name).toBe('Metric net_revenue');
      // An instance without the shared marks reads the paused replica: the write is not there yet.
      expect((await list(alone)).json().pagination.total).toBe(0);
      // The change feed: the apply's events, read from the primary (the writer has the mark)...
      const feed = await writer.get('/api/v1/changes', {}, team.key);
      expect(feed.statusCode, feed.body).toBe(200);
      expect(feed.json().data.length).toBeGreaterThan(0);
      // ...and their cursor, which the paused replica has not reached, is served (from the primary), not refused.
      const after = await alone.get(`/api/v1/changes?after=${feed.json().next_cursor}`, {}, team.key);
      expect(after.statusCode, after.body).toBe(200);
      expect(after.json().data).toEqual([]);
      // The same cursor on GraphQL (and so MCP's list_changes, which runs the same operation).
      const graphql = await alone.app.inject({
        method: 'POST',
        url: '/graphql',
        headers: { authorization: `Bearer ${team.key}`, 'content-type': 'application/json' },
        payload: JSON.stringify({
          query: 'query($after: String) { changes(after: $after) { events { id } nextCursor } }',
          variables: { after: feed.json().next_cursor },
        }),
      });
      expect(graphql.json(), graphql.body).toEqual({
        data: { changes: { events: [], nextCursor: feed.json().next_cursor } },
      });
    } finally {
      await servers.resumeReplay();
    }
    // Once the replica has replayed past the write, the organization reads from it again.
    await servers.caughtUp();
    await reader.routing.replicas.check();
    const before = keyLookups(servers.replica.log());
    expect((await list(reader)).json().pagination.total).toBe(1);
    await until(() => keyLookups(servers.replica.log()) > before, 'a read on the replica');

    // A key revoked on one instance is refused at once by the other, whatever the replica has replayed.
    await servers.pauseReplay();
    try {
      const [row] = await servers.query<{ id: string }>(
        servers.primary.url,
        'SELECT id FROM api_key WHERE key_hash = $1',
        [hashSecret(team.key)],
      );
      const revoked = await writer.app.inject({
        method: 'DELETE',
        url: `/api/api-keys/${row?.id}`,
        headers: { host: HOST, cookie: `session=${team.ownerSession}` },
      });
      expect(revoked.statusCode, revoked.body).toBe(200);
      const refused = await list(reader);
      expect(refused.statusCode).toBe(401);
      expect(refused.json()).toEqual({ error: 'API key has been revoked' });
      expect((await list(alone)).statusCode).toBe(200);
    } finally {
      await servers.resumeReplay();
    }
  });
});
