/**
 * A dbt semantic manifest as `dbt parse` writes it (measures-based spec,
 * dsi 0.9, every member dbt writes, nulls included), generated for the
 * scenario of issue 34: one semantic model `finance_ledger` with the measures
 * `revenue_amount` and `expense_amount`, the simple metrics `total_revenue`
 * and `total_expense` over them, and the derived `total_profit =
 * total_revenue - total_expense`. The governance of each metric (its
 * `config.meta.governance`) is the caller's.
 */

type Governance = Record<string, unknown> | null;

export interface FinanceGovernance {
  total_revenue?: Governance;
  total_expense?: Governance;
  total_profit?: Governance;
}

const meta = (governance: Governance | undefined, owner: string) => ({
  meta: governance ? { owner, governance } : { owner },
});

function measure(name: string, expr: string) {
  return {
    name,
    agg: 'sum',
    description: null,
    create_metric: false,
    expr,
    agg_params: null,
    metadata: null,
    non_additive_dimension: null,
    agg_time_dimension: 'booked_at',
    label: null,
    config: { meta: {} },
  };
}

function dimension(name: string, type: 'time' | 'categorical') {
  return {
    name,
    type,
    description: null,
    label: null,
    is_partition: false,
    type_params: type === 'time' ? { time_granularity: 'day', validity_params: null } : null,
    expr: name,
    metadata: null,
    config: { meta: {} },
  };
}

const LEDGER = {
  name: 'finance_ledger',
  defaults: { agg_time_dimension: 'booked_at' },
  description: 'General ledger lines, one row per booking.',
  node_relation: {
    alias: 'finance_ledger',
    schema_name: 'marts',
    database: 'analytics',
    relation_name: '"analytics"."marts"."finance_ledger"',
  },
  primary_entity: null,
  entities: [
    {
      name: 'ledger_line',
      type: 'primary',
      description: null,
      label: null,
      role: null,
      expr: 'ledger_line_id',
      config: { meta: {} },
      metadata: null,
    },
  ],
  measures: [
    measure('revenue_amount', "case when line_type = 'revenue' then amount else 0 end"),
    measure('expense_amount', "case when line_type = 'expense' then amount else 0 end"),
  ],
  dimensions: [dimension('booked_at', 'time'), dimension('cost_center', 'categorical')],
  label: null,
  metadata: null,
  config: { meta: {} },
};

const measureInput = (name: string) => ({
  name,
  filter: null,
  alias: null,
  join_to_timespine: false,
  fill_nulls_with: null,
});

const typeParams = (fields: Record<string, unknown>) => ({
  measure: null,
  numerator: null,
  denominator: null,
  expr: null,
  window: null,
  grain_to_date: null,
  metrics: [],
  conversion_type_params: null,
  cumulative_type_params: null,
  input_measures: [],
  ...fields,
});

function simple(name: string, label: string, description: string, measureName: string, governance?: Governance) {
  return {
    name,
    description,
    type: 'simple',
    type_params: typeParams({ measure: measureInput(measureName), input_measures: [measureInput(measureName)] }),
    filter: null,
    metadata: null,
    label,
    config: meta(governance, 'finance@example.com'),
    time_granularity: null,
  };
}

const metricInput = (name: string, alias: string) => ({
  name,
  filter: null,
  alias,
  offset_window: null,
  offset_to_grain: null,
});

// biome-ignore lint/suspicious/noExplicitAny: a manifest is plain JSON, as dbt writes it
export type DbtManifest = any;

/** The manifest, with each metric's `config.meta.governance` as given (none when absent or null). */
export function financeManifest(governance: FinanceGovernance = {}): DbtManifest {
  return {
    semantic_models: [LEDGER],
    metrics: [
      simple(
        'total_revenue',
        'Total Revenue',
        'Revenue booked in the period.',
        'revenue_amount',
        governance.total_revenue,
      ),
      simple(
        'total_expense',
        'Total Expense',
        'Expenses booked in the period.',
        'expense_amount',
        governance.total_expense,
      ),
      {
        name: 'total_profit',
        description: 'Revenue less expenses.',
        type: 'derived',
        type_params: typeParams({
          expr: 'revenue - expense',
          metrics: [metricInput('total_revenue', 'revenue'), metricInput('total_expense', 'expense')],
        }),
        filter: null,
        metadata: null,
        label: 'Total Profit',
        config: meta(governance.total_profit, 'finance@example.com'),
        time_granularity: null,
      },
    ],
    project_configuration: {
      time_spine_table_configurations: [
        { location: 'analytics.marts.metricflow_time_spine', column_name: 'date_day', grain: 'day' },
      ],
      metadata: null,
      dsi_package_version: { major_version: '0', minor_version: '9', patch_version: '0' },
      time_spines: [
        {
          node_relation: {
            alias: 'metricflow_time_spine',
            schema_name: 'marts',
            database: 'analytics',
            relation_name: '"analytics"."marts"."metricflow_time_spine"',
          },
          primary_column: { name: 'date_day', time_granularity: 'day' },
          custom_granularities: [],
        },
      ],
    },
    saved_queries: [],
  };
}
