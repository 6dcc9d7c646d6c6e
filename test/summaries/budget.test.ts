/**
 * What summary generations may take: the daily cap holds for concurrent
 * generations of different metrics, across two instances; a generation
 * waiting on a slow generator holds no database connection, so key lookups
 * and reads of other keys are answered meanwhile on a pool of 2; and at most
 * SUMMARY_MAX_CONCURRENT generations run at once per instance.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { organizationShare } from '../../src/summaries/service.js';
import { type MetricJson, type OrgBuilder, registry } from '../fixtures/registry.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { type FakeOpenAI, startFakeOpenAI } from './fake-openai.js';
import { meta, type SummaryResponse, summaryOf } from './helpers.js';

function discussed(builder: OrgBuilder): MetricJson {
  const metric = builder.metric();
  builder.message(builder.thread(metric, { intent: 'objection' }), { body: 'This double counts refunds.' });
  return metric;
}

function getter(app: FastifyInstance) {
  return {
    get: (url: string, secret?: string | null) =>
      app.inject({ method: 'GET', url, headers: secret ? { authorization: `Bearer ${secret}` } : {} }),
  };
}

/** Resolves once `condition` holds; fails the test if it does not within `limitMs` (a hang guard, not a speed check). */
async function until(condition: () => boolean, what: string, limitMs = 15_000): Promise<void> {
  const giveUp = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > giveUp) throw new Error(`gave up waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A promise with a flag that says whether it has settled. */
function tracked<T>(promise: Promise<T>) {
  const state = { settled: false, promise };
  promise.then(
    () => {
      state.settled = true;
    },
    () => {
      state.settled = true;
    },
  );
  return state;
}

const r = registry();
// One database with a pool of 2 (embedded: one connection) and instances of different limits over it.
const capped = r.org({ plan: 'enterprise', summary_daily_cap: 10 });
const cappedKey = capped.key({ rate_limit_per_minute: 1000 });
const cappedMetrics = Array.from({ length: 50 }, () => discussed(capped));

const slow = r.org({ plan: 'enterprise' });
const summarizing = slow.key({ rate_limit_per_minute: 1000 });
const reader = slow.key({ rate_limit_per_minute: 1000 });
const slowMetrics = Array.from({ length: 4 }, () => discussed(slow));
const other = r.org({ plan: 'team' });
const otherReader = other.key();
other.metric();

const limited = r.org({ plan: 'enterprise' });
const limitedKey = limited.key({ rate_limit_per_minute: 1000 });
const limitedMetrics = Array.from({ length: 3 }, () => discussed(limited));
const neighbour = r.org({ plan: 'enterprise' });
const neighbourKey = neighbour.key({ rate_limit_per_minute: 1000 });
const neighbourMetrics = Array.from({ length: 3 }, () => discussed(neighbour));
const third = r.org({ plan: 'enterprise' });
const thirdKey = third.key({ rate_limit_per_minute: 1000 });
const thirdMetric = discussed(third);

let fake: FakeOpenAI;
let t: TestApp;
const instances: FastifyInstance[] = [];
async function instance(maxConcurrent: number): Promise<FastifyInstance> {
  const app = await buildTestInstance(t.database, { summaries: { ...summaries(), maxConcurrent } });
  instances.push(app);
  return app;
}
const summaries = () => ({
  provider: { kind: 'openai' as const, baseUrl: fake.baseUrl, apiKey: 'test-key', model: 'fake-model' },
  timeoutMs: 10_000,
});
beforeAll(async () => {
  fake = await startFakeOpenAI();
  t = await startTestApp({ fixture: r.build(), poolSize: 2, summaries: { ...summaries(), maxConcurrent: 4 } });
}, 180_000);
afterAll(async () => {
  for (const app of instances) await app.close();
  await t?.close();
  await fake?.close();
});

describe('the daily cap under concurrency', () => {
  it('50 concurrent misses on 50 metrics, cap 10, two instances: exactly 10 generated and billed', async () => {
    // Every generation is still running when the last request checks the cap.
    fake.hold = true;
    const before = fake.requests.length;
    const apps = [getter(await instance(50)), getter(await instance(50))];
    const pending = cappedMetrics.map((metric, i) => summaryOf(apps[i % 2] as never, metric.id, cappedKey.secret));
    await until(() => fake.requests.length - before >= 10, '10 generations in flight');
    fake.release();
    const responses: SummaryResponse[] = await Promise.all(pending);

    expect(fake.requests.length - before).toBe(10);
    expect(responses.filter((res) => res.data.discussion_summary !== null)).toHaveLength(10);
    expect(responses.filter((res) => meta(res).charged)).toHaveLength(10);
    expect(responses.filter((res) => res.reason === 'daily_cap_exceeded')).toHaveLength(40);
    expect(await t.database.prisma.discussionSummary.count({ where: { orgId: capped.json.id } })).toBe(10);
    expect(await t.database.prisma.meterEvent.count({ where: { orgId: capped.json.id } })).toBe(10);
    // Nothing is left claimed once the generations are stored.
    const claims = await t.database.prisma.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM discussion_summary_claim`;
    expect(claims[0]?.n).toBe(0);
  });
});

describe('a generation waiting on a slow generator', () => {
  it('holds no connection: other keys are answered while 4 generations are pending on a pool of 2', async () => {
    fake.hold = true;
    const before = fake.requests.length;
    // 8 slots: one organization may run 4 of them.
    const app = getter(await instance(8));
    const pending = slowMetrics.map((metric) => tracked(summaryOf(app as never, metric.id, summarizing.secret)));
    await until(() => fake.requests.length - before >= 4, '4 generations waiting on the generator');

    const reads = await Promise.all([
      t.get('/api/v1/metrics', reader.secret),
      t.get(`/api/v1/metrics/${slowMetrics[0]?.id}`, reader.secret),
      t.get('/api/v1/metrics', otherReader.secret),
      t.inject({
        method: 'POST',
        url: '/graphql',
        headers: { authorization: `Bearer ${otherReader.secret}`, 'content-type': 'application/json' },
        payload: { query: '{ metrics { items { name } } }' },
      }),
    ]);
    expect(reads.map((res) => res.statusCode)).toEqual([200, 200, 200, 200]);
    // Answered while every generation is still waiting for the generator.
    expect(pending.map((s) => s.settled)).toEqual([false, false, false, false]);

    fake.release();
    const responses = await Promise.all(pending.map((s) => s.promise));
    expect(responses.map((res) => res.reason)).toEqual([undefined, undefined, undefined, undefined]);
    expect(responses.every((res) => meta(res).charged)).toBe(true);
  });
});

describe('SUMMARY_MAX_CONCURRENT', () => {
  it('4 slots, 2 per organization: a third miss of one organization is generator_busy while another runs 2; a third organization finds none; each generates later', async () => {
    fake.hold = true;
    const before = fake.requests.length;
    const app = getter(await instance(4));
    const [first, second, lastLimited] = limitedMetrics as [MetricJson, MetricJson, MetricJson];
    const running = [first, second].map((metric) => tracked(summaryOf(app as never, metric.id, limitedKey.secret)));
    await until(() => fake.requests.length - before >= 2, '2 generations of one organization waiting');

    // The organization's share is taken: its third miss is busy, unbilled, though 2 slots are free.
    const busy = await summaryOf(app as never, lastLimited.id, limitedKey.secret);
    expect(busy.reason).toBe('generator_busy');
    expect(busy.data.discussion_summary).toBeNull();
    expect(meta(busy)).toEqual({ cache_hit: false, charged: false });
    expect(fake.requests.length - before).toBe(2);

    // Another organization still gets its 2; its third is busy too.
    const [n1, n2, n3] = neighbourMetrics as [MetricJson, MetricJson, MetricJson];
    const neighbours = [n1, n2].map((metric) => tracked(summaryOf(app as never, metric.id, neighbourKey.secret)));
    await until(() => fake.requests.length - before >= 4, '2 generations of the other organization waiting');
    expect((await summaryOf(app as never, n3.id, neighbourKey.secret)).reason).toBe('generator_busy');
    // All 4 slots are taken: a third organization, with its whole share free, is busy.
    expect((await summaryOf(app as never, thirdMetric.id, thirdKey.secret)).reason).toBe('generator_busy');
    expect(fake.requests.length - before).toBe(4);
    expect([...running, ...neighbours].map((s) => s.settled)).toEqual([false, false, false, false]);

    fake.release();
    const done = await Promise.all([...running, ...neighbours].map((s) => s.promise));
    expect(done.map((res) => res.reason)).toEqual([undefined, undefined, undefined, undefined]);
    for (const [metric, secret] of [
      [lastLimited, limitedKey.secret],
      [n3, neighbourKey.secret],
      [thirdMetric, thirdKey.secret],
    ] as const) {
      const later = await summaryOf(app as never, metric.id, secret);
      expect(later.reason).toBeUndefined();
      expect(meta(later).charged).toBe(true);
    }
    expect(await t.database.prisma.meterEvent.count({ where: { orgId: limited.json.id } })).toBe(3);
    expect(await t.database.prisma.meterEvent.count({ where: { orgId: neighbour.json.id } })).toBe(3);
  });

  it('the share is half the slots, at least 1', () => {
    expect([1, 2, 3, 4, 5, 8].map(organizationShare)).toEqual([1, 1, 1, 2, 2, 4]);
  });
});
