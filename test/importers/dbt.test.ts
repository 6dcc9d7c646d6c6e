import { existsSync, readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { syntheticDbtManifest } from '../../bench/dbt-manifest.js';
import { importDbtManifest } from '../../src/importers/dbt.js';
import type { RegistryMetricInput } from '../../src/importers/registry-document-input.js';

const fixtures = new URL('../../../shared/fixtures/dbt/', import.meta.url);
const hasFixtures = existsSync(fixtures);
// biome-ignore lint/suspicious/noExplicitAny: manifests are plain JSON, as dbt writes them
type Json = any;
const readManifest = (name: string): Json => JSON.parse(readFileSync(new URL(name, fixtures), 'utf8'));
const byKey = (metrics: RegistryMetricInput[]) => new Map(metrics.map((metric) => [metric.key, metric]));

const ORDERS_TABLE = '"analytics"."marts"."orders_00"';
const DAY_UP = ['day', 'week', 'month', 'quarter', 'year'];

/** What both synthetic specs (measures-based and newer) must translate to: key -> [name, sql_expression, default_grain]. */
const SYNTHETIC: Record<string, [string, string, string]> = {
  revenue_00: ['Revenue 00', 'SUM(line_total)', 'day'],
  orders_00: ['Orders 00', "COUNT(DISTINCT order_id) FILTER (WHERE order_line__region != 'internal')", 'day'],
  refunds_00: ['Refunds 00', 'SUM(case when is_refunded then line_total else 0 end)', 'day'],
  customers_00: ['Customers 00', 'COUNT(DISTINCT customer_id)', 'day'],
  average_order_value_00: [
    'Average Order Value 00',
    "SUM(line_total) / NULLIF(COUNT(DISTINCT order_id) FILTER (WHERE order_line__region != 'internal'), 0)",
    'month',
  ],
  net_revenue_00: ['Net Revenue 00', 'SUM(line_total) - SUM(case when is_refunded then line_total else 0 end)', 'day'],
  revenue_growth_mom_00: [
    'Revenue Growth MoM 00',
    '(SUM(line_total) - SUM(line_total) /* 1 month earlier */) / nullif(SUM(line_total) /* 1 month earlier */, 0)',
    'month',
  ],
  revenue_ttm_00: ['Revenue TTM 00', 'SUM(line_total) /* cumulative, trailing 12 months window */', 'day'],
  revenue_mtd_00: ['Revenue MTD 00', 'SUM(line_total) /* cumulative, month to date */', 'day'],
  repeat_purchase_rate_00: [
    'Repeat Purchase Rate 00',
    'COUNT(DISTINCT customer_id) / NULLIF(COUNT(DISTINCT customer_id) FILTER (WHERE order_line__is_first_order = true), 0) /* conversions of customer within 30 days */',
    'day',
  ],
};

describe.skipIf(!hasFixtures)('dbt manifests of shared/fixtures/dbt', () => {
  describe.each(['synthetic-legacy', 'synthetic-latest'])('%s', (file) => {
    // A skipped suite is still collected: read nothing where the shared fixtures are absent.
    if (!hasFixtures) return;
    const manifest = readManifest(`${file}.semantic_manifest.json`);
    const document = importDbtManifest(manifest, { organization: 'acme' });
    const metrics = byKey(document.metrics);

    it('maps every metric by name, in file order', () => {
      expect(document.organization).toBe('acme');
      expect(document.metrics.map((metric) => metric.key)).toEqual(manifest.metrics.map((metric: Json) => metric.name));
    });

    it.each(Object.entries(SYNTHETIC))(
      '%s: name, description, SQL, source table, grains',
      (key, [name, sql, grain]) => {
        const metric = metrics.get(key);
        const source = manifest.metrics.find((candidate: Json) => candidate.name === key);
        expect(metric?.name).toBe(name);
        expect(metric?.description).toBe(source.description);
        // the description states the definition, unless governance states it (net_revenue_00 does)
        const governed = (source.config?.meta ?? source.meta)?.governance?.business_definition?.included;
        expect(metric?.business_definition?.included).toBe(governed ?? source.description);
        expect(source.label).toBe(name);
        expect(metric?.sql_expression).toBe(sql);
        expect(metric?.source_refs).toEqual([{ table: ORDERS_TABLE, semantic_model: 'orders_00' }]);
        expect(metric?.grains).toEqual(DAY_UP);
        expect(metric?.default_grain).toBe(grain);
        expect(metric?.project).toBe('dbt');
        expect(metric?.dimensions).toEqual([
          { name: 'ordered_at', type: 'time', granularity: 'day' },
          { name: 'region', type: 'categorical' },
          { name: 'is_first_order', type: 'categorical' },
        ]);
      },
    );

    it('maps the dbt type to metric_type and template_name', () => {
      const types = document.metrics.map((metric) => [metric.key, metric.metric_type, metric.template_name]);
      expect(types).toContainEqual(['revenue_00', 'base', 'simple']);
      expect(types).toContainEqual(['average_order_value_00', 'ratio', 'ratio']);
      expect(types).toContainEqual(['net_revenue_00', 'derived', 'derived']);
      expect(types).toContainEqual(['revenue_ttm_00', 'cumulative', 'cumulative']);
      expect(types).toContainEqual(['repeat_purchase_rate_00', 'conversion', 'conversion']);
    });

    it('keeps the metric filters and those of its inputs as written', () => {
      const region = "{{ Dimension('order_line__region') }} != 'internal'";
      expect(metrics.get('orders_00')?.filters).toEqual([region]);
      expect(metrics.get('average_order_value_00')?.filters).toEqual([region]);
      expect(metrics.get('repeat_purchase_rate_00')?.filters).toEqual([
        "{{ Dimension('order_line__is_first_order') }} = true",
      ]);
      expect(metrics.get('revenue_00')?.filters).toEqual([]);
    });

    it('carries config.meta.governance, relationships by key', () => {
      expect(metrics.get('revenue_00')).toMatchObject({
        lifecycle_status: 'DEPRECATED',
        owner_team: 'Finance Analytics',
        relationships: [{ kind: 'related_to', target: 'net_revenue_00' }],
      });
      expect(metrics.get('average_order_value_00')).toMatchObject({
        lifecycle_status: 'CANDIDATE',
        owner_team: 'Commerce Analytics',
        policy_tier: 'tier_2',
        scope: 'domain_canonical',
        aliases: ['AOV'],
      });
      expect(metrics.get('revenue_growth_mom_00')).toMatchObject({
        lifecycle_status: 'APPROVED',
        relationships: [{ kind: 'variant_of', target: 'net_revenue_00' }],
      });
      const net = metrics.get('net_revenue_00');
      expect(net).toMatchObject({
        lifecycle_status: 'RELEASED',
        definition_version: '2.1.0',
        policy_tier: 'tier_1',
        scope: 'enterprise_canonical',
        aliases: ['net sales', 'NR'],
        business_definition: {
          included: 'Order lines of every channel, refunds subtracted when issued.',
          excluded: 'Internal test orders.',
          time_window: 'calendar month',
        },
      });
      expect(net?.versions).toEqual([
        { definition_version: '2.1.0', status: 'released', released_at: '2026-09-01T00:00:00Z' },
        { definition_version: '2.0.0', status: 'superseded', released_at: '2026-03-01T00:00:00Z' },
      ]);
      expect(net?.approvals).toEqual([
        {
          definition_version: '2.1.0',
          approver_role: 'finance_controller',
          approver: null,
          decision: 'approved',
          decided_at: '2026-08-30T12:00:00Z',
        },
      ]);
    });

    it('leaves lifecycle to the document default without governance, and to --default-lifecycle when given', () => {
      expect(metrics.get('refunds_00')).not.toHaveProperty('lifecycle_status');
      const validated = byKey(
        importDbtManifest(manifest, { organization: 'acme', defaultLifecycle: 'VALIDATED' }).metrics,
      );
      expect(validated.get('refunds_00')?.lifecycle_status).toBe('VALIDATED');
      expect(validated.get('net_revenue_00')?.lifecycle_status).toBe('RELEASED');
    });

    it('takes owner_team from governance, then meta.owner, then "unassigned"', () => {
      expect(metrics.get('revenue_00')?.owner_team).toBe('Finance Analytics'); // meta.owner is finance@example.com
      expect(metrics.get('orders_00')?.owner_team).toBe('commerce@example.com');
      expect(metrics.get('refunds_00')?.owner_team).toBe('unassigned');
      const options = { organization: 'acme', defaultOwnerTeam: 'Data Platform', project: 'Shop' };
      const other = byKey(importDbtManifest(manifest, options).metrics).get('refunds_00');
      expect([other?.owner_team, other?.project]).toEqual(['Data Platform', 'Shop']);
    });

    it('names direct inputs as dependencies', () => {
      expect(metrics.get('net_revenue_00')?.dependencies).toEqual({
        measures: [],
        metrics: ['revenue_00', 'refunds_00'],
      });
      expect(metrics.get('average_order_value_00')?.dependencies).toEqual({
        measures: [],
        metrics: ['revenue_00', 'orders_00'],
      });
    });
  });

  it('measures-based: simple metrics depend on their measure', () => {
    const metrics = byKey(
      importDbtManifest(readManifest('synthetic-legacy.semantic_manifest.json'), { organization: 'a' }).metrics,
    );
    expect(metrics.get('revenue_00')?.dependencies).toEqual({ measures: ['revenue_00'], metrics: [] });
    expect(metrics.get('revenue_ttm_00')?.time_semantics).toEqual({
      cumulative: { window: '12 months', grain_to_date: null, period_agg: 'first' },
    });
  });

  it('pbi-osi-converter (a real dbt manifest): 15 metrics, labels, sum_boolean and ratios, year grain', () => {
    const manifest = readManifest('pbi-osi-converter.semantic_manifest.json');
    const document = importDbtManifest(manifest, { organization: 'tri' });
    expect(document.metrics).toHaveLength(15);
    expect(document.metrics.filter((metric) => metric.metric_type === 'base')).toHaveLength(9);
    expect(document.metrics.filter((metric) => metric.metric_type === 'ratio')).toHaveLength(6);
    const metrics = byKey(document.metrics);
    for (const source of manifest.metrics) {
      const metric = metrics.get(source.name);
      expect(metric?.name).toBe(source.label);
      expect(metric?.description).toBe(source.description);
      expect(metric?.business_definition).toEqual({ included: source.description.trim() });
      expect(metric?.source_refs).toEqual([
        { table: '"TRIAL_WH"."dbo_semantic"."sem_results_obt"', semantic_model: 'triathlon_results' },
      ]);
      expect(metric?.grains).toEqual(['year']);
      expect(metric?.default_grain).toBe('year');
      expect(metric?.owner_team).toBe('unassigned');
      expect(metric).not.toHaveProperty('lifecycle_status');
    }
    expect(metrics.get('result_rows')?.sql_expression).toBe('SUM(1)');
    expect(metrics.get('finishers')?.sql_expression).toBe('SUM(CASE WHEN is_finisher = 1 THEN 1 ELSE 0 END)');
    expect(metrics.get('review_flag_rate')?.sql_expression).toBe(
      'SUM(CASE WHEN any_review_flag = 1 THEN 1 ELSE 0 END) / NULLIF(SUM(CASE WHEN is_valid_sbr_finisher = 1 THEN 1 ELSE 0 END), 0)',
    );
    expect(metrics.get('finishers')?.dimensions).toContainEqual({
      name: 'event_year',
      type: 'time',
      granularity: 'year',
    });
    expect(metrics.get('finishers')?.dimensions).toHaveLength(15);
  });

  it('round trip: the same manifest gives the same document; one changed description changes one metric', () => {
    const text = readFileSync(new URL('synthetic-legacy.semantic_manifest.json', fixtures), 'utf8');
    const first = importDbtManifest(JSON.parse(text), { organization: 'acme' });
    expect(importDbtManifest(JSON.parse(text), { organization: 'acme' })).toEqual(first);
    expect(importDbtManifest(text, { organization: 'acme' })).toEqual(first);

    const edited = JSON.parse(text);
    edited.metrics[2].description = 'Refunded revenue of channel 00, chargebacks included.';
    const second = importDbtManifest(edited, { organization: 'acme' });
    const changed = second.metrics.filter((metric, index) => !isDeepStrictEqual(metric, first.metrics[index]));
    expect(changed.map((metric) => [metric.key, metric.description])).toEqual([
      ['refunds_00', 'Refunded revenue of channel 00, chargebacks included.'],
    ]);
  });
});

describe('dbt manifests of other generations', () => {
  /** dsi 0.2 style: no label, config or time_granularity; filter as where_sql_template; window in type_params; no entities. */
  const oldManifest = (): Json => ({
    semantic_models: [
      {
        name: 'payments',
        defaults: { agg_time_dimension: 'paid_at' },
        node_relation: { alias: 'payments', schema_name: 'finance', database: null },
        measures: [
          { name: 'amount', agg: 'SUM', expr: null },
          { name: 'p90_amount', agg: 'percentile', expr: 'amount', agg_params: { percentile: 0.9 } },
        ],
        dimensions: [
          { name: 'paid_at', type: 'TIME', type_params: { time_granularity: 'WEEK' } },
          { name: 'method', type: 'CATEGORICAL' },
        ],
      },
    ],
    metrics: [
      {
        name: 'card_amount',
        description: 'Amount paid by card.',
        type: 'simple',
        type_params: { measure: { name: 'amount' } },
        filter: { where_sql_template: "{{ Dimension('payment__method') }} = 'card'" },
      },
      {
        name: 'amount_4w',
        description: null,
        type: 'cumulative',
        type_params: { measure: 'amount', window: { count: 4, granularity: 'week' } },
        filter: null,
      },
      { name: 'p90_payment', type: 'simple', type_params: { measure: { name: 'p90_amount' } } },
    ],
    project_configuration: {},
  });

  it('reads dsi 0.2 manifests: readable names, where_sql_template, legacy window, relation without relation_name', () => {
    const metrics = byKey(importDbtManifest(oldManifest(), { organization: 'acme' }).metrics);
    expect(metrics.get('card_amount')).toMatchObject({
      name: 'Card Amount',
      sql_expression: "SUM(amount) FILTER (WHERE payment__method = 'card')",
      filters: ["{{ Dimension('payment__method') }} = 'card'"],
      source_refs: [{ table: 'finance.payments', semantic_model: 'payments' }],
      grains: ['week', 'month', 'quarter', 'year'],
      default_grain: 'week',
      dimensions: [
        { name: 'paid_at', type: 'time', granularity: 'week' },
        { name: 'method', type: 'categorical' },
      ],
    });
    expect(metrics.get('amount_4w')).toMatchObject({
      name: 'Amount 4w',
      description: '',
      sql_expression: 'SUM(amount) /* cumulative, trailing 4 weeks window */',
    });
    expect(metrics.get('p90_payment')?.sql_expression).toBe('PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY amount)');
  });

  it('meaning: the description states the definition; none (null, absent, blank) leaves it empty; governance adds to it', () => {
    const manifest = oldManifest();
    manifest.metrics[2].description = ' \n ';
    manifest.metrics[0].label = 'Card payments';
    manifest.metrics[0].config = { meta: { governance: { business_definition: { excluded: 'Refunded payments.' } } } };
    const metrics = byKey(importDbtManifest(manifest, { organization: 'acme' }).metrics);
    // the label is the display name, not a definition
    expect(metrics.get('card_amount')).toMatchObject({
      name: 'Card payments',
      description: 'Amount paid by card.',
      business_definition: { included: 'Amount paid by card.', excluded: 'Refunded payments.' },
    });
    for (const key of ['amount_4w', 'p90_payment']) expect(metrics.get(key)).not.toHaveProperty('business_definition');
  });

  it('renders TimeDimension and .grain() references and joins several filters', () => {
    const manifest = oldManifest();
    manifest.metrics[0].filter = {
      where_filters: [
        { where_sql_template: "{{ TimeDimension('metric_time', 'month') }} >= '2026-01-01'" },
        { where_sql_template: "{{ Dimension('payment__paid_at').grain('day') }} IS NOT NULL" },
      ],
    };
    const metric = importDbtManifest(manifest, { organization: 'acme' }).metrics[0];
    expect(metric?.sql_expression).toBe(
      "SUM(amount) FILTER (WHERE (metric_time__month >= '2026-01-01') AND (payment__paid_at__day IS NOT NULL))",
    );
  });

  it('translates a generated manifest of 10,000 metrics', () => {
    const manifest = syntheticDbtManifest(10_000);
    const document = importDbtManifest(manifest, { organization: 'bench' });
    expect(document.metrics).toHaveLength(10_000);
    expect(new Set(document.metrics.map((metric) => metric.key)).size).toBe(10_000);
    const last = document.metrics[9_999];
    expect(last).toMatchObject({
      key: 'bench_metric_009999',
      metric_type: 'conversion',
      source_refs: [{ table: '"warehouse"."bench"."bookings_0199"', semantic_model: 'bookings_0199' }],
    });
    expect(document.metrics[9_990]).toMatchObject({ lifecycle_status: 'RELEASED', owner_team: 'Team 1' });
    expect(document.metrics[9_991]?.sql_expression).toBe('SUM(amount) / NULLIF(COUNT(DISTINCT booking_id), 0)');
    expect(importDbtManifest(syntheticDbtManifest(10_000), { organization: 'bench' })).toEqual(document);
  });
});
