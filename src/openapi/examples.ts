/**
 * Examples shown in the OpenAPI document. The OpenAPI tests validate each one
 * against the schema it illustrates, so they cannot drift from it.
 */
import type { PlanResult } from '../registry/plan.js';

const metricId = '3f1c2a9e-8b4d-4c6e-9a1f-2b3c4d5e6f70';
const orgId = '0b7e4a52-1c3d-4e5f-8a9b-0c1d2e3f4a5b';
const T = '2026-01-15T09:30:00.000Z';
const grossRevenueId = '4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d';
const refundsId = '6c7d8e9f-0a1b-4c2d-8e3f-4a5b6c7d8e9f';

/** The inputs of the example metric, as the detail and the contract show them. */
const exampleInputs = [
  { id: grossRevenueId, key: 'gross_revenue', name: 'Gross Revenue', verdict: 'use' },
  { id: refundsId, key: 'refunds', name: 'Refunds', verdict: 'use_with_caution' },
];

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
      // The contract's verdict object, whatever fields it has (contractData is declared below).
      get trust() {
        return contractData.trust;
      },
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
    inputs: exampleInputs,
    dependents_count: 2,
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
  business_definition_status: 'defined',
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
  trust: { verdict: 'use', reasons: [], preferred_metric_id: null, untrusted_inputs: [] },
  inputs: exampleInputs,
  dependents_count: 2,
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

export const lineageExample = {
  data: {
    metric_id: metricId,
    direction: 'upstream',
    depth: 3,
    total: 2,
    truncated: false,
    nodes: [
      {
        id: grossRevenueId,
        key: 'gross_revenue',
        name: 'Gross Revenue',
        lifecycle_status: 'RELEASED',
        verdict: 'use',
        depth: 1,
        via: { metric_id: metricId, input_metric_id: grossRevenueId, position: 0 },
      },
      {
        id: refundsId,
        key: 'refunds',
        name: 'Refunds',
        lifecycle_status: 'CANDIDATE',
        verdict: 'use_with_caution',
        depth: 1,
        via: { metric_id: metricId, input_metric_id: refundsId, position: 1 },
      },
    ],
  },
  next_cursor: null,
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

const tokenId = '4d5e6f70-8192-4a3b-9c4d-5e6f7a8b9c0d';

export const createServiceTokenRequestExample = {
  name: 'CI (registry)',
  scopes: ['registry:write', 'validations:write'],
};

export const createdServiceTokenExample = {
  data: {
    id: tokenId,
    name: 'CI (registry)',
    token: 'cls_89abcdef0123456789abcdef0123456789abcdef',
    scopes: ['registry:write', 'validations:write'],
    created_at: T,
  },
};

export const serviceTokenListExample = {
  data: [
    {
      id: tokenId,
      name: 'CI (registry)',
      token_prefix: 'cls_89abcdef',
      scopes: ['registry:write', 'validations:write'],
      created_at: T,
      revoked_at: null,
      last_used_at: '2026-01-16T06:00:00.000Z',
    },
  ],
};

export const revokedServiceTokenExample = { data: { id: tokenId, revoked_at: T } };

const webhookId = '7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d';
const webhookEventId = '0f1e2d3c-4b5a-4968-8776-655443322110';

export const createWebhookRequestExample = {
  url: 'https://hooks.acme.example/metrics',
  types: ['metric.trust_changed', 'metric.removed'],
  description: 'BI cache invalidation',
};

export const createdWebhookExample = {
  data: {
    id: webhookId,
    url: 'https://hooks.acme.example/metrics',
    types: ['metric.trust_changed', 'metric.removed'],
    description: 'BI cache invalidation',
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw2m1/nE2JdPA=',
    created_at: T,
  },
};

export const webhookListExample = {
  data: [
    {
      id: webhookId,
      url: 'https://hooks.acme.example/metrics',
      types: ['metric.trust_changed', 'metric.removed'],
      description: 'BI cache invalidation',
      created_at: T,
      disabled_at: null,
      disabled_reason: null,
      failing_since: null,
      next_attempt_at: T,
      last_delivery: { time: '2026-01-16T06:00:00.000Z', status_code: 204, error: null },
    },
  ],
};

export const deletedWebhookExample = { data: { id: webhookId, deleted: true } };

export const webhookDeliveriesExample = {
  data: [
    {
      event_id: webhookEventId,
      type: 'metric.trust_changed',
      attempt: 2,
      status_code: 204,
      error: null,
      duration_ms: 84,
      time: '2026-01-16T06:00:05.000Z',
    },
    {
      event_id: webhookEventId,
      type: 'metric.trust_changed',
      attempt: 1,
      status_code: null,
      error: 'no answer within 10000 ms',
      duration_ms: 10001,
      time: '2026-01-16T06:00:00.000Z',
    },
  ],
};

export const webhookTestExample = {
  data: {
    event_id: webhookEventId,
    type: 'webhook.test',
    delivered: true,
    status_code: 204,
    error: null,
    duration_ms: 84,
  },
};

/**
 * A registry document, as YAML (shown in the route's description and as the
 * application/yaml example) and as the data it reads as (the JSON example);
 * the tests check that the two are the same document and that it applies.
 */
export const registryDocumentYaml = `organization: acme
defaults:
  project: Core Analytics
  domain: Finance
  owner_team: Finance Analytics
metrics:
  - key: net_revenue_retention
    name: Net Revenue Retention
    description: Revenue kept from last year's customers, expansion included.
    sql_expression: SUM(arr_end_of_period) / NULLIF(SUM(arr_start_of_period), 0)
    lifecycle_status: RELEASED
    definition_version: "3.0.0"
    policy_tier: tier_1
    scope: enterprise_canonical
    aliases: [NRR, net dollar retention]
    grains: [month, quarter, year]
    business_definition:
      included: Subscription revenue of customers active twelve months ago.
      excluded: One-off services and refunds issued after period close.
      time_window: trailing twelve months, at month end
    versions:
      - definition_version: "3.0.0"
        status: released
        released_at: 2026-02-15T00:00:00Z
    approvals:
      - definition_version: "3.0.0"
        approver_role: finance_controller
        approver: ada@acme.example
        decision: approved
        decided_at: 2026-02-14T10:00:00Z
    relationships:
      - kind: supersedes
        target: net_revenue_retention_legacy
  - key: net_revenue_retention_legacy
    name: Net Revenue Retention (legacy)
    description: The definition before expansion revenue was counted.
    sql_expression: SUM(arr_retained) / NULLIF(SUM(arr_start_of_period), 0)
    lifecycle_status: DEPRECATED
`;

export const registryDocumentExample = {
  organization: 'acme',
  defaults: { project: 'Core Analytics', domain: 'Finance', owner_team: 'Finance Analytics' },
  metrics: [
    {
      key: 'net_revenue_retention',
      name: 'Net Revenue Retention',
      description: "Revenue kept from last year's customers, expansion included.",
      sql_expression: 'SUM(arr_end_of_period) / NULLIF(SUM(arr_start_of_period), 0)',
      lifecycle_status: 'RELEASED',
      definition_version: '3.0.0',
      policy_tier: 'tier_1',
      scope: 'enterprise_canonical',
      aliases: ['NRR', 'net dollar retention'],
      grains: ['month', 'quarter', 'year'],
      business_definition: {
        included: 'Subscription revenue of customers active twelve months ago.',
        excluded: 'One-off services and refunds issued after period close.',
        time_window: 'trailing twelve months, at month end',
      },
      versions: [{ definition_version: '3.0.0', status: 'released', released_at: '2026-02-15T00:00:00Z' }],
      approvals: [
        {
          definition_version: '3.0.0',
          approver_role: 'finance_controller',
          approver: 'ada@acme.example',
          decision: 'approved',
          decided_at: '2026-02-14T10:00:00Z',
        },
      ],
      relationships: [{ kind: 'supersedes', target: 'net_revenue_retention_legacy' }],
    },
    {
      key: 'net_revenue_retention_legacy',
      name: 'Net Revenue Retention (legacy)',
      description: 'The definition before expansion revenue was counted.',
      sql_expression: 'SUM(arr_retained) / NULLIF(SUM(arr_start_of_period), 0)',
      lifecycle_status: 'DEPRECATED',
    },
  ],
};

const totals = (counts: Partial<Record<PlanResult, number>>) => ({
  created: 0,
  restored: 0,
  updated: 0,
  unchanged: 0,
  absent: 0,
  removed: 0,
  ...counts,
});

/** The example document applied to an organization that had `arr_old` and not `net_revenue_retention_legacy`. */
export const registryPlanExample = {
  data: {
    organization: 'acme',
    source: 'registry',
    plan: [
      {
        key: 'net_revenue_retention',
        result: 'updated',
        changed_fields: ['lifecycle_status', 'definition_version', 'versions', 'approvals', 'relationships'],
        changes: [
          { field: 'lifecycle_status', from: 'CANDIDATE', to: 'RELEASED' },
          { field: 'definition_version', from: '2.0.0', to: '2.1.0' },
          {
            field: 'versions',
            from: [['2.0.0', 'released', '2026-01-05T00:00:00.000Z', '']],
            to: [
              ['2.0.0', 'released', '2026-01-05T00:00:00.000Z', ''],
              ['2.1.0', 'released', '2026-03-02T00:00:00.000Z', 'Excludes trial accounts.'],
            ],
          },
          {
            field: 'approvals',
            from: [],
            to: [['2.1.0', null, 'metric_owner', 'approved', '2026-03-01T00:00:00.000Z', '']],
          },
          { field: 'relationships', from: [], to: [['supersedes', 'net_revenue_retention_legacy']] },
        ],
      },
      { key: 'net_revenue_retention_legacy', result: 'created', changed_fields: [] },
      { key: 'arr_old', result: 'absent', changed_fields: [] },
    ],
    totals: totals({ created: 1, updated: 1, absent: 1 }),
    trust_policy: 'unchanged',
    dry_run: false,
    applied: true,
    allow_removals_required: null,
    impact: [],
  },
};

export const registryDryRunExample = {
  data: {
    organization: 'acme',
    source: 'registry',
    plan: [
      { key: 'net_revenue_retention', result: 'unchanged', changed_fields: [] },
      { key: 'net_revenue_retention_legacy', result: 'unchanged', changed_fields: [] },
      { key: 'arr_old', result: 'removed', changed_fields: [] },
    ],
    totals: totals({ unchanged: 2, removed: 1 }),
    trust_policy: 'unchanged',
    dry_run: true,
    applied: false,
    allow_removals_required: null,
    impact: [
      {
        key: 'arr_old',
        change: 'removed',
        dependents: { count: 2, keys: ['arr_per_customer', 'arr_growth'] },
        readers: { count: 2, keys: ['Looker production', 'Finance agent'] },
      },
    ],
  },
};

export const registryNoChangeExample = {
  data: {
    organization: 'acme',
    source: 'registry',
    plan: [
      { key: 'net_revenue_retention', result: 'unchanged', changed_fields: [] },
      { key: 'net_revenue_retention_legacy', result: 'unchanged', changed_fields: [] },
    ],
    totals: totals({ unchanged: 2 }),
    trust_policy: 'unchanged',
    dry_run: false,
    applied: false,
    allow_removals_required: null,
    impact: [],
  },
};

export const metricSourcesExample = {
  data: {
    metric_id: metricId,
    key: 'net_revenue',
    source: 'dbt:finance',
    fields: [
      { field: 'lifecycle_status', source: 'registry' },
      { field: 'name', source: 'dbt:finance' },
      { field: 'policy_tier', source: 'registry' },
      { field: 'sql_expression', source: 'dbt:finance' },
    ],
  },
};

export const metricUsageExample = {
  data: {
    metric_id: metricId,
    key: 'net_revenue',
    days: 30,
    since: '2025-12-17',
    reads: 1250,
    readers: 2,
    keys: [
      {
        id: '6c7d8e9f-0a1b-4c2d-9e3f-4a5b6c7d8e9f',
        kind: 'api_key',
        name: 'Looker production',
        prefix: 'cl_0123abcd',
        revoked_at: null,
        reads: 1200,
        last_read_on: '2026-01-15',
      },
      {
        id: '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b',
        kind: 'api_key',
        name: 'Finance agent',
        prefix: 'cl_4567cdef',
        revoked_at: null,
        reads: 50,
        last_read_on: '2026-01-14',
      },
    ],
    daily: [
      { day: '2026-01-14', reads: 610 },
      { day: '2026-01-15', reads: 640 },
    ],
  },
};

export const validationsRequestExample = {
  results: [
    {
      metric_key: 'net_revenue_retention',
      ran_at: '2026-03-01T06:00:00Z',
      status: 'passed',
      details: 'dbt test: 4 of 4 assertions passed',
      source: 'dbt-ci',
    },
    { metric_key: 'net_revenue_retention_legacy', ran_at: '2026-03-01T06:00:00Z', status: 'failed', source: 'dbt-ci' },
  ],
};

export const recordedValidationsExample = { data: { recorded: 2, duplicates: 0 } };

/** POST /api/validations/dbt: a failing test on the model behind customers, a metric the registry lacks. */
export const dbtValidationsExample = {
  data: {
    ran_at: '2026-03-01T06:00:00.000Z',
    source: 'dbt',
    recorded: 2,
    duplicates: 0,
    metrics: [
      { key: 'revenue', status: 'passed', tests: { passed: 3, warned: 1, failed: 0, errored: 0 }, outcome: 'recorded' },
      {
        key: 'customer_count',
        status: 'failed',
        tests: { passed: 1, warned: 0, failed: 1, errored: 0 },
        outcome: 'recorded',
      },
      {
        key: 'gross_margin',
        status: 'passed',
        tests: { passed: 3, warned: 1, failed: 0, errored: 0 },
        outcome: 'unmatched',
      },
      { key: 'refund_rate', status: null, tests: { passed: 0, warned: 0, failed: 0, errored: 0 }, outcome: 'no_tests' },
    ],
    unmatched: ['gross_margin'],
    results: { counted: 5, onNoMetric: 2, skipped: 1, notTests: 0 },
  },
};

/** GET /api/v1/changes: a metric superseded by a new one, in one apply. */
export const changeFeedExample = {
  data: [
    {
      specversion: '1.0',
      id: '6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f',
      source: '/organizations/00000000-0000-4000-8000-000000000001',
      type: 'metric.created',
      subject: '7b0e4a52-3c1d-5e8f-9a2b-4c6d8e0f1a3b',
      time: '2026-11-25T09:00:00.000Z',
      datacontenttype: 'application/json',
      data: {
        id: '7b0e4a52-3c1d-5e8f-9a2b-4c6d8e0f1a3b',
        key: 'net_revenue_v2',
        name: 'Net Revenue (v2)',
        lifecycle_status: 'RELEASED',
      },
    },
    {
      specversion: '1.0',
      id: '8a2d3e4f-5b6c-4d7e-9f0a-1b2c3d4e5f60',
      source: '/organizations/00000000-0000-4000-8000-000000000001',
      type: 'metric.trust_changed',
      subject: '2c4e6a8b-0d1f-5a3b-8c5d-7e9f1a2b3c4d',
      time: '2026-11-25T09:00:00.000Z',
      datacontenttype: 'application/json',
      data: {
        id: '2c4e6a8b-0d1f-5a3b-8c5d-7e9f1a2b3c4d',
        key: 'net_revenue',
        name: 'Net Revenue',
        lifecycle_status: 'RELEASED',
        from: { verdict: 'use', reasons: [] },
        to: { verdict: 'do_not_use', reasons: ['superseded'] },
        preferred_metric_id: '7b0e4a52-3c1d-5e8f-9a2b-4c6d8e0f1a3b',
      },
    },
  ],
  next_cursor: 'AQAAAAAAAABAAIAAAAAAAAEAAAAAAAAAAg',
  meta: { apiVersion: 'v1' },
};
