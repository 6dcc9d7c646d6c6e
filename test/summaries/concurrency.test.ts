/**
 * Concurrent misses of one discussion state: one generation, one meter
 * event, exactly one response with `charged: true`, in one instance (the
 * in-flight generation is shared) and across two instances on the same
 * database (the advisory lock, or PGlite's exclusive transaction).
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetricJson, type OrgBuilder, registry } from '../fixtures/registry.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { type FakeOpenAI, startFakeOpenAI } from './fake-openai.js';
import { meta, rowCounts, type SummaryResponse, summaryOf } from './helpers.js';

const r = registry();
const org = r.org({ plan: 'enterprise' });
const key = org.key();

function discussed(builder: OrgBuilder): MetricJson {
  const metric = builder.metric();
  builder.message(builder.thread(metric, { intent: 'objection' }), { body: 'This double counts refunds.' });
  return metric;
}
const oneInstance = discussed(org);
const twoInstances = discussed(org);
const extractiveOne = discussed(org);

let fake: FakeOpenAI;
let t: TestApp;
let second: FastifyInstance;
let extractive: FastifyInstance;
beforeAll(async () => {
  fake = await startFakeOpenAI();
  // Slow enough that all requests miss while the first one generates.
  fake.delayMs = 300;
  const summaries = {
    provider: { kind: 'openai' as const, baseUrl: fake.baseUrl, apiKey: 'test-key', model: 'fake-model' },
    timeoutMs: 5_000,
  };
  t = await startTestApp({ fixture: r.build(), summaries });
  second = await buildTestInstance(t.database, { summaries });
  extractive = await buildTestInstance(t.database);
});
afterAll(async () => {
  await second?.close();
  await extractive?.close();
  await t?.close();
  await fake?.close();
});

function expectOneCharged(responses: SummaryResponse[]) {
  expect(responses.every((res) => res.reason === undefined)).toBe(true);
  expect(new Set(responses.map((res) => res.data.discussion_summary)).size).toBe(1);
  expect(responses.filter((res) => meta(res).charged)).toHaveLength(1);
  expect(responses.filter((res) => res.charged === '1')).toHaveLength(1);
  // The generating request is the one miss; the others were served by its summary.
  expect(responses.filter((res) => !meta(res).cache_hit)).toHaveLength(1);
}

function getter(app: FastifyInstance) {
  return {
    get: (url: string, secret?: string | null) =>
      app.inject({ method: 'GET', url, headers: secret ? { authorization: `Bearer ${secret}` } : {} }),
  };
}

describe('concurrent summary=true requests for one metric', () => {
  it('20 at once on one instance: one generation, one meter event, one charged response', async () => {
    const before = fake.requests.length;
    const responses = await Promise.all(Array.from({ length: 20 }, () => summaryOf(t, oneInstance.id, key.secret)));
    expectOneCharged(responses);
    expect(fake.requests.length - before).toBe(1);
    expect(await rowCounts(t.database, oneInstance.id)).toEqual({ summaries: 1, meterEvents: 1 });
  });

  it('20 at once across two instances on the same database: still one of each', async () => {
    const before = fake.requests.length;
    const instances = [getter(t.app), getter(second)];
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => summaryOf(instances[i % 2] as never, twoInstances.id, key.secret)),
    );
    expectOneCharged(responses);
    expect(fake.requests.length - before).toBe(1);
    expect(await rowCounts(t.database, twoInstances.id)).toEqual({ summaries: 1, meterEvents: 1 });
  });

  it('20 at once with the extractive generator: one row, one meter event, one charged response', async () => {
    const app = getter(extractive);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => summaryOf(app as never, extractiveOne.id, key.secret)),
    );
    expectOneCharged(responses);
    expect(await rowCounts(t.database, extractiveOne.id)).toEqual({ summaries: 1, meterEvents: 1 });
  });
});
