/**
 * The trust verdict of a metric: whether a consumer (an agent, a BI tool)
 * should use it, with the reasons that decided, computed from the governance
 * state the contract serves (contract section 3, "Consumer handling of
 * states"). One pure function over the facts of a metric, and the SQL part
 * that reads those facts (one statement per request for a list, through its
 * DataLoader; inside the metric's own statement for `metric(id)`). REST,
 * GraphQL and the MCP tools all take the verdict from here.
 */
import { type RawBuilder, sql } from 'kysely';
import type { MetricPart } from './parts.js';
import { type EscalatableReason, type TierRule, tierRuleOf } from './trust-policy.js';

export const TRUST_VERDICTS = ['use', 'use_with_caution', 'do_not_use'] as const;
export type TrustVerdictValue = (typeof TRUST_VERDICTS)[number];

/**
 * Reason codes in the order they are listed: first those that are always
 * do_not_use, then the cautions (which a tier's trust policy may make
 * do_not_use, src/metric/trust-policy.ts).
 */
export const TRUST_REASONS = [
  'deprecated',
  'superseded',
  'pre_release',
  'open_objections',
  'never_validated',
  'failed_validation',
  'stale_validation',
  'conflicting_definition',
  'untrusted_input',
  'no_approved_version',
  'no_owner_team',
] as const;
export type TrustReason = (typeof TRUST_REASONS)[number];

/**
 * An upstream metric whose own state carries over to the metrics built on it
 * (docs/trust.md#inputs): its verdict is do_not_use, or its latest validation
 * failed. `reasons` are its own reasons.
 */
export interface UntrustedInput {
  id: string;
  key: string;
  verdict: TrustVerdictValue;
  reasons: TrustReason[];
}

export interface TrustFacts {
  lifecycleStatus: string;
  /** whether another metric of the organization supersedes this one */
  superseded: boolean;
  /** the end of the chain of metrics superseding this one (null when none) */
  supersedingMetricId: string | null;
  openObjectionsCount: number;
  /** the contract's `last_validated_at`: the latest validation run */
  lastValidatedAt: Date | null;
  /** whether the latest validation run (the one at `lastValidatedAt`) failed */
  lastValidationFailed: boolean;
  /** a `conflicts_with` relationship, in either direction */
  conflicting: boolean;
  policyTier: string;
  /** the organization's trust policy rule for `policyTier`; null: the defaults */
  tierRule: TierRule | null;
  /** whether a version is approved or released (the contract's current_approved_version) */
  hasApprovedVersion: boolean;
  ownerTeam: string;
  /** the upstream metrics responsible for `untrusted_input`, as last evaluated (src/changes/trust-transitions.ts) */
  untrustedInputs: UntrustedInput[];
}

export interface Trust {
  verdict: TrustVerdictValue;
  reasons: TrustReason[];
  /** the metric to use instead (the end of the supersession chain); null unless do_not_use and superseded */
  preferredMetricId: string | null;
  /** the upstream metrics behind `untrusted_input`; empty unless it is a reason */
  untrustedInputs: UntrustedInput[];
}

export interface TrustPolicy {
  /** a latest validation older than this many days is stale (a tier's rule may say otherwise) */
  staleValidationDays: number;
}

export const DEFAULT_STALE_VALIDATION_DAYS = 30;

/** Upstream metrics a verdict names at most (the reason holds whatever their number). */
export const MAX_UNTRUSTED_INPUTS = 10;

const DAY_MS = 24 * 60 * 60 * 1000;
/** The owner team an importer records when its source names none. */
export const UNASSIGNED_OWNER_TEAM = 'unassigned';
const PRODUCTION_STATUSES = new Set(['APPROVED', 'RELEASED']);
const ALWAYS_BLOCKING = new Set<TrustReason>(['deprecated', 'superseded']);

/**
 * Whether an owner team is recorded: blank, and the placeholder an importer
 * writes when its source names no owner (`unassigned`), are none.
 */
const hasOwnerTeam = (team: string): boolean => {
  const name = team.trim().toLowerCase();
  return name !== '' && name !== UNASSIGNED_OWNER_TEAM;
};

/** Days after which evidence is stale for a metric: its tier's rule, else the server's. */
export const staleAfterDays = (facts: TrustFacts, policy: TrustPolicy): number =>
  facts.tierRule?.stale_after_days ?? policy.staleValidationDays;

/** Whether the tier's rule makes `reason` decisive (do_not_use). */
const escalated = (rule: TierRule | null, reason: TrustReason): boolean =>
  rule !== null && rule[reason as EscalatableReason] === 'do_not_use';

/**
 * When the metric's validation evidence becomes stale, the one way time moves a verdict (the sweep
 * evaluates the metrics whose time has come, src/changes/sweep.ts): null when it was never
 * validated or is stale at `now` already (as {@link trustVerdict} says: older than the days allow).
 */
export function staleAtOf(facts: TrustFacts, policy: TrustPolicy, now: Date): Date | null {
  if (facts.lastValidatedAt === null) return null;
  const at = facts.lastValidatedAt.getTime() + staleAfterDays(facts, policy) * DAY_MS;
  return at < now.getTime() ? null : new Date(at);
}

export function trustVerdict(facts: TrustFacts, policy: TrustPolicy, now: Date): Trust {
  const found: TrustReason[] = [];
  if (facts.lifecycleStatus === 'DEPRECATED') found.push('deprecated');
  if (facts.superseded) found.push('superseded');
  if (!PRODUCTION_STATUSES.has(facts.lifecycleStatus)) found.push('pre_release');
  if (facts.openObjectionsCount > 0) found.push('open_objections');
  if (facts.lastValidatedAt === null) found.push('never_validated');
  if (facts.lastValidationFailed) found.push('failed_validation');
  const age = facts.lastValidatedAt === null ? 0 : now.getTime() - facts.lastValidatedAt.getTime();
  if (age > staleAfterDays(facts, policy) * DAY_MS) found.push('stale_validation');
  if (facts.conflicting) found.push('conflicting_definition');
  if (facts.untrustedInputs.length) found.push('untrusted_input');
  const requires = new Set(facts.tierRule?.use_requires ?? []);
  if (requires.has('approved_version') && !facts.hasApprovedVersion) found.push('no_approved_version');
  if (requires.has('owner_team') && !hasOwnerTeam(facts.ownerTeam)) found.push('no_owner_team');
  const blocking = found.filter((reason) => ALWAYS_BLOCKING.has(reason) || escalated(facts.tierRule, reason));
  const reasons = blocking.length ? blocking : found;
  const verdict = blocking.length ? 'do_not_use' : found.length ? 'use_with_caution' : 'use';
  return {
    verdict,
    reasons,
    preferredMetricId: facts.superseded && verdict === 'do_not_use' ? facts.supersedingMetricId : null,
    untrustedInputs: reasons.includes('untrusted_input') ? facts.untrustedInputs : [],
  };
}

/**
 * Whether a metric's state carries over to the metrics built on it: its
 * verdict is do_not_use, or its latest validation failed (a failure is
 * evidence about the figures the dependents are computed from, whatever the
 * verdict says). Stale or missing evidence, objections, conflicts and
 * pre-release status stay with the metric.
 */
export const carriesOver = (trust: Trust, facts: TrustFacts): boolean =>
  trust.verdict === 'do_not_use' || facts.lastValidationFailed;

/** Supersession is followed at most this far (a longer chain ends where the walk stops). */
const MAX_CHAIN = 32;

/**
 * The lateral join of {@link trustPart}: the verdict facts of `m`. `skip` is a condition on `tm`
 * under which the facts are not read (their columns are null): a writer that already holds some
 * metrics' facts does not read them twice (src/changes/trust-transitions.ts).
 */
export function trustFactsJoin(skip: RawBuilder<boolean> | null = null) {
  return sql`
    LEFT JOIN LATERAL (
      SELECT tm.lifecycle_status::text AS trust_lifecycle_status,
        (SELECT count(*)::int FROM thread
         WHERE metric_id = tm.id AND intent = 'objection' AND resolution_status = 'open') AS trust_open_objections,
        (SELECT max(ran_at) FROM validation WHERE metric_id = tm.id) AS trust_last_validated_at,
        -- Of several runs at the latest time, a failure wins.
        (SELECT status = 'failed' FROM validation WHERE metric_id = tm.id
         ORDER BY ran_at DESC, status DESC LIMIT 1) AS trust_last_failed,
        EXISTS (SELECT 1 FROM metric_relationship
                WHERE kind = 'conflicts_with' AND (metric_id = tm.id OR target_metric_id = tm.id)) AS trust_conflicting,
        (WITH RECURSIVE chain(id, depth, path) AS (
           SELECT tm.id, 0, ARRAY[tm.id]
           UNION ALL
           SELECT r.metric_id, c.depth + 1, c.path || r.metric_id
           FROM chain c
           JOIN metric_relationship r ON r.target_metric_id = c.id AND r.kind = 'supersedes'
           WHERE NOT r.metric_id = ANY(c.path) AND c.depth < ${MAX_CHAIN})
         SELECT id::text FROM chain WHERE depth > 0 ORDER BY depth DESC, id LIMIT 1) AS trust_superseding_id,
        tm.policy_tier AS trust_policy_tier, tm.owner_team AS trust_owner_team,
        (SELECT o.trust_policy -> tm.policy_tier FROM organization o WHERE o.id = tm.org_id) AS trust_tier_rule,
        EXISTS (SELECT 1 FROM metric_version WHERE metric_id = tm.id AND status IN ('released', 'approved'))
          AS trust_has_approved,
        (SELECT untrusted_inputs FROM metric_trust_state WHERE metric_id = tm.id) AS trust_untrusted_inputs
      FROM metric tm WHERE tm.id = m.id${skip ? sql` AND NOT (${skip})` : sql``}) s_tr ON TRUE`;
}

/**
 * The facts of the verdict for metric `m`. The supersession chain is walked
 * without revisiting a metric (a cycle ends the chain); its end is the metric
 * reached last (farthest, then smallest id when supersessions branch). It
 * stays in the organization without a join to say so: the database keeps
 * both ends of a relationship in one organization (migration
 * 20261124000200_relationship_same_organization). The join was also what a
 * planner with stale statistics (just after a large apply) turned into a
 * scan of the organization's metrics per step: 10 ms a metric at 10,000.
 */
export const trustPart: MetricPart<TrustFacts> = {
  name: 'trust',
  columns: sql`
    s_tr.trust_lifecycle_status, s_tr.trust_open_objections, s_tr.trust_last_validated_at, s_tr.trust_last_failed,
    s_tr.trust_conflicting, s_tr.trust_superseding_id, s_tr.trust_policy_tier, s_tr.trust_owner_team,
    s_tr.trust_tier_rule, s_tr.trust_has_approved, s_tr.trust_untrusted_inputs`,
  joins: trustFactsJoin(),
  read: (row) => {
    const superseding = (row.trust_superseding_id as string | null) ?? null;
    const validated = row.trust_last_validated_at as string | Date | null;
    return {
      lifecycleStatus: row.trust_lifecycle_status as string,
      superseded: superseding !== null,
      supersedingMetricId: superseding,
      openObjectionsCount: (row.trust_open_objections as number | null) ?? 0,
      lastValidatedAt: validated === null || validated === undefined ? null : new Date(validated),
      lastValidationFailed: row.trust_last_failed === true,
      conflicting: row.trust_conflicting === true,
      policyTier: row.trust_policy_tier as string,
      tierRule: tierRuleOf(row.trust_tier_rule),
      hasApprovedVersion: row.trust_has_approved === true,
      ownerTeam: (row.trust_owner_team as string | null) ?? '',
      untrustedInputs: (row.trust_untrusted_inputs as UntrustedInput[] | null) ?? [],
    };
  },
};

const describeInput = (input: UntrustedInput) =>
  `${input.key} (${input.id}) is ${input.verdict}${input.reasons.length ? ` (${input.reasons.join(', ')})` : ''}`;

/**
 * One sentence per reason of `trust`, in its order, saying what the reason
 * means for this metric and what to do about it (for agents, which cannot
 * read the README). `facts` are the ones the verdict was computed from. A
 * reason that the tier's trust policy made decisive names that rule.
 */
export function trustReasonSentences(trust: Trust, facts: TrustFacts, policy: TrustPolicy, now: Date): string[] {
  const preferred = trust.preferredMetricId;
  const sentence = (reason: TrustReason): string => {
    switch (reason) {
      case 'deprecated':
        return preferred
          ? `lifecycle status is DEPRECATED; use metric ${preferred} (preferred_metric_id) instead`
          : 'lifecycle status is DEPRECATED and no replacement is recorded; ask the owner team which metric to use';
      case 'superseded':
        return `metric ${preferred} supersedes this one; use it instead (get_metric_contract with that id)`;
      case 'pre_release':
        return `lifecycle status is ${facts.lifecycleStatus}, not APPROVED or RELEASED; the definition may still change, so say that figures are provisional`;
      case 'open_objections': {
        const count = facts.openObjectionsCount;
        return `${count} open objection${count === 1 ? '' : 's'} dispute${count === 1 ? 's' : ''} this definition; read the pinned notes and mention the objection when reporting figures`;
      }
      case 'never_validated':
        return 'no validation run is recorded; check the figures against a trusted source before relying on them';
      case 'failed_validation':
        return 'the latest validation run failed; do not report its figures as verified, and tell the owner team';
      case 'stale_validation': {
        const days = facts.lastValidatedAt ? Math.floor((now.getTime() - facts.lastValidatedAt.getTime()) / DAY_MS) : 0;
        const rule = facts.tierRule?.stale_after_days;
        const limit = rule === undefined ? '' : ` (trust policy ${facts.policyTier}: stale_after_days ${rule})`;
        return `latest validation evidence is ${days} days old; the limit is ${staleAfterDays(facts, policy)} days${limit}, so ask the owner team to re-validate or say the figures are unverified`;
      }
      case 'conflicting_definition':
        return 'another metric of the organization conflicts with this definition; confirm which one is meant (resolve_metric lists the candidates)';
      case 'untrusted_input': {
        const [first, ...rest] = trust.untrustedInputs;
        const more = rest.length ? `; also ${rest.map(describeInput).join('; ')}` : '';
        return first
          ? `it is computed from an input that cannot be trusted: ${describeInput(first)}${more}; its figures inherit that problem, so say so or use a metric built on trusted inputs`
          : 'it is computed from an input that cannot be trusted; read its lineage for which one';
      }
      case 'no_approved_version':
        return `the trust policy of ${facts.policyTier} requires an approved or released version for use, and none is recorded`;
      case 'no_owner_team':
        return `the trust policy of ${facts.policyTier} requires an owner team for use, and none is recorded`;
    }
    return reason;
  };
  return trust.reasons.map((reason) => {
    const text = sentence(reason);
    return escalated(facts.tierRule, reason)
      ? `${text} (trust policy ${facts.policyTier}: ${reason} makes the verdict do_not_use)`
      : text;
  });
}
