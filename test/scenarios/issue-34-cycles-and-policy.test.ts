/**
 * Issue 34, "Done when" 2, end to end over a listening socket:
 * - a registry document that would make a cycle of inputs (within itself, or
 *   closing one with inputs already stored) is refused with a 400 naming the
 *   cycle, and nothing is written (docs/registry-document.md#inputs);
 * - tier policies decide the verdicts their documents say: a `trust_policy`
 *   for tier_1 (a failed validation is do_not_use, evidence stale after 7
 *   days, use requires an approved version and an owner team) against metrics
 *   of tier_1 and tier_3 in the same states; the explanation names the rule; a
 *   policy applied alone re-evaluates the verdicts with their events; a dbt
 *   import, which carries no policy, leaves it in place
 *   (docs/trust.md#trust-policy, docs/registry-document.md#trust-policy).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, type TeamOrg, uuidV5 } from '../registry/support.js';
import { financeManifest } from './finance-manifest.js';
import { SocketClient, toolResult } from './over-socket.js';

let t: TestApp;
let http: SocketClient;

beforeAll(async () => {
  t = await startTestApp();
  http = new SocketClient(await t.app.listen({ port: 0, host: '127.0.0.1' }));
});
afterAll(() => t?.close());

const DAY = 24 * 60 * 60 * 1000;
const released = (key: string, fields: Record<string, unknown> = {}) =>
  docMetric(key, { lifecycle_status: 'RELEASED', ...fields });

/** The keys of the organization's metrics, as the REST list answers them (by id: ids derive from keys). */
async function listedKeys(org: TeamOrg, candidates: string[]): Promise<string[]> {
  const res = await http.get('/api/v1/metrics?pageSize=100', org.key);
  expect(res.status, res.text).toBe(200);
  const ids = new Set(res.body.data.map((metric: { id: string }) => metric.id));
  expect(ids.size, 'every listed metric is one of the candidates').toBeLessThanOrEqual(candidates.length);
  const keys = candidates.filter((key) => ids.has(uuidV5(org.id, key)));
  expect(keys.length, 'every listed metric is one of the candidates').toBe(ids.size);
  return keys.sort();
}

/** A cycle named in `message` (`x -> y -> x`), as its keys without the repeated first. */
function cycleIn(message: string): string[] {
  const found = message.match(/inputs form a cycle: ([a-z0-9_.-]+(?: -> [a-z0-9_.-]+)+)/);
  expect(found, message).not.toBeNull();
  const keys = (found?.[1] ?? '').split(' -> ');
  expect(keys.at(-1), 'a cycle ends where it starts').toBe(keys[0]);
  return keys.slice(0, -1);
}

/** True when `cycle` is `expected` read from any of its metrics. */
const sameCycle = (cycle: string[], expected: string[]) =>
  cycle.length === expected.length &&
  expected.some((_, start) => cycle.every((key, i) => key === expected[(start + i) % expected.length]));

describe('issue 34: a document that would make a cycle is refused naming it', () => {
  it('a -> b -> a within one document: 400 naming the cycle at an input of it; nothing written', async () => {
    const org = await newTeamOrg(t.database.prisma, 'cycle2');
    const kept = doc(org.slug, [released('kept')]);
    await http.apply(org, kept);
    const { cursor } = await http.changesAfter(org, null);

    const res = await http.putRegistry(
      org,
      doc(org.slug, [released('kept'), released('a', { inputs: ['b'] }), released('b', { inputs: ['a'] })]),
    );
    expect(res.status, res.text).toBe(400);
    const cycle = cycleIn(res.body.error);
    expect(sameCycle(cycle, ['a', 'b']), res.body.error).toBe(true);
    // Named from the metric whose input closes it, at that input: metrics[1] is a, metrics[2] is b.
    const place = { a: 'metrics[1].inputs[0]', b: 'metrics[2].inputs[0]' }[cycle[0] as 'a' | 'b'];
    expect(res.body.error).toMatch(new RegExp(`^${place.replace(/[[\]]/g, '\\$&')}: inputs form a cycle: `));

    expect(await listedKeys(org, ['kept', 'a', 'b'])).toEqual(['kept']);
    expect((await http.changesAfter(org, cursor)).events).toEqual([]);
    // The dry run of the same document is refused the same way.
    const dry = await http.putRegistry(
      org,
      doc(org.slug, [released('a', { inputs: ['b'] }), released('b', { inputs: ['a'] })]),
      'dry_run=true',
    );
    expect(dry.status, dry.text).toBe(400);
    expect(dry.body.error).toContain('inputs form a cycle: ');
  });

  it('a 3-cycle closed by the document over stored inputs: 400 naming c -> a -> b -> c; nothing written', async () => {
    const org = await newTeamOrg(t.database.prisma, 'cycle3');
    // Stored: a is computed from b, b from c.
    const stored = doc(org.slug, [
      released('a', { inputs: ['b'] }),
      released('b', { inputs: ['c'] }),
      released('c'),
      released('d'),
    ]);
    await http.apply(org, stored);
    const { cursor } = await http.changesAfter(org, null);

    // A document of one metric: c from a (a and b absent, kept with their stored inputs).
    const closing = doc(org.slug, [released('c', { inputs: ['d', 'a'] })]);
    const res = await http.putRegistry(org, closing);
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toBe('metrics[0].inputs[1]: inputs form a cycle: c -> a -> b -> c');

    expect(await listedKeys(org, ['a', 'b', 'c', 'd'])).toEqual(['a', 'b', 'c', 'd']);
    expect((await http.changesAfter(org, cursor)).events).toEqual([]);
    // The stored document still matches the registry, inputs included.
    const again = await http.apply(org, stored, 'dry_run=true');
    expect(again.plan.map((entry: { result: string }) => entry.result)).toEqual([
      'unchanged',
      'unchanged',
      'unchanged',
      'unchanged',
    ]);
    // And the input that makes no cycle is accepted alone.
    const fine = await http.apply(org, doc(org.slug, [released('c', { inputs: ['d'] })]));
    expect(fine.plan).toContainEqual({
      key: 'c',
      result: 'updated',
      changed_fields: ['inputs'],
      changes: [{ field: 'inputs', from: [], to: ['d'] }],
    });
  });

  let dbtCycle = '';
  it('a dbt manifest whose derived metrics read each other is refused (400), nothing written', async () => {
    const org = await newTeamOrg(t.database.prisma, 'cycle-dbt');
    const manifest = financeManifest();
    // total_revenue becomes a derived metric over total_profit, which is computed from it.
    const [, , profit] = manifest.metrics;
    const revenue = {
      ...profit,
      name: 'total_revenue',
      label: 'Total Revenue',
      type_params: {
        ...profit.type_params,
        expr: 'profit + 1',
        metrics: [{ ...profit.type_params.metrics[0], name: 'total_profit', alias: 'profit' }],
      },
    };
    const res = await http.putRegistry(
      org,
      { ...manifest, metrics: [revenue, ...manifest.metrics.slice(1)] },
      'format=dbt',
    );
    expect(res.status, res.text).toBe(400);
    dbtCycle = res.body.error;
    expect(dbtCycle).toContain('total_');
    expect(await listedKeys(org, ['total_revenue', 'total_expense', 'total_profit'])).toEqual([]);
  });

  // "A cycle is refused naming it", whatever writes the inputs: dbt names the metrics of the cycle too.
  it("the dbt manifest's cycle is named: total_revenue -> total_profit -> total_revenue", () => {
    expect(sameCycle(cycleIn(dbtCycle), ['total_revenue', 'total_profit']), dbtCycle).toBe(true);
  });
});

const TIER_1 = {
  failed_validation: 'do_not_use',
  stale_after_days: 7,
  use_requires: ['approved_version', 'owner_team'],
};
const APPROVED = [{ definition_version: '1.0.0', status: 'released', released_at: '2026-01-05T00:00:00Z' }];

/** The same states in each tier: failed, validated 8 days ago, no approved version, and nothing wrong. */
const STATES = {
  failed: { versions: APPROVED },
  stale: { versions: APPROVED },
  unapproved: { versions: [{ definition_version: '1.0.0', status: 'draft', released_at: null }] },
  good: { versions: APPROVED },
};
const policyMetrics = () =>
  ['tier_1', 'tier_3'].flatMap((tier) =>
    Object.entries(STATES).map(([state, fields]) => released(`${tier}_${state}`, { policy_tier: tier, ...fields })),
  );

describe('issue 34: tier policies decide the verdicts their documents say', () => {
  let org: TeamOrg;
  let mcp: Client;
  beforeAll(async () => {
    org = await newTeamOrg(t.database.prisma, 'policy');
    mcp = await http.mcp(org);
  });
  afterAll(() => mcp?.close());

  const idOf = (key: string) => uuidV5(org.id, key);
  const trustOf = (key: string) => http.contractTrust(org, idOf(key));
  const explanationsOf = async (key: string): Promise<string[]> =>
    (await toolResult(mcp, 'get_metric_contract', { key })).trust.explanations;
  const verdict = (name: string, ...reasons: string[]) => ({
    verdict: name,
    reasons,
    preferred_metric_id: null,
    untrusted_inputs: [],
  });

  it('tier_1 under the policy, tier_3 under the defaults; explanations name the rule', async () => {
    const applied = await http.apply(org, { ...doc(org.slug, policyMetrics()), trust_policy: { tier_1: TIER_1 } });
    expect(applied.trust_policy).toBe('changed');
    const now = Date.now();
    await http.validate(org, { tier_1_failed: 'failed', tier_3_failed: 'failed' }, new Date(now - DAY));
    await http.validate(org, { tier_1_stale: 'passed', tier_3_stale: 'passed' }, new Date(now - 8 * DAY));
    await http.validate(org, {
      tier_1_unapproved: 'passed',
      tier_3_unapproved: 'passed',
      tier_1_good: 'passed',
      tier_3_good: 'passed',
    });

    const expected: Record<string, ReturnType<typeof verdict>> = {
      tier_1_failed: verdict('do_not_use', 'failed_validation'),
      tier_3_failed: verdict('use_with_caution', 'failed_validation'),
      tier_1_stale: verdict('use_with_caution', 'stale_validation'),
      tier_3_stale: verdict('use'),
      tier_1_unapproved: verdict('use_with_caution', 'no_approved_version'),
      tier_3_unapproved: verdict('use'),
      tier_1_good: verdict('use'),
      tier_3_good: verdict('use'),
    };
    for (const [key, trust] of Object.entries(expected)) expect(await trustOf(key), key).toEqual(trust);

    const [failed] = await explanationsOf('tier_1_failed');
    expect(failed).toContain('trust policy tier_1: failed_validation makes the verdict do_not_use');
    const [unapproved] = await explanationsOf('tier_1_unapproved');
    expect(unapproved).toContain('trust policy of tier_1 requires an approved or released version');
    const [stale] = await explanationsOf('tier_1_stale');
    expect(stale).toContain('8 days old');
    expect(stale).toContain('the limit is 7 days');
    // Under the defaults, tier_3's failure is no more than a caution, explained without a policy.
    const [tier3] = await explanationsOf('tier_3_failed');
    expect(tier3).not.toContain('trust policy');
  });

  // "A verdict's explanation names the rule that decided it": a tier's stale_after_days too.
  it('the stale explanation under a tier rule names the rule (trust policy tier_1: stale_after_days)', async () => {
    const [stale] = await explanationsOf('tier_1_stale');
    expect(stale).toMatch(/tier_1/);
  });

  it('a policy change applied alone re-evaluates the verdicts, with an event for each that moves', async () => {
    const { cursor } = await http.changesAfter(org, null);
    const etagOf = async (key: string) => {
      const res = await fetch(new URL(`/api/v1/metrics/${idOf(key)}/contract`, http.base), {
        headers: { authorization: `Bearer ${org.key}` },
      });
      await res.arrayBuffer();
      return res.headers.get('etag');
    };
    const etagBefore = await etagOf('tier_3_good');
    // Only the policy: no metric listed (all kept), tier_1 relaxed.
    const applied = await http.apply(org, {
      organization: org.slug,
      trust_policy: { tier_1: { stale_after_days: 10, use_requires: ['approved_version'] } },
      metrics: [],
    });
    expect(applied.trust_policy).toBe('changed');
    expect(applied.totals).toMatchObject({ created: 0, updated: 0, removed: 0, absent: 8 });

    expect(await trustOf('tier_1_failed')).toEqual(verdict('use_with_caution', 'failed_validation'));
    expect(await trustOf('tier_1_stale')).toEqual(verdict('use'));
    expect(await trustOf('tier_1_unapproved')).toEqual(verdict('use_with_caution', 'no_approved_version'));
    expect(await trustOf('tier_3_failed')).toEqual(verdict('use_with_caution', 'failed_validation'));

    const { events } = await http.changesAfter(org, cursor);
    expect(events.map((event) => event.type)).toEqual(['metric.trust_changed', 'metric.trust_changed']);
    const moved = Object.fromEntries(events.map((event) => [event.data.key, [event.data.from, event.data.to]]));
    expect(moved).toEqual({
      tier_1_failed: [
        { verdict: 'do_not_use', reasons: ['failed_validation'] },
        { verdict: 'use_with_caution', reasons: ['failed_validation'] },
      ],
      tier_1_stale: [
        { verdict: 'use_with_caution', reasons: ['stale_validation'] },
        { verdict: 'use', reasons: [] },
      ],
    });

    // Every verdict's explanation may name the policy: every ETag changes, a tier_3 metric's included.
    const etagAfter = await etagOf('tier_3_good');
    expect(etagAfter).toBeTruthy();
    expect(etagAfter).not.toBe(etagBefore);

    // The same policy again is unchanged and writes nothing.
    const same = await http.apply(org, {
      organization: org.slug,
      trust_policy: { tier_1: { use_requires: ['approved_version'], stale_after_days: 10 } },
      metrics: [],
    });
    expect(same.trust_policy).toBe('unchanged');
    expect((await http.changesAfter(org, cursor)).events).toHaveLength(2);
    expect(await etagOf('tier_3_good')).toBe(etagAfter);
  });

  it('a dbt import (no trust_policy) leaves the policy in place, for its own metrics too', async () => {
    const { cursor } = await http.changesAfter(org, null);
    const manifest = financeManifest({
      total_revenue: { owner_team: 'Finance Analytics', lifecycle_status: 'RELEASED', policy_tier: 'tier_1' },
    });
    const imported = await http.apply(org, manifest, 'format=dbt&default_lifecycle=RELEASED');
    expect(imported.trust_policy).toBe('unchanged');
    expect(imported.totals).toMatchObject({ created: 3, absent: 8 });

    // The relaxed policy still decides tier_1; the imported tier_1 metric has no version, so no approved one.
    expect(await trustOf('tier_1_stale')).toEqual(verdict('use'));
    expect(await trustOf('tier_1_failed')).toEqual(verdict('use_with_caution', 'failed_validation'));
    expect(await trustOf('tier_1_unapproved')).toEqual(verdict('use_with_caution', 'no_approved_version'));
    expect(await trustOf('total_revenue')).toEqual(
      verdict('use_with_caution', 'never_validated', 'no_approved_version'),
    );
    expect(await trustOf('total_expense')).toEqual(verdict('use_with_caution', 'never_validated'));
    // No verdict of the metrics already there moved.
    const { events } = await http.changesAfter(org, cursor);
    const moved = events.filter((event) => event.type === 'metric.trust_changed').map((event) => event.data.key);
    expect(moved).toEqual([]);
  });
});
