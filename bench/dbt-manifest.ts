/**
 * A synthetic dbt semantic manifest (measures-based spec) of `n` metrics for
 * the apply benchmark: semantic models of 50 metrics each, every fifth metric
 * of each type (simple, ratio, derived, cumulative, conversion), every tenth
 * carrying `config.meta.governance`. Deterministic: the same `n` gives the
 * same manifest, so two imports of it plan no change.
 */

const METRICS_PER_MODEL = 50;

function measure(name: string, agg: string, expr: string) {
  return { name, agg, expr, description: null, agg_time_dimension: 'booked_at', config: { meta: {} } };
}

function input(name: string, extra: Record<string, unknown> = {}) {
  return { name, filter: null, alias: null, ...extra };
}

function semanticModel(model: number) {
  const id = String(model).padStart(4, '0');
  return {
    name: `bookings_${id}`,
    description: `Bookings of region ${id}, one row per booking.`,
    defaults: { agg_time_dimension: 'booked_at' },
    node_relation: {
      alias: `bookings_${id}`,
      schema_name: 'bench',
      database: 'warehouse',
      relation_name: `"warehouse"."bench"."bookings_${id}"`,
    },
    entities: [
      { name: 'booking', type: 'primary', expr: 'booking_id' },
      { name: 'guest', type: 'foreign', expr: 'guest_id' },
    ],
    measures: [
      measure(`amount_${id}`, 'sum', 'amount'),
      measure(`bookings_${id}`, 'count_distinct', 'booking_id'),
      measure(`guests_${id}`, 'count_distinct', 'guest_id'),
    ],
    dimensions: [
      { name: 'booked_at', type: 'time', type_params: { time_granularity: 'day' } },
      { name: 'channel', type: 'categorical', type_params: null },
    ],
    config: { meta: {} },
  };
}

function metric(index: number) {
  const model = String(Math.floor(index / METRICS_PER_MODEL)).padStart(4, '0');
  const name = `bench_metric_${String(index).padStart(6, '0')}`;
  const base = {
    name,
    description: `Synthetic metric ${index} over bookings of region ${model}.`,
    label: `Bench Metric ${index}`,
    filter: null,
    metadata: null,
    time_granularity: null,
    config: {
      meta:
        index % 10 === 0
          ? { governance: { lifecycle_status: 'RELEASED', owner_team: `Team ${index % 7}`, policy_tier: 'tier_2' } }
          : { owner: `team-${index % 7}@example.com` },
    },
  };
  // Metrics that read other metrics read the simple metric that opens their group of five.
  const simple = `bench_metric_${String(index - (index % 5)).padStart(6, '0')}`;
  switch (index % 5) {
    case 0:
      return { ...base, type: 'simple', type_params: { measure: input(`amount_${model}`) } };
    case 1:
      return {
        ...base,
        type: 'ratio',
        type_params: { numerator: input(simple), denominator: input(`bookings_${model}`) },
      };
    case 2:
      return {
        ...base,
        type: 'derived',
        type_params: {
          expr: 'current - previous',
          metrics: [
            input(simple, { alias: 'current' }),
            input(simple, { alias: 'previous', offset_window: { count: 1, granularity: 'month' } }),
          ],
        },
      };
    case 3:
      return {
        ...base,
        type: 'cumulative',
        type_params: {
          measure: input(`amount_${model}`),
          cumulative_type_params: {
            window: { count: 7, granularity: 'day' },
            grain_to_date: null,
            period_agg: 'first',
          },
        },
      };
    default:
      return {
        ...base,
        type: 'conversion',
        type_params: {
          conversion_type_params: {
            base_measure: input(`guests_${model}`),
            conversion_measure: input(`bookings_${model}`),
            entity: 'guest',
            calculation: 'conversion_rate',
            window: { count: 14, granularity: 'day' },
          },
        },
      };
  }
}

export function syntheticDbtManifest(n: number) {
  const models = Math.max(1, Math.ceil(n / METRICS_PER_MODEL));
  return {
    semantic_models: Array.from({ length: models }, (_, model) => semanticModel(model)),
    metrics: Array.from({ length: n }, (_, index) => metric(index)),
    project_configuration: {
      time_spine_table_configurations: [],
      dsi_package_version: { major_version: '0', minor_version: '9', patch_version: '0' },
    },
    saved_queries: [],
  };
}
