/**
 * The key rate limiter's batched spends (src/limits/key-rate-limiter.ts):
 * the spendEach() calls of one event-loop turn go to Redis as one script
 * call, and each caller still gets its own counts, in order. While Redis
 * does not answer, or when the call fails, the in-process windows answer.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMISSIONS_PER_CALL, createKeyRateLimiter, type KeyRateLimiter } from '../../src/limits/key-rate-limiter.js';
import { registry } from '../fixtures/registry.js';
import { silentLogger, startTestApp, type TestApp } from '../helpers/app.js';
import { lacks, REDIS } from '../helpers/needs.js';
import { freePort } from '../helpers/ports.js';
import { startRedis } from '../helpers/redis.js';

const redisUrl = process.env.REDIS_URL;

const uniquePrefix = () => `test:${randomBytes(6).toString('hex')}`;

/** The calls Redis counted of `command` (INFO commandstats), 0 before the first. */
async function callsOf(probe: Redis, command: string): Promise<number> {
  const stats = await probe.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
}

describe.skipIf(lacks(REDIS))('spends of one turn, on a Redis of its own', () => {
  // INFO commandstats counts every client of the server: on a Redis of this test's own, no other
  // test's scripts run between the two readings.
  let server: ChildProcess;
  let url: string;
  beforeAll(async () => {
    const port = await freePort();
    server = await startRedis(port);
    url = `redis://127.0.0.1:${port}`;
  });
  afterAll(() => {
    server?.kill('SIGKILL');
  });

  /**
   * Runs `work` with a limiter of a fresh prefix on this Redis, whose connection has made its first
   * script call (an EVAL, which loads the script; the later ones are EVALSHA), and a probe client.
   */
  async function withWarmLimiter(work: (limiter: KeyRateLimiter, probe: Redis, keyPrefix: string) => Promise<void>) {
    const keyPrefix = uniquePrefix();
    const limiter = createKeyRateLimiter({ redisUrl: url, keyPrefix, logger: silentLogger });
    const probe = new Redis(url);
    try {
      await limiter.ready();
      await limiter.spendEach(['warm-up']);
      await work(limiter, probe, keyPrefix);
    } finally {
      probe.disconnect();
      await limiter.close();
    }
  }

  it('go to Redis as one script call, and each caller gets its own counts, in order', () =>
    withWarmLimiter(async (limiter, probe, keyPrefix) => {
      const evalshaBefore = await callsOf(probe, 'evalsha');
      const evalBefore = await callsOf(probe, 'eval');

      const spends = await Promise.all(Array.from({ length: 50 }, () => limiter.spendEach(['a', 'b'])));

      expect((await callsOf(probe, 'evalsha')) - evalshaBefore).toBe(1);
      expect((await callsOf(probe, 'eval')) - evalBefore).toBe(0);
      // The n-th caller of the turn spent the n-th unit of each window.
      const one50 = Array.from({ length: 50 }, (_, i) => i + 1);
      expect(spends.map(([a]) => a.consumed)).toEqual(one50);
      expect(spends.map(([, b]) => b.consumed)).toEqual(one50);
      for (const spend of spends.flat()) {
        expect(spend.msBeforeReset).toBeGreaterThan(0);
        expect(spend.msBeforeReset).toBeLessThanOrEqual(60_000);
      }
      // The windows the script counted are the limiter's own (`<prefix>:w:<subject>`).
      expect(await probe.get(`${keyPrefix}:w:a`)).toBe('50');
      expect(await probe.get(`${keyPrefix}:w:b`)).toBe('50');
    }));

  it(`take one script call per ${ADMISSIONS_PER_CALL} admissions, the counts still in order`, () =>
    withWarmLimiter(async (limiter, probe) => {
      const before = await callsOf(probe, 'evalsha');
      const count = 2 * ADMISSIONS_PER_CALL + 1;
      const spends = await Promise.all(Array.from({ length: count }, () => limiter.spendEach(['c'])));
      expect((await callsOf(probe, 'evalsha')) - before).toBe(3);
      expect(spends.map(([c]) => c.consumed)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    }));
});

describe.skipIf(lacks(REDIS))('a spends call that Redis fails', () => {
  it('answers every caller of the turn from the in-process windows, and the next turn goes to Redis', async () => {
    const keyPrefix = uniquePrefix();
    const limiter = createKeyRateLimiter({ redisUrl, keyPrefix, logger: silentLogger });
    const probe = new Redis(redisUrl as string);
    try {
      await limiter.ready();
      // Redis's window of `good` stands at 10, so a count of Redis's would be 11 or more; `broken` is
      // no counter, so the script fails at its INCRBY (at the first key: it writes nothing).
      await probe.set(`${keyPrefix}:w:good`, '10', 'EX', 60);
      await probe.set(`${keyPrefix}:w:broken`, 'not a number', 'EX', 60);

      const spends = await Promise.all([
        limiter.spendEach(['broken']),
        limiter.spendEach(['good']),
        limiter.spendEach(['good']),
        limiter.spendEach(['good']),
      ]);
      expect(spends.map((spend) => spend.map((s) => s.consumed))).toEqual([[1], [1], [2], [3]]);
      expect(await probe.get(`${keyPrefix}:w:good`)).toBe('10');

      const [next] = await limiter.spendEach(['good']);
      expect(next.consumed).toBe(11);
    } finally {
      await probe.del(`${keyPrefix}:w:good`, `${keyPrefix}:w:broken`);
      probe.disconnect();
      await limiter.close();
    }
  });
});

describe('spends while Redis is unreachable', () => {
  let limiter: KeyRateLimiter;
  beforeAll(() => {
    // Nothing listens on port 1: the client never becomes ready.
    limiter = createKeyRateLimiter({
      redisUrl: 'redis://127.0.0.1:1',
      keyPrefix: uniquePrefix(),
      logger: silentLogger,
    });
  });
  afterAll(() => limiter.close());

  it('are answered from the in-process windows, each caller with its own count', async () => {
    const spends = await Promise.all([
      limiter.spendEach(['down']),
      limiter.spendEach(['down']),
      limiter.spendEach(['down']),
    ]);
    expect(spends.map(([spend]) => spend.consumed)).toEqual([1, 2, 3]);
    expect(await limiter.reachable()).toBe(false);
  });
});

describe.skipIf(lacks(REDIS))('concurrent requests of one key, limited through Redis', () => {
  const fixture = registry();
  const org = fixture.org({ slug: 'batched-spends' });
  const ten = org.key({ rate_limit_per_minute: 10 });
  org.metric({ name: 'Revenue' });

  let limiter: KeyRateLimiter;
  let t: TestApp;
  beforeAll(async () => {
    limiter = createKeyRateLimiter({ redisUrl, keyPrefix: uniquePrefix(), logger: silentLogger });
    await limiter.ready();
    t = await startTestApp({ fixture: fixture.build(), rateLimiter: limiter });
  });
  afterAll(async () => {
    await t?.close();
    await limiter?.close();
  });

  it('admit exactly the key budget: 10 of 40 at once, the other 30 are 429', async () => {
    const responses = await Promise.all(Array.from({ length: 40 }, () => t.get('/api/v1/metrics', ten.secret)));
    const statuses = responses.map((res) => res.statusCode);
    expect(statuses.filter((status) => status === 200)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(30);
    // Each admitted request was told a budget left of its own: 9 down to 0, each once.
    const remaining = responses
      .filter((res) => res.statusCode === 200)
      .map((res) => Number(res.headers['ratelimit-remaining']))
      .sort((x, y) => x - y);
    expect(remaining).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
