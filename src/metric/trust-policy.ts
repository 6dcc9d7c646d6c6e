/**
 * Trust policy as code (docs/trust.md#trust-policy): the registry document's
 * `trust_policy`, rules per `policy_tier` that tighten the verdict of the
 * metrics of that tier. Stored whole on the organization (its
 * `trust_policy`); each metric's verdict reads the rule of its own tier in
 * the statement that reads its other facts. A tier without a rule, and an
 * organization without a policy, keep the server's defaults.
 */
import { z } from 'zod';

/** What a rule can ask `use` to need: a current approved version, an owner team. */
export const USE_REQUIREMENTS = ['approved_version', 'owner_team'] as const;
export type UseRequirement = (typeof USE_REQUIREMENTS)[number];

/** The caution reasons a rule can make decisive (do_not_use instead of use_with_caution). */
export const ESCALATABLE_REASONS = [
  'pre_release',
  'open_objections',
  'never_validated',
  'failed_validation',
  'stale_validation',
  'conflicting_definition',
  'untrusted_input',
] as const;
export type EscalatableReason = (typeof ESCALATABLE_REASONS)[number];

const verdictOfReason = z.enum(['use_with_caution', 'do_not_use']);

/** The most days a rule may allow before evidence is stale (100 years). */
export const MAX_STALE_AFTER_DAYS = 36_500;

export const tierRuleSchema = z.strictObject({
  stale_after_days: z.number().int().positive().max(MAX_STALE_AFTER_DAYS).optional(),
  use_requires: z
    .array(z.enum(USE_REQUIREMENTS))
    .max(USE_REQUIREMENTS.length)
    .refine((items) => new Set(items).size === items.length, 'each requirement at most once')
    .optional(),
  ...Object.fromEntries(ESCALATABLE_REASONS.map((reason) => [reason, verdictOfReason.optional()])),
}) as z.ZodType<TierRule>;

export interface TierRule {
  stale_after_days?: number;
  use_requires?: UseRequirement[];
  pre_release?: 'use_with_caution' | 'do_not_use';
  open_objections?: 'use_with_caution' | 'do_not_use';
  never_validated?: 'use_with_caution' | 'do_not_use';
  failed_validation?: 'use_with_caution' | 'do_not_use';
  stale_validation?: 'use_with_caution' | 'do_not_use';
  conflicting_definition?: 'use_with_caution' | 'do_not_use';
  untrusted_input?: 'use_with_caution' | 'do_not_use';
}

/** Tier names as metrics carry them (`policy_tier`), at most this many rules. */
export const MAX_POLICY_TIERS = 100;

export const trustPolicySchema = z
  .record(z.string().min(1).max(128), tierRuleSchema)
  .refine((tiers) => Object.keys(tiers).length <= MAX_POLICY_TIERS, `at most ${MAX_POLICY_TIERS} tiers`);

/** The document's `trust_policy`: a rule per tier name. */
export type TrustPolicyDocument = Record<string, TierRule>;

/**
 * The rule of one tier as stored JSON reads back; anything that is not a
 * rule object (a column written by hand) counts as no rule.
 */
export function tierRuleOf(value: unknown): TierRule | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const parsed = tierRuleSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}
