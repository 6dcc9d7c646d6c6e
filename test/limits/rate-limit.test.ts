/**
 * Per-key rate limits over HTTP: exact budgets, independent keys, headers,
 * one budget shared by two instances through the real Redis, and falling
 * back to in-process windows while a Redis of this test's own is down.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyRateLimiter } from '../../src/limits/key-rate-limiter.js';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance, silentLogger, startTestApp, type TestApp } from '../helpers/app.js';
import { lacks, REDIS } from '../helpers/needs.js';
import { freePort } from '../helpers/ports.js';
import { startRedis } from '../helpers/redis.js';

const redisUrl = process.env.REDIS_URL;

const fixture = registry();
const org = fixture.org({ slug: 'limits' });
const three = org.key({ rate_limit_per_minute: 3 });
const otherThree = org.key({ rate_limit_per_minute: 3 });
const serverDefault = org.key({ rate_limit_per_minute: null });
const sharedFive = org.key({ rate_limit_per_minute: 5 });
const definitionOnly = org.key({ rate_limit_per_minute: 5, scopes: ['definition:read'] });
const revenue = org.metric({ name: 'Revenue' });

function get(app: FastifyInstance, secret: string, url = '/api/v1/metrics') {
  return app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${secret}` } });
}

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build(), defaultRateLimit: 2 });
});
afterAll(() => t.close());

describe('per-key rate limit (in process)', () => {
  it('gives a key exactly its own budget, with the budget left in RateLimit headers', async () => {
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get(t.app, three.secret);
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('3');
      remaining.push(String(res.headers['ratelimit-remaining']));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await get(t.app, three.secret, '/api/v1/metrics/not-a-uuid');
    // The limit comes before the route's own validation.
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: 'Rate limit exceeded' });
    const retryAfter = Number(limited.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it('keeps keys independent', async () => {
    expect((await get(t.app, otherThree.secret)).statusCode).toBe(200);
  });

  it('gives a key without its own limit the server default', async () => {
    expect((await get(t.app, serverDefault.secret)).statusCode).toBe(200);
    expect((await get(t.app, serverDefault.secret)).statusCode).toBe(200);
    expect((await get(t.app, serverDefault.secret)).statusCode).toBe(429);
  });

  it('gives back the window of a request refused before the rate limit check', async () => {
    // definition:read alone does not reach the contract: 403, and the key's window is as it was.
    const refused = await get(t.app, definitionOnly.secret, `/api/v1/metrics/${revenue.id}/contract`);
    expect(refused.statusCode).toBe(403);
    const admitted = await get(t.app, definitionOnly.secret);
    expect(admitted.statusCode).toBe(200);
    expect(admitted.headers['ratelimit-remaining']).toBe('4');
  });

  it('counts GraphQL requests against the same budget', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${three.secret}`, 'content-type': 'application/json' },
      payload: { query: '{ metrics { pagination { total } } }' },
    });
    expect(res.statusCode).toBe(429);
  });
});

describe.skipIf(lacks(REDIS))('per-key rate limit shared through Redis', () => {
  it('enforces one budget across two instances', async () => {
    const keyPrefix = `test:${randomBytes(6).toString('hex')}`;
    const limiters = [0, 1].map(() => createKeyRateLimiter({ redisUrl, keyPrefix, logger: silentLogger }));
    await Promise.all(limiters.map((limiter) => limiter.ready()));
    const apps = await Promise.all(limiters.map((rateLimiter) => buildTestInstance(t.database, { rateLimiter })));
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        statuses.push((await get(apps[i % 2] as FastifyInstance, sharedFive.secret)).statusCode);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    } finally {
      for (const app of apps) await app.close();
      for (const limiter of limiters) await limiter.close();
    }
  });
});

describe.skipIf(lacks(REDIS))('admission on a Redis of its own', () => {
  it('spends the client throttle and the key window in one command, and gives the window back when throttled', async () => {
    const port = await freePort();
    const redis = await startRedis(port);
    const rateLimiter = createKeyRateLimiter({ redisUrl: `redis://127.0.0.1:${port}`, logger: silentLogger });
    const probe = new Redis(`redis://127.0.0.1:${port}`);
    // Calls the server counted (INFO commandstats; the calls a script makes are counted too): the
    // admission's scripts, and anything else but the probe's own INFO and the script's commands.
    // (Counted by command, not by the server's read events, which made the count flaky.)
    const inScript = new Set(['set', 'incrby', 'pttl', 'expire', 'info']);
    const calls = async () => {
      const counted = { scripts: 0, others: 0 };
      for (const [, name, n] of (await probe.info('commandstats')).matchAll(/cmdstat_([^:]+):calls=(\d+)/g)) {
        if (name === 'eval' || name === 'evalsha') counted.scripts += Number(n);
        else if (!inScript.has(name as string)) counted.others += Number(n);
      }
      return counted;
    };
    // Windows counted: INCRBY runs once per window, inside the admission's script.
    const increments = async () =>
      Number(/cmdstat_incrby:calls=(\d+)/.exec(await probe.info('commandstats'))?.[1] ?? 0);
    try {
      await rateLimiter.ready();
      const app = await buildTestInstance(t.database, {
        rateLimiter,
        throttle: { pointsPerMinute: 2, failureCost: 5 },
      });
      try {
        const incrementsBefore = await increments();
        const before = await calls();
        const first = await get(app, sharedFive.secret);
        expect(first.statusCode).toBe(200);
        expect(first.headers['ratelimit-remaining']).toBe('4');
        // The request's admission is one command (its script), and nothing else...
        const after = await calls();
        expect(after.scripts - before.scripts).toBe(1);
        expect(after.others - before.others).toBe(0);
        // ...which counts both windows: the client's throttle and the key's.
        expect((await increments()) - incrementsBefore).toBe(2);

        expect((await get(app, sharedFive.secret)).statusCode).toBe(200);
        // The client's third request in the minute is throttled: the key's window gets its unit back.
        const throttled = await get(app, sharedFive.secret);
        expect(throttled.statusCode).toBe(429);
        expect(throttled.headers['ratelimit-remaining']).toBeUndefined();
        const windows = await probe.keys('*key:*');
        expect(windows).toHaveLength(1);
        expect(await probe.get(windows[0] as string)).toBe('2');
      } finally {
        await app.close();
      }
    } finally {
      probe.disconnect();
      await rateLimiter.close();
      redis.kill('SIGKILL');
    }
  });
});

describe.skipIf(lacks(REDIS))('a Redis outage', () => {
  it('keeps serving on in-process windows and goes back to Redis when it returns', async () => {
    const port = await freePort();
    let redis = await startRedis(port);
    const rateLimiter = createKeyRateLimiter({ redisUrl: `redis://127.0.0.1:${port}`, logger: silentLogger });
    try {
      await rateLimiter.ready();
      const before = await rateLimiter.consume('outage', 100);
      expect(before).toMatchObject({ allowed: true, remaining: 99 });

      redis.kill('SIGKILL');
      await new Promise((resolve) => redis.once('exit', resolve));
      // Served by the insurance limiter, which starts its own window.
      const during = await rateLimiter.consume('outage', 100);
      expect(during.allowed).toBe(true);
      const app = await buildTestInstance(t.database, { rateLimiter });
      expect((await get(app, otherThree.secret)).statusCode).toBe(200);
      const notReady = await app.inject({ method: 'GET', url: '/readyz' });
      expect(notReady.statusCode).toBe(503);
      expect(notReady.json()).toMatchObject({ database: 'up', redis: 'down' });

      redis = await startRedis(port);
      // Longer than the client's reconnect back-off (at most 2 s).
      await new Promise((resolve) => setTimeout(resolve, 2500));
      // Back on Redis, which restarted empty: the window starts again (99
      // left), where the insurance window would say 98.
      const after = await rateLimiter.consume('outage', 100);
      expect(after).toMatchObject({ allowed: true, remaining: 99 });
      const probe = new Redis(`redis://127.0.0.1:${port}`);
      expect(await probe.keys('*outage*')).toHaveLength(1);
      probe.disconnect();
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      await app.close();
    } finally {
      await rateLimiter.close();
      redis.kill('SIGKILL');
    }
  }, 30_000);
});
