/**
 * The change feed (README, "Change feed"): every event type from real
 * applies and validation evidence, trust transitions whatever caused them,
 * cursors, long-polls, and the errors of bad cursors and limits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepOnce } from '../../src/changes/sweep.js';
import { createMetrics } from '../../src/http/metrics.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, postValidations, putRegistry, type TeamOrg } from '../registry/support.js';

let t: TestApp;
const metrics = createMetrics();
beforeAll(async () => {
  t = await startTestApp({ staleValidationDays: 30, metrics });
});
afterAll(async () => t?.close());

interface FeedEvent {
  specversion: string;
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: string;
  data: Record<string, unknown> & { key: string };
}
interface FeedBody {
  data: FeedEvent[];
  next_cursor: string;
  meta: { apiVersion: string };
}

async function changes(org: TeamOrg, query = ''): Promise<FeedBody> {
  const res = await t.get(`/api/v1/changes${query}`, org.key);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function apply(org: TeamOrg, metrics: ReturnType<typeof docMetric>[], query?: string) {
  const res = await putRegistry(t, doc(org.slug, metrics), { token: org.token, query });
  expect(res.statusCode, res.body).toBe(200);
}

const summary = (events: FeedEvent[]) => events.map((e) => `${e.type} ${e.data.key}`);

describe('events of applies and validations', () => {
  let org: TeamOrg;
  beforeAll(async () => {
    org = await newTeamOrg(t.database.prisma, 'feed');
  });

  it('records each change once, as CloudEvents, oldest first, and a cursor resumes after the last', async () => {
    await apply(org, [
      docMetric('revenue', {
        lifecycle_status: 'DRAFT',
        versions: [{ definition_version: '1.0.0', status: 'draft', released_at: null }],
      }),
      docMetric('orders', { lifecycle_status: 'RELEASED' }),
    ]);
    const first = await changes(org);
    expect(summary(first.data)).toEqual(['metric.created revenue', 'metric.created orders']);
    const [created] = first.data;
    expect(created).toMatchObject({
      specversion: '1.0',
      source: `/organizations/${org.id}`,
      type: 'metric.created',
      datacontenttype: 'application/json',
    });
    expect(created?.subject).toBe(created?.data.id);
    expect(Object.keys(created?.data ?? {}).slice(0, 4)).toEqual(['id', 'key', 'name', 'lifecycle_status']);
    expect(new Date(created?.time ?? '').toISOString()).toBe(created?.time);

    await apply(org, [
      docMetric('revenue', {
        name: 'Net revenue',
        lifecycle_status: 'RELEASED',
        versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-11-01T00:00:00Z' }],
      }),
      docMetric('orders', { lifecycle_status: 'RELEASED' }),
    ]);
    const second = await changes(org, `?after=${first.next_cursor}`);
    expect(summary(second.data)).toEqual([
      'metric.updated revenue',
      'metric.lifecycle_changed revenue',
      'metric.version_released revenue',
      'metric.trust_changed revenue',
    ]);
    expect(second.data[3]?.data).toMatchObject({
      from: { verdict: 'use_with_caution', reasons: ['pre_release', 'never_validated'] },
      to: { verdict: 'use_with_caution', reasons: ['never_validated'] },
    });
    expect(second.data[0]?.data).toMatchObject({
      name: 'Net revenue',
      lifecycle_status: 'RELEASED',
      changed_fields: expect.arrayContaining(['name', 'lifecycle_status', 'versions']),
    });
    expect(second.data[1]?.data).toMatchObject({ from: 'DRAFT', to: 'RELEASED' });
    expect(second.data[2]?.data).toMatchObject({ definition_version: '1.0.0', status: 'released' });

    // Nothing after the last: an empty page whose cursor is the one given.
    const empty = await changes(org, `?after=${second.next_cursor}`);
    expect(empty).toEqual({ data: [], next_cursor: second.next_cursor, meta: { apiVersion: 'v1' } });

    // A no-op apply records nothing.
    await apply(org, [
      docMetric('revenue', {
        name: 'Net revenue',
        lifecycle_status: 'RELEASED',
        versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-11-01T00:00:00Z' }],
      }),
      docMetric('orders', { lifecycle_status: 'RELEASED' }),
    ]);
    expect((await changes(org, `?after=${second.next_cursor}`)).data).toEqual([]);
  });

  it('validation evidence: metric.validated, then trust transitions (never validated → use → failed)', async () => {
    const before = await changes(org, '?limit=500');
    const passed = await postValidations(
      t,
      { results: [{ metric_key: 'orders', ran_at: new Date().toISOString(), status: 'passed', source: 'ci' }] },
      { token: org.token },
    );
    expect(passed.statusCode, passed.body).toBe(200);
    const afterPass = await changes(org, `?after=${before.next_cursor}`);
    expect(summary(afterPass.data)).toEqual(['metric.validated orders', 'metric.trust_changed orders']);
    expect(afterPass.data[1]?.data).toMatchObject({
      from: { verdict: 'use_with_caution', reasons: ['never_validated'] },
      to: { verdict: 'use', reasons: [] },
      preferred_metric_id: null,
    });
    // The same result again: a duplicate, no event.
    await postValidations(
      t,
      {
        results: [
          { metric_key: 'orders', ran_at: new Date(Date.now() + 1000).toISOString(), status: 'failed', source: 'ci' },
        ],
      },
      { token: org.token },
    );
    const afterFail = await changes(org, `?after=${afterPass.next_cursor}`);
    expect(summary(afterFail.data)).toEqual(['metric.validated orders', 'metric.trust_changed orders']);
    expect(afterFail.data[1]?.data).toMatchObject({
      from: { verdict: 'use', reasons: [] },
      to: { verdict: 'use_with_caution', reasons: ['failed_validation'] },
    });
  });

  it('a superseding metric: the superseded one becomes do_not_use with the metric to use instead', async () => {
    const before = await changes(org, '?limit=500');
    await apply(org, [
      docMetric('revenue', {
        name: 'Net revenue',
        lifecycle_status: 'RELEASED',
        versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-11-01T00:00:00Z' }],
      }),
      docMetric('orders', { lifecycle_status: 'RELEASED' }),
      docMetric('orders_v2', {
        lifecycle_status: 'RELEASED',
        relationships: [{ kind: 'supersedes', target: 'orders' }],
      }),
    ]);
    const page = await changes(org, `?after=${before.next_cursor}`);
    expect(summary(page.data)).toEqual(['metric.created orders_v2', 'metric.trust_changed orders']);
    const v2 = page.data[0]?.data.id;
    expect(page.data[1]?.data).toMatchObject({
      to: { verdict: 'do_not_use', reasons: ['superseded'] },
      preferred_metric_id: v2,
    });

    // Pruned away, the superseding metric takes its supersession with it.
    await apply(
      org,
      [
        docMetric('revenue', {
          name: 'Net revenue',
          lifecycle_status: 'RELEASED',
          versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-11-01T00:00:00Z' }],
        }),
        docMetric('orders', { lifecycle_status: 'RELEASED' }),
      ],
      'prune=true',
    );
    const pruned = await changes(org, `?after=${page.next_cursor}`);
    expect(summary(pruned.data)).toEqual(['metric.removed orders_v2', 'metric.trust_changed orders']);
    expect(pruned.data[0]?.data).toMatchObject({ id: v2, key: 'orders_v2', lifecycle_status: 'RELEASED' });
    expect(pruned.data[1]?.data).toMatchObject({
      from: { verdict: 'do_not_use', reasons: ['superseded'] },
      to: { verdict: 'use_with_caution', reasons: ['failed_validation'] },
      preferred_metric_id: null,
    });
  });

  it('time: the sweep finds evidence that became stale, once', async () => {
    // Retention long enough to keep everything here (the next test prunes).
    const sweep = { intervalMs: 1000, retentionDays: 3650, trust: { staleValidationDays: 30 } };
    await sweepOnce(t.database.prisma, sweep);
    const before = await changes(org, '?limit=500');
    const later = new Date(Date.now() + 31 * 24 * 3600 * 1000);
    await sweepOnce(t.database.prisma, sweep, later);
    const page = await changes(org, `?after=${before.next_cursor}`);
    expect(summary(page.data)).toEqual(['metric.trust_changed orders']);
    expect(page.data[0]?.data).toMatchObject({
      to: { verdict: 'use_with_caution', reasons: ['failed_validation', 'stale_validation'] },
    });
    // A second sweep at the same time finds nothing new (and claims nothing within the interval).
    await sweepOnce(t.database.prisma, sweep, new Date(later.getTime() + 2000));
    expect((await changes(org, `?after=${page.next_cursor}`)).data).toEqual([]);
  });

  it('retention: a cursor before removed events is 410, one after them reads on', async () => {
    const current = await changes(org, '?limit=500');
    const old = (await changes(org, '?limit=1')).next_cursor;
    const later = new Date(Date.now() + 40 * 24 * 3600 * 1000);
    await sweepOnce(
      t.database.prisma,
      { intervalMs: 1000, retentionDays: 30, trust: { staleValidationDays: 30 } },
      later,
    );
    const gone = await t.get(`/api/v1/changes?after=${old}`, org.key);
    expect(gone.statusCode, gone.body).toBe(410);
    expect(gone.json().error).toMatch(/resynchronize/);
    // Without a cursor the feed starts at the oldest event kept: the one the earlier sweep made "in 31 days".
    const cutoff = later.getTime() - 30 * 24 * 3600 * 1000;
    const kept = current.data.filter((e) => new Date(e.time).getTime() >= cutoff).map((e) => e.id);
    expect(kept).toHaveLength(1);
    expect((await changes(org)).data.map((e) => e.id)).toEqual(kept);
  });
});

describe('cursors and bounds', () => {
  it('refuses a malformed cursor, another organization’s cursor and out-of-range limit and wait (400)', async () => {
    const a = await newTeamOrg(t.database.prisma, 'cur-a');
    const b = await newTeamOrg(t.database.prisma, 'cur-b');
    await apply(a, [docMetric('secret_metric')]);
    const aCursor = (await changes(a)).next_cursor;
    for (const query of [
      '?after=nope',
      `?after=${'A'.repeat(2000)}`,
      `?after=${aCursor}`,
      '?limit=0',
      '?limit=501',
      '?limit=x',
      '?wait=31',
      '?wait=-1',
    ]) {
      const res = await t.get(`/api/v1/changes${query}`, b.key);
      expect(res.statusCode, query).toBe(400);
      expect(typeof res.json().error).toBe('string');
      expect(res.body).not.toContain('secret_metric');
    }
    const unauthenticated = await t.get('/api/v1/changes');
    expect(unauthenticated.statusCode).toBe(401);
  });

  it('a long-poll answers as soon as an event is committed', async () => {
    const org = await newTeamOrg(t.database.prisma, 'poll');
    const start = await changes(org);
    const started = Date.now();
    const polled = t.get(`/api/v1/changes?after=${start.next_cursor}&wait=20`, org.key);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The Prometheus gauge counts it while it waits.
    expect((await metrics.longPolls.get()).values[0]?.value).toBe(1);
    await apply(org, [docMetric('arrives')]);
    const res = await polled;
    expect(res.statusCode).toBe(200);
    expect(summary(res.json().data)).toEqual(['metric.created arrives']);
    expect((await metrics.longPolls.get()).values[0]?.value).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a waiting long-poll answers at once (empty) when its instance shuts down', async () => {
    const org = await newTeamOrg(t.database.prisma, 'closing');
    const instance = await buildTestInstance(t.database);
    const start = await changes(org);
    const started = Date.now();
    const polled = instance.inject({
      method: 'GET',
      url: `/api/v1/changes?after=${start.next_cursor}&wait=30`,
      headers: { authorization: `Bearer ${org.key}` },
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await instance.close();
    const res = await polled;
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual([]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a long-poll with nothing to report answers empty after its wait', async () => {
    const org = await newTeamOrg(t.database.prisma, 'idle');
    const start = await changes(org);
    const started = Date.now();
    const res = await t.get(`/api/v1/changes?after=${start.next_cursor}&wait=1`, org.key);
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});
