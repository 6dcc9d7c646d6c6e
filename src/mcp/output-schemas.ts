/**
 * The tools' output schemas, kept small: `tools/list` is read by every agent
 * on every connection, so a schema names each field once, with its type, and
 * a nested object the contract already defines is described in a few words
 * rather than spelt out again (the REST OpenAPI document has them in full).
 */
import { z } from 'zod';
import { BUSINESS_DEFINITION_STATUSES } from '../metric/business-definition.js';
import { TRUST_REASONS, TRUST_VERDICTS } from '../metric/trust.js';

/** A nested object the contract defines, named by its fields rather than spelt out again. */
const described = (fields: string) => z.unknown().describe(fields);

export const TrustOutput = z.object({
  verdict: z.enum(TRUST_VERDICTS),
  reasons: z.array(z.enum(TRUST_REASONS)),
  explanations: z.array(z.string()).describe('per reason, in order: what it means, what to do'),
  preferred_metric_id: z.string().nullable().describe('do_not_use: the metric to use instead'),
  untrusted_inputs: described('[{ id, key, verdict, reasons }]'),
});
export type TrustOutputValue = z.infer<typeof TrustOutput>;
/** The trust of get_metric and resolve_metric: get_metric_contract's schema spells it out once. */
const trustAsInContract = described("as get_metric_contract's");

export const SearchItem = z.object({
  id: z.string(),
  key: z.string(),
  name: z.string(),
  description: z.string().describe('may end in "…[truncated]"'),
  lifecycle_status: z.string(),
  scope: z.string(),
  policy_tier: z.string(),
  owner_team: z.string(),
  trust: described('{ verdict }'),
});

export const SearchOutput = {
  items: z.array(SearchItem),
  total: z.number(),
  page: z.number(),
  page_size: z.number(),
  corrected: z.array(z.object({ from: z.string(), to: z.string() })).optional(),
  did_you_mean: z.array(z.string()).optional(),
};

export const MetricOutput = {
  id: z.string(),
  key: z.string(),
  name: z.string(),
  description: z.string(),
  lifecycle_status: z.string(),
  definition_version: z.string(),
  sql_expression: z.string(),
  grains: z.array(z.string()),
  default_grain: z.string(),
  dimensions: z.array(z.unknown()),
  filters: z.array(z.string()),
  source_refs: z.array(z.unknown()),
  owner_team: z.string(),
  policy_tier: z.string(),
  scope: z.string(),
  tags: z.array(z.string()),
  trust: trustAsInContract,
  inputs: described("as the contract's"),
  inputs_omitted: z.number().optional(),
};

export const ContractOutput = {
  metric_id: z.string(),
  name: z.string(),
  // Strings, never cut (the tool's description says so); the status says whether they define anything.
  business_definition: described('{ included, excluded, time_window, caveats, legacy_description }'),
  business_definition_status: z.enum(BUSINESS_DEFINITION_STATUSES),
  current_approved_version: described('{ id, definition_version, released_at } or null'),
  last_validated_at: z.string().nullable(),
  lifecycle_status: z.string(),
  challenges_count: z.number(),
  open_challenges_count: z.number(),
  requires_disambiguation: described(
    '{ preferred_metric_id, candidates: [{ metric_id, key, name, lifecycle_status, relation }] } or null',
  ),
  canonical_url: z.string(),
  discussion_thread_count: z.number(),
  discussion_message_count: z.number(),
  agent_context_notes: z
    .array(z.unknown())
    .describe('newest first: { message_id, thread_id, intent, author_display_name, body, pinned_at, created_at }'),
  agent_context_notes_omitted: z.number().optional().describe('older notes left out (4 KB)'),
  discourse_summary: described('{ open_objections_count, open_proposals_count, last_activity_at } or null'),
  trust: TrustOutput,
  // What it is built from; left out whole last of all (4 KB), those of verdict use first.
  inputs: described('[{ id, key, name, verdict }]'),
  inputs_omitted: z.number().optional(),
  discussion_summary: z.string().nullable().optional().describe('with summary: true'),
  discussion_summary_meta: described('with summary: true: { cache_hit, charged }').optional(),
};

const Resolved = z.object({
  id: z.string(),
  key: z.string(),
  name: z.string(),
  lifecycle_status: z.string(),
  trust: trustAsInContract,
});
export type ResolvedValue = Omit<z.infer<typeof Resolved>, 'trust'> & { trust: TrustOutputValue };
export const ResolveOutput = {
  match: Resolved.nullable(),
  canonical: described('as match: the metric to use'),
  candidates: z.array(z.unknown()).describe('as match: up to 5 to tell apart'),
};

/** An event of list_changes: the feed's CloudEvent, flattened for an agent. */
export interface ChangeItem {
  id: string;
  type: string;
  time: string;
  metric_id: string;
  key: string;
  name: string;
  lifecycle_status: string;
  change: Record<string, unknown>;
}

export const ChangesOutput = {
  events: z.array(described('{ id, type, time, metric_id, key, name, lifecycle_status, change }')),
  next_cursor: z.string(),
};
