/**
 * Trust that follows inputs and the trust policy per tier, as pure functions:
 * which upstream metrics carry over (src/changes/input-trust.ts) and what a
 * tier's rule does to a verdict (src/metric/trust.ts).
 */
import { describe, expect, it } from 'vitest';
import { type InputGraph, UpstreamTrust } from '../../src/changes/input-trust.js';
import { MAX_UNTRUSTED_INPUTS, type TrustFacts, trustReasonSentences, trustVerdict } from '../../src/metric/trust.js';
import { trustPolicySchema } from '../../src/metric/trust-policy.js';

const DAY = 24 * 60 * 60 * 1000;
const NOW = new Date('2026-11-27T12:00:00Z');
const POLICY = { staleValidationDays: 30 };

/** Facts of a released metric validated yesterday: `use` unless changed. */
function facts(overrides: Partial<TrustFacts> = {}): TrustFacts {
  return {
    lifecycleStatus: 'RELEASED',
    superseded: false,
    supersedingMetricId: null,
    openObjectionsCount: 0,
    lastValidatedAt: new Date(NOW.getTime() - DAY),
    lastValidationFailed: false,
    conflicting: false,
    policyTier: 'tier_3',
    tierRule: null,
    hasApprovedVersion: true,
    ownerTeam: 'Finance',
    untrustedInputs: [],
    ...overrides,
  };
}

function upstream(graph: Record<string, string[]>, all: Record<string, Partial<TrustFacts>>) {
  const inputs = new Map(Object.entries(all).map(([id, f]) => [id, { key: `key_${id}`, facts: facts(f) }]));
  return new UpstreamTrust(new Map(Object.entries(graph)) as InputGraph, inputs, POLICY, NOW);
}

describe('untrusted inputs', () => {
  it('names a deprecated direct input, with its own verdict and reasons', () => {
    const trust = upstream(
      { profit: ['revenue', 'expense'] },
      { revenue: { lifecycleStatus: 'DEPRECATED' }, expense: {} },
    );
    expect(trust.untrustedInputsOf('profit')).toEqual([
      { id: 'revenue', key: 'key_revenue', verdict: 'do_not_use', reasons: ['deprecated'] },
    ]);
  });

  it('carries a failed validation over, but not stale or missing evidence, objections or pre-release', () => {
    const trust = upstream(
      { m: ['failed', 'stale', 'never', 'objected', 'draft'] },
      {
        failed: { lastValidationFailed: true },
        stale: { lastValidatedAt: new Date(NOW.getTime() - 90 * DAY) },
        never: { lastValidatedAt: null },
        objected: { openObjectionsCount: 2 },
        draft: { lifecycleStatus: 'DRAFT' },
      },
    );
    expect(trust.untrustedInputsOf('m')).toEqual([
      { id: 'failed', key: 'key_failed', verdict: 'use_with_caution', reasons: ['failed_validation'] },
    ]);
  });

  it('follows inputs of inputs, direct inputs first, each named once (a diamond)', () => {
    const trust = upstream(
      { top: ['left', 'right', 'bad'], left: ['root'], right: ['root'], root: [] },
      {
        left: {},
        right: {},
        root: { superseded: true, supersedingMetricId: 'x' },
        bad: { lifecycleStatus: 'DEPRECATED' },
      },
    );
    expect(trust.untrustedInputsOf('top').map((input) => input.id)).toEqual(['bad', 'root']);
    expect(trust.untrustedInputsOf('left').map((input) => input.id)).toEqual(['root']);
  });

  it('an input whose own inputs make it do_not_use under its tier carries over itself', () => {
    const strict = { tierRule: { untrusted_input: 'do_not_use' as const }, policyTier: 'tier_1' };
    const trust = upstream(
      { top: ['middle'], middle: ['root'] },
      { middle: strict, root: { lifecycleStatus: 'DEPRECATED' } },
    );
    expect(trust.untrustedInputsOf('top')).toEqual([
      { id: 'middle', key: 'key_middle', verdict: 'do_not_use', reasons: ['untrusted_input'] },
      { id: 'root', key: 'key_root', verdict: 'do_not_use', reasons: ['deprecated'] },
    ]);
  });

  it('walks a chain of 50,000 without overflowing and ends a cycle where it closes', () => {
    const graph: Record<string, string[]> = {};
    const all: Record<string, Partial<TrustFacts>> = {};
    for (let i = 0; i < 50_000; i++) {
      graph[`m${i}`] = [`m${i + 1}`];
      all[`m${i + 1}`] = i + 1 === 50_000 ? { lifecycleStatus: 'DEPRECATED' } : {};
    }
    expect(
      upstream(graph, all)
        .untrustedInputsOf('m0')
        .map((input) => input.id),
    ).toEqual(['m50000']);
    const cycle = upstream({ a: ['b'], b: ['a'] }, { a: {}, b: { lastValidationFailed: true } });
    expect(cycle.untrustedInputsOf('a').map((input) => input.id)).toEqual(['b']);
  });

  it(`names at most ${MAX_UNTRUSTED_INPUTS}`, () => {
    const ids = Array.from({ length: 25 }, (_, i) => `bad${i}`);
    const trust = upstream({ m: ids }, Object.fromEntries(ids.map((id) => [id, { lifecycleStatus: 'DEPRECATED' }])));
    expect(trust.untrustedInputsOf('m')).toHaveLength(MAX_UNTRUSTED_INPUTS);
  });
});

describe('the verdict with inputs and a tier policy', () => {
  const revenue = { id: 'r', key: 'total_revenue', verdict: 'do_not_use' as const, reasons: ['deprecated' as const] };

  it('an untrusted input is a caution, explained naming the input and why', () => {
    const f = facts({ untrustedInputs: [revenue] });
    const trust = trustVerdict(f, POLICY, NOW);
    expect(trust).toEqual({
      verdict: 'use_with_caution',
      reasons: ['untrusted_input'],
      preferredMetricId: null,
      untrustedInputs: [revenue],
    });
    const [sentence] = trustReasonSentences(trust, f, POLICY, NOW);
    expect(sentence).toContain('total_revenue (r) is do_not_use (deprecated)');
  });

  it('without a rule, today rules hold; a tier rule escalates, shortens staleness and requires', () => {
    const failed = facts({ lastValidationFailed: true, policyTier: 'tier_1' });
    expect(trustVerdict(failed, POLICY, NOW).verdict).toBe('use_with_caution');
    const rule = trustPolicySchema.parse({
      tier_1: {
        failed_validation: 'do_not_use',
        stale_after_days: 7,
        use_requires: ['approved_version', 'owner_team'],
      },
    }).tier_1;
    const strict = { ...failed, tierRule: rule ?? null };
    const trust = trustVerdict(strict, POLICY, NOW);
    expect(trust).toMatchObject({ verdict: 'do_not_use', reasons: ['failed_validation'] });
    expect(trustReasonSentences(trust, strict, POLICY, NOW)[0]).toContain(
      'trust policy tier_1: failed_validation makes the verdict do_not_use',
    );
    const eightDays = facts({
      tierRule: rule ?? null,
      policyTier: 'tier_1',
      lastValidatedAt: new Date(NOW.getTime() - 8 * DAY),
      hasApprovedVersion: false,
      ownerTeam: ' ',
    });
    expect(trustVerdict(eightDays, POLICY, NOW)).toMatchObject({
      verdict: 'use_with_caution',
      reasons: ['stale_validation', 'no_approved_version', 'no_owner_team'],
    });
    expect(trustVerdict({ ...eightDays, tierRule: null }, POLICY, NOW).verdict).toBe('use');
  });

  it('a policy that is not a rule is refused with its place', () => {
    const parsed = trustPolicySchema.safeParse({
      tier_1: { failed_validation: 'never', stale_after_days: 0, typo: 1 },
    });
    expect(parsed.success).toBe(false);
    const paths = parsed.error?.issues.map((issue) => issue.path.join('.')) ?? [];
    expect(paths).toEqual(expect.arrayContaining(['tier_1.failed_validation', 'tier_1.stale_after_days']));
  });
});
