/**
 * `GET /api/v1/metrics/{id}/contract?summary=true` (contract 4.3) with the
 * built-in extractive generator: the hit/miss/charged matrix per plan, the
 * cache shared by the keys of an organization and by GraphQL, invalidation
 * by new, edited and deleted messages, the no-discussion case, and the
 * members' absence without `summary=true`.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetricJson, type OrgBuilder, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectOk, statementCount } from '../rest/expectations.js';
import { meta, rowCounts, summaryOf } from './helpers.js';

const PLANS = ['developer', 'starter', 'team', 'enterprise', 'design_partner'] as const;

const r = registry();

/** A metric with a small discussion: a resolved decision, a pinned note, an open objection. */
function discussed(org: OrgBuilder, name = 'Net Revenue'): MetricJson {
  const metric = org.metric({ name });
  const objector = org.user({ display_name: 'Max Member' });
  const decision = org.thread(metric, {
    intent: 'decision_rationale',
    resolution_status: 'resolved',
    title: 'Net out refunds',
    created_at: '2026-01-02T00:00:00Z',
  });
  org.message(decision, {
    body: 'We net out refunds because finance does.',
    created_at: '2026-01-02T01:00:00Z',
    pinned_at: '2026-01-03T00:00:00Z',
  });
  const objection = org.thread(metric, { intent: 'objection', created_at: '2026-01-04T00:00:00Z' });
  org.message(objection, { author_user_id: objector.id, body: 'Refund timing differs by region.' });
  org.message(org.thread(metric, { intent: 'question', created_at: '2026-01-05T00:00:00Z' }), {
    body: 'Does this include tax?',
  });
  return metric;
}

const byPlan = PLANS.map((plan) => {
  const org = r.org({ plan });
  return { plan, metric: discussed(org), first: org.key(), second: org.key() };
});

const team = r.org({ plan: 'team' });
const teamKey = team.key();
const teamOtherKey = team.key();
const session = team.user({ role: 'member', session_token: true });
const readable = discussed(team, 'Gross Margin');
const edited = discussed(team, 'Edited');
const editedThread = edited.threads?.[1];
const deleted = discussed(team, 'Deleted');
const shared = discussed(team, 'Shared');
const viaSession = discussed(team, 'Via session');
const threadsOnly = team.metric({ name: 'Threads only' });
team.thread(threadsOnly, { intent: 'proposal' });
const allDeleted = team.metric({ name: 'All deleted' });
team.message(team.thread(allDeleted), { deleted_at: '2026-01-02T00:00:00Z' });

// Another organization with its own key: summaries are per organization.
const globex = r.org({ plan: 'starter' });
const globexKey = globex.key();
const globexMetric = discussed(globex);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
});
afterAll(() => t.close());

describe('hit, miss and charged per plan', () => {
  for (const { plan, metric, first, second } of byPlan) {
    const billed = plan !== 'developer';
    it(`${plan}: the first call generates${billed ? ' and is charged' : ', never charged'}; later calls hit`, async () => {
      const miss = await summaryOf(t, metric.id, first.secret);
      expect(meta(miss)).toStrictEqual({ cache_hit: false, charged: billed });
      expect(miss.charged).toBe(billed ? '1' : '0');
      expect(miss.reason).toBeUndefined();
      expect(typeof miss.data.discussion_summary).toBe('string');

      // Same key, then another key of the organization: hits, never charged.
      for (const key of [first, second]) {
        const again = await summaryOf(t, metric.id, key.secret);
        expect(meta(again)).toStrictEqual({ cache_hit: true, charged: false });
        expect(again.charged).toBe('0');
        expect(again.data.discussion_summary).toBe(miss.data.discussion_summary);
      }
      expect(await rowCounts(t.database, metric.id)).toEqual({ summaries: 1, meterEvents: billed ? 1 : 0 });
      if (billed) {
        const event = await t.database.prisma.meterEvent.findFirstOrThrow({ where: { metricId: metric.id } });
        expect(event).toMatchObject({ orgId: byPlanOrgId(metric), kind: 'discussion_summary', apiKeyId: first.id });
      }
    });
  }
});

function byPlanOrgId(metric: MetricJson): string {
  const org = r.orgs.find((candidate) => candidate.json.metrics.includes(metric));
  if (!org) throw new Error('no org');
  return org.id;
}

describe('the summary text (extractive)', () => {
  it('says what was decided, what is open and who objected', async () => {
    const { data } = await summaryOf(t, readable.id, teamKey.secret);
    expect(data.discussion_summary).toBe(
      'The discussion of Gross Margin has 3 threads and 3 messages. Decided: "Net out refunds". ' +
        'Pinned notes: "We net out refunds because finance does." (Olivia Owner). ' +
        'Still open: 1 objection ("Refund timing differs by region.") and 1 question ("Does this include tax?"). ' +
        'Objections were raised by Max Member.',
    );
    // The rest of the contract is there as usual.
    expect(data).toMatchObject({ metric_id: readable.id, discussion_thread_count: 3, discussion_message_count: 3 });
  });

  it('is cached per organization: another organization generates (and is billed for) its own', async () => {
    const ours = await summaryOf(t, shared.id, teamKey.secret);
    expect(meta(ours)).toStrictEqual({ cache_hit: false, charged: true });
    const theirs = await summaryOf(t, globexMetric.id, globexKey.secret);
    expect(meta(theirs)).toStrictEqual({ cache_hit: false, charged: true });
    // A key cannot read another organization's metric at all.
    expect((await t.get(`/api/v1/metrics/${shared.id}/contract?summary=true`, globexKey.secret)).statusCode).toBe(404);
  });
});

describe('invalidation', () => {
  it('a new message makes the next call a miss (and a new billed state)', async () => {
    const first = await summaryOf(t, edited.id, teamKey.secret);
    expect(meta(first).cache_hit).toBe(false);
    expect(meta(await summaryOf(t, edited.id, teamOtherKey.secret)).cache_hit).toBe(true);

    const thread = editedThread;
    if (!thread) throw new Error('fixture');
    const added = await t.database.prisma.message.create({
      data: {
        id: randomUUID(),
        threadId: thread.id,
        metricId: edited.id,
        authorUserId: team.owner.id,
        body: 'We should split by region.',
        createdAt: new Date('2026-02-01T00:00:00Z'),
      },
    });
    const afterNew = await summaryOf(t, edited.id, teamKey.secret);
    expect(meta(afterNew)).toStrictEqual({ cache_hit: false, charged: true });
    expect(meta(await summaryOf(t, edited.id, teamKey.secret))).toStrictEqual({ cache_hit: true, charged: false });

    // An edit (body and updated_at).
    await t.database.prisma.message.update({
      where: { id: added.id },
      data: { body: 'We should split by country.', updatedAt: new Date('2026-02-02T00:00:00Z') },
    });
    const afterEdit = await summaryOf(t, edited.id, teamKey.secret);
    expect(meta(afterEdit)).toStrictEqual({ cache_hit: false, charged: true });
    expect(await rowCounts(t.database, edited.id)).toEqual({ summaries: 3, meterEvents: 3 });
  });

  it('a soft delete makes the next call a miss', async () => {
    expect(meta(await summaryOf(t, deleted.id, teamKey.secret)).cache_hit).toBe(false);
    expect(meta(await summaryOf(t, deleted.id, teamKey.secret)).cache_hit).toBe(true);
    const victim = deleted.threads?.[2]?.messages[0];
    if (!victim) throw new Error('fixture');
    await t.database.prisma.message.update({ where: { id: victim.id }, data: { deletedAt: new Date() } });
    const after = await summaryOf(t, deleted.id, teamKey.secret);
    expect(meta(after)).toStrictEqual({ cache_hit: false, charged: true });
    expect(after.data.discussion_summary).not.toContain('Does this include tax?');
    expect(after.data.discussion_message_count).toBe(2);
  });
});

describe('no discussion', () => {
  for (const [name, metric] of [
    ['threads without messages', threadsOnly],
    ['only deleted messages', allDeleted],
  ] as const) {
    it(`${name}: null, not charged, X-Discussion-Summary: no_discussion, nothing stored`, async () => {
      for (let i = 0; i < 2; i++) {
        const res = await summaryOf(t, metric.id, teamKey.secret);
        expect(res.data.discussion_summary).toBeNull();
        expect(meta(res)).toStrictEqual({ cache_hit: false, charged: false });
        expect(res.reason).toBe('no_discussion');
      }
      expect(await rowCounts(t.database, metric.id)).toEqual({ summaries: 0, meterEvents: 0 });
    });
  }
});

describe('without summary=true', () => {
  it('the members and headers are absent and nothing is generated; only the exact value true turns it on', async () => {
    for (const query of ['', '?summary=false', '?summary=1', '?summary=TRUE', '?summary=', '?summary=yes']) {
      const res = await t.get(`/api/v1/metrics/${readable.id}/contract${query}`, teamKey.secret);
      const { data } = expectOk(res);
      expect(data).not.toHaveProperty('discussion_summary');
      expect(data).not.toHaveProperty('discussion_summary_meta');
      expect(res.headers).not.toHaveProperty('x-discussion-summary-charged');
      expect(res.headers).not.toHaveProperty('x-discussion-summary');
    }
    await t.get(`/api/v1/metrics/${threadsOnly.id}/contract?summary=false`, teamKey.secret);
    expect(await rowCounts(t.database, threadsOnly.id)).toEqual({ summaries: 0, meterEvents: 0 });
  });
});

const SUMMARY_QUERY = `query Summary($id: ID!) {
  metric(id: $id) { id discussionSummary { text cacheHit charged degradedReason } }
}`;

function graphql(id: string, headers: Record<string, string>) {
  return t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    payload: { query: SUMMARY_QUERY, variables: { id } },
  });
}

describe('GraphQL discussionSummary', () => {
  it('shares the cache with REST: a REST miss, then a GraphQL hit', async () => {
    const rest = await summaryOf(t, shared.id, teamKey.secret);
    const res = await graphql(shared.id, { authorization: `Bearer ${teamOtherKey.secret}` });
    const body = res.json();
    expect(body.errors).toBeUndefined();
    expect(body.data.metric.discussionSummary).toStrictEqual({
      text: rest.data.discussion_summary,
      cacheHit: true,
      charged: false,
      degradedReason: null,
    });
  });

  it('a signed-in session is billed like a key (the organization, no key id)', async () => {
    const cookie = { cookie: `session=${session.session_token}` };
    const first = (await graphql(viaSession.id, cookie)).json();
    expect(first.errors).toBeUndefined();
    expect(first.data.metric.discussionSummary).toMatchObject({ cacheHit: false, charged: true, degradedReason: null });
    const second = (await graphql(viaSession.id, cookie)).json();
    expect(second.data.metric.discussionSummary).toMatchObject({ cacheHit: true, charged: false });
    const events = await t.database.prisma.meterEvent.findMany({ where: { metricId: viaSession.id } });
    expect(events).toMatchObject([{ orgId: team.id, apiKeyId: null, kind: 'discussion_summary' }]);
    // And REST sees the same cache.
    expect(meta(await summaryOf(t, viaSession.id, teamKey.secret))).toStrictEqual({ cache_hit: true, charged: false });
  });

  it('is refused on lists of metrics, where it would generate and bill per item', async () => {
    const counts = async () => ({
      summaries: await t.database.prisma.discussionSummary.count(),
      meterEvents: await t.database.prisma.meterEvent.count(),
    });
    const before = await counts();
    const res = await t.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${teamKey.secret}` },
      payload: { query: '{ metrics { items { id discussionSummary { text } } } }' },
    });
    const body = res.json();
    expect(body.errors?.[0]?.message).toBe(
      'discussionSummary is only available on metric(id), not on lists of metrics',
    );
    expect(await counts()).toEqual(before);
  });

  it('degradedReason says no_discussion', async () => {
    const body = (await graphql(threadsOnly.id, { authorization: `Bearer ${teamKey.secret}` })).json();
    expect(body.data.metric.discussionSummary).toStrictEqual({
      text: null,
      cacheHit: false,
      charged: false,
      degradedReason: 'no_discussion',
    });
  });
});

describe('SQL statements', () => {
  const local = registry();
  const localOrg = local.org({ plan: 'team' });
  const localKey = localOrg.key();
  const metric = discussed(localOrg);
  let timed: TestApp;
  beforeAll(async () => {
    timed = await startTestApp({ fixture: local.build(), serverTiming: true });
  });
  afterAll(() => timed?.close());

  it('a cache hit costs three statements more than the plain contract (the metric, the state for the ETag, the lookup)', async () => {
    const url = `/api/v1/metrics/${metric.id}/contract`;
    await timed.get(url, localKey.secret); // the key's first use may cost extra (last-used upkeep)
    const plain = statementCount(await timed.get(url, localKey.secret));
    const miss = statementCount(await timed.get(`${url}?summary=true`, localKey.secret));
    const hit = statementCount(await timed.get(`${url}?summary=true`, localKey.secret));
    // The plain contract reads its metric (and its ETag version) in the key lookup's statement;
    // summary=true reads the discussion's state first (src/rest/routes.ts), so its metric after, in a
    // statement of its own, then the summary reads its fingerprint and cache entry together.
    expect(plain).toBe(1);
    expect(hit).toBe(plain + 3);
    // the key, the state, the metric, then in one transaction: begin, lock, recheck + cap, discussion,
    // insert, meter event, commit
    expect(miss).toBeLessThanOrEqual(10);
  });
});
