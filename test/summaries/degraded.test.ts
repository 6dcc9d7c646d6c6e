/**
 * Degraded summaries (contract 4.3) over HTTP with a local OpenAI-compatible
 * server: timeout, provider error, daily cap, pricing unavailable, and a
 * failed discussion read. Each is 200 with the rest of the contract,
 * `discussion_summary: null`, not charged, nothing billed, and an
 * explanatory `X-Discussion-Summary`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetricJson, type OrgBuilder, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type FakeOpenAI, startFakeOpenAI } from './fake-openai.js';
import { meta, rowCounts, type SummaryResponse, summaryOf } from './helpers.js';

// Far above a first request on a busy machine, far below the slow provider's 5 s.
const TIMEOUT_MS = 2_000;

const r = registry();
const org = r.org({ plan: 'team' });
const key = org.key();
function discussed(builder: OrgBuilder, body = 'Refund timing differs by region.'): MetricJson {
  const metric = builder.metric();
  builder.message(builder.thread(metric, { intent: 'objection', title: 'Refunds' }), { body });
  return metric;
}
const answered = discussed(org);
const slow = discussed(org);
const failing = discussed(org);
const huge = discussed(org, 'x'.repeat(30_000));

const capped = r.org({ plan: 'starter', summary_daily_cap: 1 });
const cappedKey = capped.key();
const cappedFirst = discussed(capped);
const cappedSecond = discussed(capped);

const unpriced = r.org({ plan: 'team', pricing_state: 'unavailable' });
const unpricedKey = unpriced.key();
const unpricedMetric = discussed(unpriced);

const flipping = r.org({ plan: 'team' });
const flippingKey = flipping.key();
const flippingMetric = discussed(flipping);

let fake: FakeOpenAI;
let t: TestApp;
beforeAll(async () => {
  fake = await startFakeOpenAI();
  t = await startTestApp({
    fixture: r.build(),
    summaries: {
      provider: { kind: 'openai', baseUrl: fake.baseUrl, apiKey: 'sk-test', model: 'fake-model' },
      timeoutMs: TIMEOUT_MS,
    },
  });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

function expectDegraded(res: SummaryResponse, reason: string) {
  expect(res.data.discussion_summary).toBeNull();
  expect(meta(res)).toStrictEqual({ cache_hit: false, charged: false });
  expect(res.charged).toBe('0');
  expect(res.reason).toBe(reason);
  // The rest of the contract is served.
  expect(res.data).toMatchObject({ discussion_thread_count: 1, discussion_message_count: 1 });
}

describe('openai provider', () => {
  it('sends the discussion to /chat/completions and returns its text', async () => {
    fake.mode = 'ok';
    fake.delayMs = 0;
    fake.reply = 'Refunds are contested; nothing is decided.';
    const before = fake.requests.length;
    const res = await summaryOf(t, answered.id, key.secret);
    expect(res.data.discussion_summary).toBe('Refunds are contested; nothing is decided.');
    expect(meta(res)).toStrictEqual({ cache_hit: false, charged: true });
    expect(res.reason).toBeUndefined();
    const request = fake.requests[before];
    expect(request?.url).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer sk-test');
    expect(request?.body.model).toBe('fake-model');
    expect(request?.body.messages.at(-1)?.content).toContain('Refund timing differs by region.');
    const stored = await t.database.prisma.discussionSummary.findFirstOrThrow({ where: { metricId: answered.id } });
    expect(stored.provider).toBe('openai:fake-model');
  });

  it('bounds the prompt', async () => {
    fake.mode = 'ok';
    const before = fake.requests.length;
    await summaryOf(t, huge.id, key.secret);
    const prompt = fake.requests[before]?.body.messages.at(-1)?.content ?? '';
    expect(prompt.length).toBeLessThanOrEqual(12_000 + 20);
    expect(prompt.endsWith('[truncated]')).toBe(true);
  });
});

describe('degraded summaries', () => {
  it('timeout: the provider is slower than SUMMARY_TIMEOUT_MS', async () => {
    fake.mode = 'ok';
    fake.delayMs = 5_000;
    const started = Date.now();
    const res = await summaryOf(t, slow.id, key.secret);
    expect(Date.now() - started).toBeLessThan(4_000);
    expectDegraded(res, 'timeout');
    expect(await rowCounts(t.database, slow.id)).toEqual({ summaries: 0, meterEvents: 0 });
    fake.delayMs = 0;
  });

  it('generator_error: the provider answers 500; a later call generates again', async () => {
    fake.mode = 'error';
    expectDegraded(await summaryOf(t, failing.id, key.secret), 'generator_error');
    expect(await rowCounts(t.database, failing.id)).toEqual({ summaries: 0, meterEvents: 0 });
    fake.mode = 'ok';
    const recovered = await summaryOf(t, failing.id, key.secret);
    expect(meta(recovered)).toStrictEqual({ cache_hit: false, charged: true });
  });

  it('daily_cap_exceeded: a second discussion state the same UTC day is not generated; hits still served', async () => {
    fake.mode = 'ok';
    const first = await summaryOf(t, cappedFirst.id, cappedKey.secret);
    expect(meta(first)).toStrictEqual({ cache_hit: false, charged: true });
    expectDegraded(await summaryOf(t, cappedSecond.id, cappedKey.secret), 'daily_cap_exceeded');
    expect(await rowCounts(t.database, cappedSecond.id)).toEqual({ summaries: 0, meterEvents: 0 });
    const again = await summaryOf(t, cappedFirst.id, cappedKey.secret);
    expect(meta(again)).toStrictEqual({ cache_hit: true, charged: false });
    expect(again.data.discussion_summary).toBe(first.data.discussion_summary);
  });

  it('pricing_unavailable: the organization’s pricing state is unavailable', async () => {
    fake.mode = 'ok';
    const before = fake.requests.length;
    expectDegraded(await summaryOf(t, unpricedMetric.id, unpricedKey.secret), 'pricing_unavailable');
    expect(fake.requests.length).toBe(before);
    expect(await rowCounts(t.database, unpricedMetric.id)).toEqual({ summaries: 0, meterEvents: 0 });
  });

  it('a cached summary is served while pricing is unavailable; only new generations are blocked', async () => {
    fake.mode = 'ok';
    expect(meta(await summaryOf(t, flippingMetric.id, flippingKey.secret)).cache_hit).toBe(false);
    await t.database.prisma.organization.update({ where: { id: flipping.id }, data: { pricingState: 'unavailable' } });
    const hit = await summaryOf(t, flippingMetric.id, flippingKey.secret);
    expect(meta(hit)).toStrictEqual({ cache_hit: true, charged: false });
    expect(hit.reason).toBeUndefined();
  });
});

describe('a failed supporting read', () => {
  const local = registry();
  const localOrg = local.org({ plan: 'team' });
  const localKey = localOrg.key();
  const metric = discussed(localOrg);
  let broken: TestApp;
  beforeAll(async () => {
    broken = await startTestApp({ fixture: local.build() });
    // The discussion can no longer be read (a throwaway database).
    await broken.database.prisma.$executeRawUnsafe('ALTER TABLE message RENAME TO message_gone');
  });
  afterAll(() => broken?.close());

  it('is 200 with discussion_summary null and X-Discussion-Summary: discussion_unavailable', async () => {
    const res = await summaryOf(broken, metric.id, localKey.secret);
    expect(res.data.discussion_summary).toBeNull();
    expect(meta(res)).toStrictEqual({ cache_hit: false, charged: false });
    expect(res.reason).toBe('discussion_unavailable');
    // The other supporting reads degrade conservatively too.
    expect(res.data).toMatchObject({ metric_id: metric.id, discussion_message_count: 0, agent_context_notes: [] });
    expect(await broken.database.prisma.meterEvent.count()).toBe(0);
  });
});

describe('default cap from configuration', () => {
  const local = registry();
  const localOrg = local.org({ plan: 'team' });
  const localKey = localOrg.key();
  const first = discussed(localOrg);
  const second = discussed(localOrg);
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ fixture: local.build(), summaries: { defaultDailyCap: 1 } });
  });
  afterAll(() => app?.close());

  it('applies SUMMARY_DAILY_CAP when the organization sets none', async () => {
    expect(meta(await summaryOf(app, first.id, localKey.secret)).charged).toBe(true);
    expect((await summaryOf(app, second.id, localKey.secret)).reason).toBe('daily_cap_exceeded');
  });
});
