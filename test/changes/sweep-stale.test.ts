/**
 * The sweep evaluates where time can have moved a verdict (src/changes/sweep.ts): the metrics
 * whose validation evidence went stale since it was announced (their stale_at), with what is built
 * on them, and every metric only when the verdicts were last all evaluated under other
 * stale-validation days, or never. A verdict's stored stale_at rewritten alone shows nothing new.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SweepOptions } from '../../src/changes/sweep.js';
import { sweepOnce } from '../../src/changes/sweep.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, postValidations, putRegistry, type TeamOrg, uuidV5 } from '../registry/support.js';

const DAY = 24 * 60 * 60 * 1000;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ staleValidationDays: 30 });
});
afterAll(async () => t?.close());

const sweepAt = (at: Date, staleValidationDays = 30) => {
  const options: SweepOptions = { intervalMs: 1, retentionDays: 3650, trust: { staleValidationDays } };
  return sweepOnce(t.database.prisma, options, at);
};

interface FeedEvent {
  type: string;
  data: { key: string; to?: { verdict: string; reasons: string[] } };
}

describe('the sweep and stale evidence', () => {
  let org: TeamOrg;
  let cursor = '';
  const start = Date.now();
  const at = (days: number) => new Date(start + days * DAY);
  const idOf = (key: string) => uuidV5(org.id, key);

  /** The events since the last call, as `type key verdict`, sorted (a pass evaluates its metrics in id order). */
  async function newEvents(): Promise<string[]> {
    const res = await t.get(`/api/v1/changes${cursor ? `?after=${cursor}` : '?limit=500'}`, org.key);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { data: FeedEvent[]; next_cursor: string };
    cursor = body.next_cursor;
    return body.data.map((e) => [e.type, e.data.key, e.data.to?.verdict].filter(Boolean).join(' ')).sort();
  }

  async function validate(key: string, ranAt: Date): Promise<void> {
    const res = await postValidations(
      t,
      { results: [{ metric_key: key, ran_at: ranAt.toISOString(), status: 'passed', source: 'ci' }] },
      { token: org.token },
    );
    expect(res.statusCode, res.body).toBe(200);
  }

  const staleAt = async (key: string) =>
    (await t.database.prisma.metricTrustState.findUnique({ where: { metricId: idOf(key) } }))?.staleAt ?? null;

  beforeAll(async () => {
    org = await newTeamOrg(t.database.prisma, 'stale');
    const applied = await putRegistry(
      t,
      {
        ...doc(org.slug, [
          docMetric('orders', { lifecycle_status: 'RELEASED', policy_tier: 'tier_1' }),
          docMetric('churn', { lifecycle_status: 'RELEASED', policy_tier: 'tier_1' }),
          docMetric('revenue', { lifecycle_status: 'RELEASED', inputs: ['orders'] }),
        ]),
        trust_policy: { tier_1: { stale_after_days: 10, stale_validation: 'do_not_use' } },
      },
      { token: org.token },
    );
    expect(applied.statusCode, applied.body).toBe(200);
    await validate('orders', at(-5));
    await validate('churn', at(-8));
    await validate('revenue', at(-1));
    await newEvents();
  });

  it('keeps when each metric goes stale: its validation and its tier days (else the server days)', async () => {
    expect((await staleAt('orders'))?.getTime()).toBe(at(5).getTime());
    expect((await staleAt('churn'))?.getTime()).toBe(at(2).getTime());
    expect((await staleAt('revenue'))?.getTime()).toBe(at(29).getTime());
  });

  it('announces each metric when its time comes, with what is built on it, and nothing before', async () => {
    await sweepAt(at(0));
    expect(await newEvents()).toEqual([]);
    await sweepAt(at(3));
    expect(await newEvents()).toEqual(['metric.trust_changed churn do_not_use']);
    expect(await staleAt('churn')).toBeNull();
    await sweepAt(at(4));
    expect(await newEvents()).toEqual([]);
    await sweepAt(at(6));
    expect(await newEvents()).toEqual([
      'metric.trust_changed orders do_not_use',
      'metric.trust_changed revenue use_with_caution',
    ]);
    const revenue = await t.get(`/api/v1/metrics/${idOf('revenue')}/contract`, org.key);
    expect(revenue.statusCode, revenue.body).toBe(200);
    expect(revenue.json().data.trust).toMatchObject({ verdict: 'use_with_caution', reasons: ['untrusted_input'] });
  });

  it('a validation that moves no verdict moves its stale_at alone, and no ETag of what is built on it', async () => {
    await validate('orders', at(0));
    expect(await newEvents()).toEqual([
      'metric.trust_changed orders use',
      'metric.trust_changed revenue use',
      'metric.validated orders',
    ]);
    const before = await t.get(`/api/v1/metrics/${idOf('revenue')}`, org.key);
    expect(before.statusCode, before.body).toBe(200);
    await validate('orders', new Date(Date.now() + 1000));
    expect(await newEvents()).toEqual(['metric.validated orders']);
    expect((await staleAt('orders'))?.getTime()).toBeGreaterThan(at(10).getTime());
    const after = await t.get(`/api/v1/metrics/${idOf('revenue')}`, org.key, {
      'if-none-match': String(before.headers.etag),
    });
    expect(after.statusCode).toBe(304);
  });

  it('evaluates every metric again under other stale-validation days, and only then (else the due ones)', async () => {
    // A change no writer evaluated (made here behind the service's back): time cannot have moved it.
    await t.database.prisma
      .$executeRaw`UPDATE metric SET lifecycle_status = 'DEPRECATED' WHERE id = ${idOf('revenue')}::uuid`;
    // A metric without an announced verdict (its state removed the same way) gets one, silently.
    await t.database.prisma.metricTrustState.delete({ where: { metricId: idOf('churn') } });
    await sweepAt(at(7));
    expect(await newEvents()).toEqual([]);
    const churn = await t.database.prisma.metricTrustState.findUnique({ where: { metricId: idOf('churn') } });
    expect(churn).toMatchObject({ verdict: 'do_not_use', reasons: ['stale_validation'] });
    await sweepAt(at(8), 31);
    expect(await newEvents()).toEqual(['metric.trust_changed revenue do_not_use']);
    const feed = await t.database.prisma.changeFeed.findUnique({ where: { orgId: org.id } });
    expect(feed?.sweptStaleDays).toBe(31);
  });
});
