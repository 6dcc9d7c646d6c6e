/**
 * Maps operation results into the documented envelopes (contract 2.1).
 * Field names already come right from the operations' aliases; what is left
 * is the envelope itself, splitting the detail into `metric` and its
 * siblings, and the conservative defaults of degraded supporting reads.
 */
import type { ListMetricsQuery, MetricContractQuery, MetricDetailQuery } from './operations.generated.js';

const meta = { apiVersion: 'v1' } as const;

/**
 * The list's meta carries a search's account of itself, additively: `corrected` when some result
 * came through a correction, `did_you_mean` when the search found nothing.
 */
export function listEnvelope(result: ListMetricsQuery['metrics']) {
  const hints = result.search_hints;
  if (!hints || (!hints.corrected.length && result.pagination.total > 0)) {
    return { data: result.items, pagination: result.pagination, meta };
  }
  return {
    data: result.items,
    pagination: result.pagination,
    meta: {
      ...meta,
      ...(hints.corrected.length ? { corrected: hints.corrected } : {}),
      ...(result.pagination.total === 0 ? { did_you_mean: hints.did_you_mean } : {}),
    },
  };
}

type DetailMetric = NonNullable<MetricDetailQuery['metric']>;

/**
 * Members of the detail operation that are siblings of `metric` in the
 * envelope; they keep the operation's (the contract's) order.
 */
const DETAIL_SIBLINGS = new Set<string>([
  'relationships',
  'approvals',
  'versionHistory',
  'fiscal_calendar_start_month',
  'time_semantics',
  'deprecated_framing_rules',
  'dimension_map',
  'column_aliases',
  'execution_context',
  'governance_facts',
  'approval_state',
  'consumer_contexts',
  'requires_disambiguation',
  'policy_examples',
  'inputs',
  'dependents_count',
] satisfies (keyof DetailMetric)[]);

/** One pass over the operation's result, no copy of it (this runs on every detail request). */
export function detailEnvelope(detail: DetailMetric) {
  const metric: Record<string, unknown> = {};
  const data: Record<string, unknown> = { metric };
  for (const name in detail) {
    // `revision` is what the route tags the response with (src/rest/etag.ts), not a field of the detail.
    if (name !== 'revision') (DETAIL_SIBLINGS.has(name) ? data : metric)[name] = detail[name as keyof DetailMetric];
  }
  return { data, meta };
}

type ContractMetric = NonNullable<MetricContractQuery['metric']>;

/**
 * Response headers of a `summary=true` contract (contract 4.3):
 * `X-Discussion-Summary-Charged` (`0`/`1`) always, `X-Discussion-Summary`
 * (no_discussion, timeout, ...) when discussion_summary is null.
 */
export type SummaryHeaders = Record<string, string>;

/**
 * A supporting read that failed comes back null; consumers get the
 * conservative default (0, []) as contract section 4.3 says. The discussion
 * summary is there only when the operation asked for it (`summary=true`);
 * null means its read failed: no summary, not charged,
 * `X-Discussion-Summary: discussion_unavailable`.
 */
export function contractEnvelope(contract: ContractMetric): { body: unknown; headers: SummaryHeaders | null } {
  // `revision` is what the route tags the response with (src/rest/etag.ts), not a field of the contract.
  const { discussion_summary: summary, revision: _revision, ...rest } = contract;
  const data = {
    ...rest,
    challenges_count: contract.challenges_count ?? 0,
    open_challenges_count: contract.open_challenges_count ?? 0,
    discussion_thread_count: contract.discussion_thread_count ?? 0,
    discussion_message_count: contract.discussion_message_count ?? 0,
    agent_context_notes: contract.agent_context_notes ?? [],
    inputs: contract.inputs ?? [],
    dependents_count: contract.dependents_count ?? 0,
  };
  if (summary === undefined) return { body: { data, meta }, headers: null };
  const outcome = summary ?? {
    text: null,
    cache_hit: false,
    charged: false,
    degraded_reason: 'discussion_unavailable',
  };
  const headers: SummaryHeaders = { 'X-Discussion-Summary-Charged': outcome.charged ? '1' : '0' };
  if (outcome.degraded_reason) headers['X-Discussion-Summary'] = outcome.degraded_reason;
  return {
    body: {
      data: {
        ...data,
        discussion_summary: outcome.text,
        discussion_summary_meta: { cache_hit: outcome.cache_hit, charged: outcome.charged },
      },
      meta,
    },
    headers,
  };
}
