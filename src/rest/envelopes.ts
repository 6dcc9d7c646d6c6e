/**
 * Maps operation results into the documented envelopes (contract 2.1).
 * Field names already come right from the operations' aliases; what is left
 * is the envelope itself, splitting the detail into `metric` and its
 * siblings, and the conservative defaults of degraded supporting reads.
 */
import type { ListMetricsQuery, MetricContractQuery, MetricDetailQuery } from './operations.generated.js';

const meta = { apiVersion: 'v1' } as const;

export function listEnvelope(result: ListMetricsQuery['metrics']) {
  return { data: result.items, pagination: result.pagination, meta };
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
] satisfies (keyof DetailMetric)[]);

export function detailEnvelope(detail: DetailMetric) {
  const metric: Record<string, unknown> = {};
  const siblings: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(detail)) {
    (DETAIL_SIBLINGS.has(name) ? siblings : metric)[name] = value;
  }
  return { data: { metric, ...siblings }, meta };
}

type ContractMetric = NonNullable<MetricContractQuery['metric']>;

/**
 * A supporting read that failed comes back null; consumers get the
 * conservative default (0, []) as contract section 4.3 says.
 */
export function contractEnvelope(contract: ContractMetric) {
  return {
    data: {
      ...contract,
      challenges_count: contract.challenges_count ?? 0,
      open_challenges_count: contract.open_challenges_count ?? 0,
      discussion_thread_count: contract.discussion_thread_count ?? 0,
      discussion_message_count: contract.discussion_message_count ?? 0,
      agent_context_notes: contract.agent_context_notes ?? [],
    },
    meta,
  };
}
