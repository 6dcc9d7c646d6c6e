/**
 * Examples shown in the OpenAPI document. The OpenAPI tests validate each one
 * against the schema it illustrates, so they cannot drift from it.
 */
const metricId = '3f1c2a9e-8b4d-4c6e-9a1f-2b3c4d5e6f70';
const orgId = '0b7e4a52-1c3d-4e5f-8a9b-0c1d2e3f4a5b';
const T = '2026-01-15T09:30:00.000Z';

export const listExample = {
  data: [
    {
      id: metricId,
      name: 'Net Revenue',
      description: 'Gross revenue minus refunds and discounts.',
      policy_tier: 'tier_1',
      owner_team: 'Finance Analytics',
      status: 'approved',
      lifecycle_status: 'RELEASED',
      definition_version: '2.1.0',
      scope: 'enterprise_canonical',
      domain_id: null,
      created_at: T,
      updated_at: T,
      concept_name: 'net_revenue',
      template_name: 'count_or_sum',
    },
  ],
  pagination: { page: 1, pageSize: 20, total: 1, totalPages: 1 },
  meta: { apiVersion: 'v1' },
};

export const detailExample = {
  data: {
    metric: {
      id: metricId,
      org_id: orgId,
      project_id: '5d6e7f80-9a0b-4c1d-8e2f-3a4b5c6d7e8f',
      metric_type: 'base',
      key: 'net_revenue',
      name: 'Net Revenue',
      description: 'Gross revenue minus refunds and discounts.',
      definition_version: '2.1.0',
      status: 'approved',
      policy_tier: 'tier_1',
      owner_team: 'Finance Analytics',
      owner_display_name: 'Ada Lovelace',
      tags: ['finance'],
      aliases: ['NR'],
      concept_name: 'net_revenue',
      template_name: 'count_or_sum',
      sql_expression: 'SUM(amount) - SUM(refunds)',
      grains: ['day', 'month'],
      default_grain: 'day',
      dimensions: [],
      filters: [],
      source_refs: [{ table: 'analytics.orders' }],
      expression: null,
      dependencies: null,
      lifecycle_status: 'RELEASED',
      scope: 'enterprise_canonical',
      domain_id: null,
      created_at: T,
      updated_at: T,
    },
    relationships: [],
    approvals: [],
    versionHistory: [],
    fiscal_calendar_start_month: 1,
    time_semantics: null,
    deprecated_framing_rules: [],
    dimension_map: {},
    column_aliases: {},
    execution_context: { resolved_parameters: {}, rendered_sql_examples: [], latest_closed_period: null },
    governance_facts: {
      owner_team: 'Finance Analytics',
      approver_role: null,
      approver_user: null,
      approved_at: null,
      lifecycle_status: 'RELEASED',
      current_version: '2.1.0',
      effective_from: null,
      effective_to: null,
      next_review_date: null,
    },
    approval_state: null,
    consumer_contexts: {},
    requires_disambiguation: null,
    policy_examples: [],
  },
  meta: { apiVersion: 'v1' },
};

const contractData = {
  metric_id: metricId,
  name: 'Net Revenue',
  business_definition: {
    included: 'Completed orders.',
    excluded: 'Test orders.',
    time_window: 'Calendar month',
    caveats: '',
    legacy_description: '',
  },
  current_approved_version: {
    id: '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d',
    definition_version: '2.1.0',
    released_at: T,
  },
  last_validated_at: T,
  lifecycle_status: 'RELEASED',
  challenges_count: 0,
  open_challenges_count: 0,
  requires_disambiguation: null,
  canonical_url: `https://app.example.com/acme/metrics/${metricId}`,
  discussion_thread_count: 1,
  discussion_message_count: 2,
  agent_context_notes: [
    {
      message_id: '9c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f',
      thread_id: '1e2f3a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b',
      intent: 'decision_rationale',
      author_display_name: 'Ada Lovelace',
      body: 'Refunds are netted in the month they are issued.',
      pinned_at: T,
      created_at: T,
    },
  ],
  discourse_summary: null,
  trust: { verdict: 'use', reasons: [], preferred_metric_id: null },
};

export const contractExample = { data: contractData, meta: { apiVersion: 'v1' } };

export const contractWithSummaryExample = {
  data: {
    ...contractData,
    discussion_summary: 'Decided: refunds are netted in the month they are issued.',
    discussion_summary_meta: { cache_hit: false, charged: true },
  },
  meta: { apiVersion: 'v1' },
};

const keyId = '2b3c4d5e-6f70-4a81-9b2c-3d4e5f6a7b8c';

export const createKeyRequestExample = { name: 'BI connector', rate_limit_per_minute: 120 };

export const createdKeyExample = {
  data: {
    id: keyId,
    name: 'BI connector',
    key: 'cl_0123456789abcdef0123456789abcdef01234567',
    scopes: ['canonical-metric-api:read', 'definition:read'],
    sandbox: false,
    rate_limit_per_minute: 120,
    created_at: T,
  },
};

export const keyListExample = {
  data: [
    {
      id: keyId,
      name: 'BI connector',
      key_prefix: 'cl_012345',
      scopes: ['canonical-metric-api:read', 'definition:read'],
      sandbox: false,
      rate_limit_per_minute: 120,
      created_at: T,
      revoked_at: null,
      last_used_at: null,
    },
  ],
};

export const revokedKeyExample = { data: { id: keyId, revoked_at: T } };
