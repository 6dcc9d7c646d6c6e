/**
 * Redis stopped under load and started again: as documented
 * (docs/operations.md, docs/security.md), rate limits fall back to each
 * instance's in-process windows, so every route keeps answering (never a 5xx)
 * and a key's limit still holds; /readyz names Redis as down; once Redis is
 * back the service uses it again by itself, within seconds. The test runs a
 * Redis server of its own on a spare port (never the shared one).
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyRateLimiter, type KeyRateLimiter } from '../../src/limits/key-rate-limiter.js';
import { registry } from '../fixtures/registry.js';
import { silentLogger, startTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/ports.js';
import { startRedis } from '../helpers/redis.js';
import { doc, docMetric, newTeamOrg, putRegistry, type TeamOrg } from '../registry/support.js';

const runnable = spawnSync('redis-server', ['--version']).status === 0;

const fixture = registry();
const org = fixture.org({ slug: 'redis-outage' });
const key = org.key({ rate_limit_per_minute: 1_000_000 });
const limited = org.key({ rate_limit_per_minute: 3 });
const metric = org.metric({ name: 'Revenue' });

/** Generous: the client reconnects with a back-off of at most 2 s, on a shared, small machine. */
const RECOVERY_BOUND_MS = 15_000;

describe.skipIf(!runnable)('a Redis outage', () => {
  let port: number;
  let redis: ChildProcess;
  let rateLimiter: KeyRateLimiter;
  let t: TestApp;
  let team: TeamOrg;

  const get = (url: string, secret = key.secret) => t.get(url, secret);
  const graphql = () =>
    t.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ query: `{ metric(id: "${metric.id}") { id name } }` }),
    });
  const apply = (label: string) =>
    putRegistry(t, doc(team.slug, [docMetric('during_redis_outage', { description: `${label}.` })]), {
      token: team.token,
    });
  const stopRedis = async () => {
    const exited = new Promise((resolve) => redis.once('exit', resolve));
    redis.kill('SIGKILL');
    await exited;
  };

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
    rateLimiter = createKeyRateLimiter({ redisUrl: `redis://127.0.0.1:${port}`, logger: silentLogger });
    await rateLimiter.ready();
    t = await startTestApp({ fixture: fixture.build(), rateLimiter });
    team = await newTeamOrg(t.database.prisma, 'redis-outage');
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await rateLimiter?.close();
    redis?.kill('SIGKILL');
  });

  it('keeps serving every route on in-process windows, names Redis in /readyz, and goes back to it', async () => {
    expect((await get(`/api/v1/metrics/${metric.id}`)).statusCode).toBe(200);
    expect((await t.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);

    // Under load: requests are in flight when Redis goes away.
    const inFlight = Array.from({ length: 24 }, (_, i) =>
      [
        () => get('/api/v1/metrics'),
        () => get(`/api/v1/metrics/${metric.id}/contract`),
        graphql,
        () => apply(`In flight ${i}`),
      ][i % 4]?.(),
    );
    await stopRedis();
    for (const res of await Promise.all(inFlight)) {
      expect(res?.statusCode, res?.body).toBe(200);
    }

    // Every route answers during the outage, the write routes included.
    expect((await get('/api/v1/metrics')).statusCode).toBe(200);
    expect((await get(`/api/v1/metrics/${metric.id}`)).statusCode).toBe(200);
    const answered = await graphql();
    expect(answered.statusCode, answered.body).toBe(200);
    expect(answered.json()).toEqual({ data: { metric: { id: metric.id, name: 'Revenue' } } });
    expect((await apply('During')).statusCode).toBe(200);

    // A key's limit still holds, in this instance's own window: not opened up, not a 5xx.
    for (let i = 0; i < 3; i++) expect((await get('/api/v1/metrics', limited.secret)).statusCode).toBe(200);
    const refused = await get('/api/v1/metrics', limited.secret);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toEqual({ error: 'Rate limit exceeded' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    const ready = await t.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toEqual({ status: 'unavailable', database: 'up', redis: 'down' });

    redis = await startRedis(port);
    const started = performance.now();
    let back = await t.inject({ method: 'GET', url: '/readyz' });
    while (back.statusCode !== 200 && performance.now() - started < RECOVERY_BOUND_MS) {
      expect(back.statusCode).toBe(503);
      await new Promise((resolve) => setTimeout(resolve, 100));
      back = await t.inject({ method: 'GET', url: '/readyz' });
    }
    const recoveryMs = performance.now() - started;
    console.info(`[outage] Redis back: ready again after ${Math.round(recoveryMs)} ms`);
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json()).toEqual({ status: 'ready', database: 'up', redis: 'up' });

    // The windows are Redis's again (it restarted empty): a request is counted there.
    expect((await get('/api/v1/metrics')).statusCode).toBe(200);
    const probe = new Redis(`redis://127.0.0.1:${port}`);
    try {
      expect((await probe.keys('*')).length).toBeGreaterThan(0);
    } finally {
      probe.disconnect();
    }
  }, 60_000);

  it('answers while Redis is frozen (its connection open, nothing answering), and uses it again once it thaws', async () => {
    const probe = new Redis(`redis://127.0.0.1:${port}`);
    const scriptCalls = async () =>
      [...(await probe.info('commandstats')).matchAll(/cmdstat_(?:eval|evalsha):calls=(\d+)/g)].reduce(
        (sum, [, n]) => sum + Number(n),
        0,
      );
    try {
      expect((await get(`/api/v1/metrics/${metric.id}`)).statusCode).toBe(200);
      redis.kill('SIGSTOP');
      try {
        // Each is answered on in-process windows once its spend has waited out the command timeout
        // (or Redis is passed over after one did), not held for as long as Redis stays frozen.
        const responses = await Promise.all(Array.from({ length: 20 }, () => get(`/api/v1/metrics/${metric.id}`)));
        expect(responses.map((res) => res.statusCode)).toEqual(Array(20).fill(200));
        const refused = await Promise.all(Array.from({ length: 3 }, () => get('/api/v1/metrics', limited.secret)));
        expect(refused.map((res) => res.statusCode)).not.toContain(500);
      } finally {
        redis.kill('SIGCONT');
      }
      const before = await scriptCalls();
      await expect
        .poll(
          async () => {
            await get(`/api/v1/metrics/${metric.id}`);
            return (await scriptCalls()) > before;
          },
          { timeout: RECOVERY_BOUND_MS, interval: 200 },
        )
        .toBe(true);
    } finally {
      probe.disconnect();
    }
  }, 60_000);
});
