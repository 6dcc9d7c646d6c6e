/**
 * GET /api/v1/metrics/{id}: the metric object and its siblings (contract
 * 2.3), stable defaults, disambiguation hints, 400 and 404.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { legacyStatus, type MetricJson, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, utc } from './expectations.js';

const r = registry();
const org = r.org({ fiscal_calendar_start_month: 4 });
const domain = org.domain('Finance');
const target = org.metric({ name: 'Gross Revenue', key: 'gross_revenue', lifecycle_status: 'CANDIDATE' });
const full = org.metric({
  key: 'net_revenue',
  name: 'Net Revenue',
  description: 'Recognized revenue net of refunds.',
  metric_type: 'derived',
  lifecycle_status: 'APPROVED',
  definition_version: '3.1.0',
  policy_tier: 'tier_1',
  owner_team: 'Finance Analytics',
  owner_display_name: 'Ada Moreno',
  scope: 'enterprise_canonical',
  domain_id: domain,
  tags: ['finance', 'board'],
  aliases: ['net sales'],
  concept_name: 'revenue',
  template_name: 'sum',
  sql_expression: 'SUM(net_amount)',
  grains: ['day', 'week', 'month'],
  default_grain: 'month',
  dimensions: [{ name: 'region', column: 'region_code', labels: { emea: 'Europe' } }, 'channel'],
  filters: ['is_test = false', 'amount > 0'],
  source_refs: [{ table: 'finance.orders', alias: 'o' }, { table: 'finance.refunds' }],
  expression: { op: 'subtract', args: ['gross_revenue', { metric: 'refunds' }] },
  dependencies: ['gross_revenue', 'refunds'],
  created_at: '2026-01-05T10:00:00+02:00',
  updated_at: '2026-03-01T12:30:00.250Z',
  time_semantics: { timezone: 'UTC', week_start: 'monday', future_key: { nested: [1, 2] } },
  deprecated_framing_rules: [{ pattern: 'gross sales', replacement: 'net revenue' }],
  dimension_map: { region: 'geo.region_code' },
  column_aliases: { amt: 'amount' },
  consumer_contexts: { bi: { label: 'Revenue (net)' } },
  policy_examples: [{ allowed: true, text: 'Board reporting' }],
  execution_context: {
    resolved_parameters: { currency: 'USD' },
    rendered_sql_examples: [{ grain: 'month', sql: 'SELECT 1' }],
    latest_closed_period: { period: '2026-02' },
  },
  governance: {
    approver_role: 'finance_controller',
    approver_user: 'Ada Moreno',
    approved_at: '2026-01-15',
    effective_from: '2026-02-01',
    next_review_date: '2027-01-31',
  },
  approval_state: { state: 'approved', step: 2 },
});
const v1 = org.version(full, {
  definition_version: '1.0.0',
  status: 'superseded',
  released_at: '2025-06-01T00:00:00Z',
  change_summary: 'First.',
});
const v3 = org.version(full, {
  definition_version: '3.1.0',
  status: 'released',
  released_at: '2026-02-01T09:00:00+01:00',
});
const v4 = org.version(full, {
  definition_version: '4.0.0',
  status: 'draft',
  released_at: null,
  change_summary: 'Next.',
});
const approvals = [
  org.approval(full, { version_id: v3.id, decided_at: '2026-02-01T00:00:00Z', comment: 'Reconciles.' }),
  org.approval(full, {
    version_id: null,
    approver_user_id: null,
    approver_role: 'cfo',
    decision: 'rejected',
    decided_at: '2026-01-20T00:00:00Z',
  }),
];
org.relate(full, 'related_to', target);

const minimal = org.metric({ name: 'Minimal' });
const byLifecycle = (['DRAFT', 'VALIDATED', 'CANDIDATE', 'APPROVED', 'RELEASED', 'DEPRECATED'] as const).map(
  (lifecycle) => org.metric({ lifecycle_status: lifecycle }),
);

const base = org.metric({ name: 'Revenue', key: 'revenue' });
const variant = org.metric({ name: 'Revenue (EU)', key: 'revenue_eu', lifecycle_status: 'DRAFT' });
org.relate(variant, 'variant_of', base);
const oldMetric = org.metric({ name: 'Old ARR', key: 'arr_old', lifecycle_status: 'DEPRECATED' });
const newMetric = org.metric({ name: 'ARR', key: 'arr' });
org.relate(newMetric, 'supersedes', oldMetric);
const key = org.key();

const defaultOrg = r.org();
const defaultOrgMetric = defaultOrg.metric();
const defaultOrgKey = defaultOrg.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
});
afterAll(() => t.close());

async function detail(metric: MetricJson, secret = key.secret) {
  const body = expectOk(await t.get(`/api/v1/metrics/${metric.id}`, secret));
  expect(Object.keys(body).sort()).toEqual(['data', 'meta']);
  expect(body.meta).toEqual({ apiVersion: 'v1' });
  return body.data;
}

const candidate = (metric: MetricJson, relation: string) => ({
  metric_id: metric.id,
  key: metric.key,
  name: metric.name,
  lifecycle_status: metric.lifecycle_status,
  relation,
});

describe('data.metric', () => {
  it('has every field of section 2.3 with the fixture values', async () => {
    const data = await detail(full);
    expect(data.metric).toStrictEqual({
      id: full.id,
      org_id: org.id,
      project_id: org.projectId,
      metric_type: 'derived',
      key: 'net_revenue',
      name: 'Net Revenue',
      description: 'Recognized revenue net of refunds.',
      definition_version: '3.1.0',
      status: 'approved',
      policy_tier: 'tier_1',
      owner_team: 'Finance Analytics',
      owner_display_name: 'Ada Moreno',
      tags: ['finance', 'board'],
      aliases: ['net sales'],
      concept_name: 'revenue',
      template_name: 'sum',
      sql_expression: 'SUM(net_amount)',
      grains: ['day', 'week', 'month'],
      default_grain: 'month',
      dimensions: [{ name: 'region', column: 'region_code', labels: { emea: 'Europe' } }, 'channel'],
      filters: ['is_test = false', 'amount > 0'],
      source_refs: [{ table: 'finance.orders', alias: 'o' }, { table: 'finance.refunds' }],
      expression: { op: 'subtract', args: ['gross_revenue', { metric: 'refunds' }] },
      dependencies: ['gross_revenue', 'refunds'],
      lifecycle_status: 'APPROVED',
      scope: 'enterprise_canonical',
      domain_id: domain,
      created_at: utc('2026-01-05T08:00:00Z'),
      updated_at: utc('2026-03-01T12:30:00.250Z'),
    });
    expect(data.metric).not.toHaveProperty('tier');
    expect(data.metric).not.toHaveProperty('version');
  });

  it('defaults of a minimal metric', async () => {
    const { metric } = await detail(minimal);
    expect(metric).toMatchObject({
      id: minimal.id,
      owner_display_name: null,
      tags: [],
      dimensions: [],
      filters: [],
      source_refs: [],
      expression: null,
      dependencies: null,
      domain_id: null,
      created_at: utc(minimal.created_at),
      updated_at: utc(minimal.updated_at),
    });
  });

  it('timestamps given with an offset are UTC with Z', async () => {
    const { metric } = await detail(full);
    expect(metric.created_at).toMatch(/^2026-01-05T08:00:00(\.0+)?Z$/);
  });

  it.each(byLifecycle.map((metric) => [metric.lifecycle_status, metric] as const))(
    'legacy status of %s',
    async (lifecycle, metric) => {
      const data = await detail(metric);
      expect(data.metric.lifecycle_status).toBe(lifecycle);
      expect(data.metric.status).toBe(legacyStatus(lifecycle));
    },
  );
});

describe('siblings of metric', () => {
  it('stable defaults for a minimal metric', async () => {
    const data = await detail(minimal);
    const { metric, ...siblings } = data;
    expect(metric.id).toBe(minimal.id);
    expect(siblings).toStrictEqual({
      relationships: [],
      approvals: [],
      versionHistory: [],
      fiscal_calendar_start_month: 4,
      time_semantics: null,
      deprecated_framing_rules: [],
      dimension_map: {},
      column_aliases: {},
      execution_context: { resolved_parameters: {}, rendered_sql_examples: [], latest_closed_period: null },
      governance_facts: {
        owner_team: minimal.owner_team,
        approver_role: null,
        approver_user: null,
        approved_at: null,
        lifecycle_status: minimal.lifecycle_status,
        current_version: minimal.definition_version,
        effective_from: null,
        effective_to: null,
        next_review_date: null,
      },
      approval_state: null,
      consumer_contexts: {},
      requires_disambiguation: null,
      policy_examples: [],
      inputs: [],
      dependents_count: 0,
    });
  });

  it('fiscal_calendar_start_month defaults to 1', async () => {
    const data = await detail(defaultOrgMetric, defaultOrgKey.secret);
    expect(data.fiscal_calendar_start_month).toBe(1);
  });

  it('populated members come back as given', async () => {
    const data = await detail(full);
    expect(data.fiscal_calendar_start_month).toBe(4);
    expect(data.time_semantics).toStrictEqual({
      timezone: 'UTC',
      week_start: 'monday',
      future_key: { nested: [1, 2] },
    });
    expect(data.deprecated_framing_rules).toStrictEqual([{ pattern: 'gross sales', replacement: 'net revenue' }]);
    expect(data.dimension_map).toStrictEqual({ region: 'geo.region_code' });
    expect(data.column_aliases).toStrictEqual({ amt: 'amount' });
    expect(data.consumer_contexts).toStrictEqual({ bi: { label: 'Revenue (net)' } });
    expect(data.policy_examples).toStrictEqual([{ allowed: true, text: 'Board reporting' }]);
    expect(data.execution_context).toStrictEqual({
      resolved_parameters: { currency: 'USD' },
      rendered_sql_examples: [{ grain: 'month', sql: 'SELECT 1' }],
      latest_closed_period: { period: '2026-02' },
    });
    expect(data.approval_state).toStrictEqual({ state: 'approved', step: 2 });
    expect(data.governance_facts).toStrictEqual({
      owner_team: 'Finance Analytics',
      approver_role: 'finance_controller',
      approver_user: 'Ada Moreno',
      approved_at: '2026-01-15',
      lifecycle_status: 'APPROVED',
      current_version: '3.1.0',
      effective_from: '2026-02-01',
      effective_to: null,
      next_review_date: '2027-01-31',
    });
  });

  it('relationships name their target', async () => {
    const data = await detail(full);
    expect(data.relationships).toStrictEqual([
      {
        kind: 'related_to',
        target_metric_id: target.id,
        target: { key: 'gross_revenue', name: 'Gross Revenue', lifecycle_status: 'CANDIDATE' },
      },
    ]);
    // related_to is no disambiguation hint
    expect(data.requires_disambiguation).toBeNull();
  });

  it('approvals', async () => {
    const data = await detail(full);
    const expected = approvals.map((approval) => ({
      id: approval.id,
      version_id: approval.version_id,
      approver_user_id: approval.approver_user_id,
      approver_role: approval.approver_role,
      decision: approval.decision,
      decided_at: utc(approval.decided_at),
      comment: approval.comment ?? '',
    }));
    const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : 1);
    expect([...data.approvals].sort(byId)).toStrictEqual([...expected].sort(byId));
  });

  it('versionHistory: most recently released first, unreleased last', async () => {
    const data = await detail(full);
    expect(data.versionHistory).toStrictEqual([
      {
        id: v3.id,
        definition_version: '3.1.0',
        status: 'released',
        released_at: utc('2026-02-01T08:00:00Z'),
        change_summary: '',
      },
      {
        id: v1.id,
        definition_version: '1.0.0',
        status: 'superseded',
        released_at: utc('2025-06-01T00:00:00Z'),
        change_summary: 'First.',
      },
      { id: v4.id, definition_version: '4.0.0', status: 'draft', released_at: null, change_summary: 'Next.' },
    ]);
  });
});

describe('requires_disambiguation', () => {
  it('variant_of, seen from the variant', async () => {
    const data = await detail(variant);
    expect(data.requires_disambiguation).toStrictEqual({
      preferred_metric_id: null,
      candidates: [candidate(base, 'variant_of')],
    });
  });

  it('variant_of, seen from the base metric', async () => {
    const data = await detail(base);
    expect(data.requires_disambiguation).toStrictEqual({
      preferred_metric_id: null,
      candidates: [candidate(variant, 'has_variant')],
    });
  });

  it('supersedes, seen from the superseding metric', async () => {
    const data = await detail(newMetric);
    expect(data.requires_disambiguation).toStrictEqual({
      preferred_metric_id: null,
      candidates: [candidate(oldMetric, 'supersedes')],
    });
  });

  it('supersedes, seen from the superseded metric: prefer the superseding one', async () => {
    const data = await detail(oldMetric);
    expect(data.requires_disambiguation).toStrictEqual({
      preferred_metric_id: newMetric.id,
      candidates: [candidate(newMetric, 'superseded_by')],
    });
  });
});

describe('errors', () => {
  it.each(['not-a-uuid', '123', `${randomUUID()}x`, 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz'])(
    '%s is 400 Invalid metric ID format',
    async (id) => {
      expectError(await t.get(`/api/v1/metrics/${id}`, key.secret), 400, { error: 'Invalid metric ID format' });
    },
  );

  it('a random UUID and another organization’s metric are the same 404', async () => {
    const missing = await t.get(`/api/v1/metrics/${randomUUID()}`, key.secret);
    const foreign = await t.get(`/api/v1/metrics/${defaultOrgMetric.id}`, key.secret);
    expectError(missing, 404, { error: 'Metric not found' });
    expectError(foreign, 404, { error: 'Metric not found' });
    expect(foreign.body).toBe(missing.body);
    expect(foreign.headers['content-type']).toBe(missing.headers['content-type']);
  });
});
