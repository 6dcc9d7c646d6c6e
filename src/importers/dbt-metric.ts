/**
 * What a dbt metric computes, resolved through its measures and input
 * metrics: a readable SQL expression (filters pushed down to the aggregates
 * they restrict, as MetricFlow does), the semantic models it reads, its
 * filters as written, its finest queryable grain and its direct inputs.
 */

import type { ManifestIndex, MeasureInfo, MetricEntry, SemanticModelInfo } from './dbt-manifest.js';
import { aggregateSql, filterTemplates, substituteInputs, windowText, wrap } from './dbt-sql.js';
import { formatPath, type ImportProblem } from './import-error.js';
import { type JsonRecord, nonBlank, pushUnique, record, text } from './read.js';

export interface ResolvedMetric {
  /** the expression with these extra filters (from metrics that read this one) applied */
  render(filters: readonly string[]): string;
  models: SemanticModelInfo[];
  filters: string[];
  grain?: string;
  measures: string[];
  metrics: string[];
  timeSemantics?: Record<string, unknown>;
}

export const STANDARD_GRAINS = [
  'nanosecond',
  'microsecond',
  'millisecond',
  'second',
  'minute',
  'hour',
  'day',
  'week',
  'month',
  'quarter',
  'year',
] as const;

function coarsest(grains: readonly (string | undefined)[]): string | undefined {
  let result: string | undefined;
  for (const grain of grains) {
    if (grain === undefined) continue;
    if (result === undefined || STANDARD_GRAINS.indexOf(grain as never) > STANDARD_GRAINS.indexOf(result as never))
      result = grain;
  }
  return result;
}

function grainOf(model: SemanticModelInfo, aggTimeDimension: string | undefined): string | undefined {
  const name = aggTimeDimension ?? model.aggTimeDimension;
  return model.dimensions.find((dimension) => dimension.name === name && dimension.type === 'time')?.granularity;
}

function leaf(agg: string, aggParams: unknown, expr: string, model: SemanticModelInfo, grain: string | undefined) {
  return {
    render: (filters: readonly string[]) => aggregateSql(agg, aggParams, expr, filters),
    models: [model],
    filters: [],
    grain,
    measures: [],
    metrics: [],
  } satisfies ResolvedMetric;
}

function measureLeaf(measure: MeasureInfo): ResolvedMetric {
  return leaf(
    measure.agg,
    measure.aggParams,
    measure.expr,
    measure.model,
    grainOf(measure.model, measure.aggTimeDimension),
  );
}

/** An input reference: a name, or `{ name, filter, alias, offset_window, offset_to_grain }`. */
interface InputRef {
  name: string;
  filters: string[];
  alias?: string;
  offset?: string;
}

function readRef(value: unknown): InputRef | undefined {
  if (typeof value === 'string') return nonBlank(value) ? { name: value.trim(), filters: [] } : undefined;
  const ref = record(value);
  const name = nonBlank(ref?.name);
  if (!ref || !name) return undefined;
  const window = windowText(ref.offset_window);
  const toGrain = nonBlank(ref.offset_to_grain)?.toLowerCase();
  const offset = window ? `${window} earlier` : toGrain ? `at the start of the ${toGrain}` : undefined;
  return { name, filters: filterTemplates(ref.filter), alias: nonBlank(ref.alias), offset };
}

export class MetricResolver {
  private readonly resolved = new Map<string, ResolvedMetric | null>();
  private readonly inProgress = new Set<string>();

  constructor(
    private readonly manifest: ManifestIndex,
    private readonly problems: ImportProblem[],
  ) {}

  /** null when the metric (or one it reads) is broken; its problems are recorded once. */
  resolve(entry: MetricEntry): ResolvedMetric | null {
    const known = this.resolved.get(entry.name);
    if (known !== undefined) return known;
    if (this.inProgress.has(entry.name)) {
      this.problem(entry, ['type_params'], 'its input metrics form a cycle back to it');
      return null;
    }
    this.inProgress.add(entry.name);
    const result = this.build(entry);
    this.inProgress.delete(entry.name);
    this.resolved.set(entry.name, result);
    return result;
  }

  private problem(entry: MetricEntry, field: readonly PropertyKey[], message: string) {
    this.problems.push({
      path: formatPath(['metrics', entry.index, ...field]),
      message: `metric "${entry.name}": ${message}`,
    });
  }

  /** A measure reference (type_params.measure, base_measure, ...). */
  private measureInput(entry: MetricEntry, ref: InputRef | undefined, field: readonly PropertyKey[]) {
    if (!ref) {
      this.problem(entry, field, `${formatPath(field)} names no measure`);
      return null;
    }
    const measure = this.manifest.measures.get(ref.name);
    if (!measure) {
      this.problem(
        entry,
        [...field, 'name'],
        `${formatPath(field)} names measure "${ref.name}", which no semantic model defines`,
      );
      return null;
    }
    return { ref, node: measureLeaf(measure), kind: 'measure' as const };
  }

  /** A metric input (numerator, type_params.metrics[i], ...); older manifests may name a measure there. */
  private metricInput(entry: MetricEntry, ref: InputRef | undefined, field: readonly PropertyKey[]) {
    if (!ref) {
      this.problem(entry, field, `${formatPath(field)} names no input metric`);
      return null;
    }
    const input = this.manifest.metrics.get(ref.name);
    if (input) {
      const node = this.resolve(input);
      return node ? { ref, node, kind: 'metric' as const } : null;
    }
    const measure = this.manifest.measures.get(ref.name);
    if (measure) return { ref, node: measureLeaf(measure), kind: 'measure' as const };
    this.problem(
      entry,
      [...field, 'name'],
      `${formatPath(field)} names metric "${ref.name}", which the manifest does not define`,
    );
    return null;
  }

  private build(entry: MetricEntry): ResolvedMetric | null {
    const raw = entry.raw;
    const params = record(raw.type_params) ?? {};
    const own = filterTemplates(raw.filter);
    const type = (text(raw.type) ?? '').toLowerCase();
    switch (type) {
      case 'simple':
      case 'measure_proxy':
        return this.simple(entry, params, own);
      case 'ratio':
        return this.ratio(entry, params, own);
      case 'derived':
      case 'expr':
        return this.derived(entry, params, own);
      case 'cumulative':
        return this.cumulative(entry, params, own);
      case 'conversion':
        return this.conversion(entry, params, own);
      default:
        this.problem(
          entry,
          ['type'],
          `type ${JSON.stringify(raw.type ?? null)} is not one of simple, ratio, cumulative, derived, conversion`,
        );
        return null;
    }
  }

  private simple(entry: MetricEntry, params: JsonRecord, own: string[]): ResolvedMetric | null {
    const aggregation = record(params.metric_aggregation_params);
    if (aggregation) {
      // the newer spec: the metric aggregates a column of its semantic model itself
      const modelName = nonBlank(aggregation.semantic_model);
      const model = modelName ? this.manifest.models.get(modelName) : undefined;
      if (!model) {
        this.problem(
          entry,
          ['type_params', 'metric_aggregation_params', 'semantic_model'],
          `metric_aggregation_params names semantic model ${JSON.stringify(modelName ?? null)}, which the manifest does not define`,
        );
        return null;
      }
      const expr = nonBlank(aggregation.expr) ?? nonBlank(params.expr) ?? entry.name;
      const base = leaf(
        nonBlank(aggregation.agg) ?? 'sum',
        aggregation.agg_params,
        expr,
        model,
        grainOf(model, nonBlank(aggregation.agg_time_dimension)),
      );
      return { ...base, render: (filters) => base.render([...own, ...filters]), filters: [...own] };
    }
    const input = this.measureInput(entry, readRef(params.measure), ['type_params', 'measure']);
    if (!input) return null;
    const filters = [...input.ref.filters, ...own];
    return {
      ...input.node,
      render: (extra) => input.node.render([...filters, ...extra]),
      filters: pushUnique([], filters),
      measures: [input.ref.name],
    };
  }

  private combine(
    own: string[],
    inputs: { ref: InputRef; node: ResolvedMetric; kind: 'measure' | 'metric' }[],
    render: (filters: readonly string[]) => string,
    timeSemantics?: Record<string, unknown>,
  ): ResolvedMetric {
    const models: SemanticModelInfo[] = [];
    const filters: string[] = [...own];
    for (const { ref, node } of inputs) {
      pushUnique(models, node.models);
      pushUnique(filters, ref.filters);
      pushUnique(filters, node.filters);
    }
    return {
      render,
      models,
      filters: pushUnique([], filters),
      grain: coarsest(inputs.map(({ node }) => node.grain)),
      measures: pushUnique(
        [],
        inputs.filter(({ kind }) => kind === 'measure').map(({ ref }) => ref.name),
      ),
      metrics: pushUnique(
        [],
        inputs.filter(({ kind }) => kind === 'metric').map(({ ref }) => ref.name),
      ),
      timeSemantics,
    };
  }

  private ratio(entry: MetricEntry, params: JsonRecord, own: string[]): ResolvedMetric | null {
    const numerator = this.metricInput(entry, readRef(params.numerator), ['type_params', 'numerator']);
    const denominator = this.metricInput(entry, readRef(params.denominator), ['type_params', 'denominator']);
    if (!numerator || !denominator) return null;
    return this.combine(own, [numerator, denominator], (extra) => {
      const top = wrap(numerator.node.render([...numerator.ref.filters, ...own, ...extra]));
      return `${top} / NULLIF(${denominator.node.render([...denominator.ref.filters, ...own, ...extra])}, 0)`;
    });
  }

  private derived(entry: MetricEntry, params: JsonRecord, own: string[]): ResolvedMetric | null {
    const refs = Array.isArray(params.metrics) ? params.metrics : [];
    const inputs = refs.map((ref, index) => this.metricInput(entry, readRef(ref), ['type_params', 'metrics', index]));
    const expr = nonBlank(params.expr);
    if (!expr) this.problem(entry, ['type_params', 'expr'], 'a derived metric needs type_params.expr');
    if (refs.length === 0) this.problem(entry, ['type_params', 'metrics'], 'a derived metric needs input metrics');
    if (!expr || refs.length === 0 || inputs.some((input) => input === null)) return null;
    const present = inputs.filter((input) => input !== null);
    return this.combine(own, present, (extra) => {
      const expressions = new Map<string, string>();
      for (const { ref, node } of present) {
        const sql = node.render([...ref.filters, ...own, ...extra]);
        expressions.set(ref.alias ?? ref.name, ref.offset ? `${sql} /* ${ref.offset} */` : sql);
      }
      return substituteInputs(expr, expressions);
    });
  }

  private cumulative(entry: MetricEntry, params: JsonRecord, own: string[]): ResolvedMetric | null {
    const settings = record(params.cumulative_type_params) ?? {};
    const input =
      settings.metric !== undefined && settings.metric !== null
        ? this.metricInput(entry, readRef(settings.metric), ['type_params', 'cumulative_type_params', 'metric'])
        : this.measureInput(entry, readRef(params.measure), ['type_params', 'measure']);
    if (!input) return null;
    const window = windowText(settings.window) ?? windowText(params.window);
    const grainToDate = (nonBlank(settings.grain_to_date) ?? nonBlank(params.grain_to_date))?.toLowerCase();
    const periodAgg = nonBlank(settings.period_agg)?.toLowerCase() ?? 'first';
    const span = window ? `trailing ${window} window` : grainToDate ? `${grainToDate} to date` : 'all time';
    return this.combine(
      own,
      [input],
      (extra) => `${input.node.render([...input.ref.filters, ...own, ...extra])} /* cumulative, ${span} */`,
      { cumulative: { window: window ?? null, grain_to_date: grainToDate ?? null, period_agg: periodAgg } },
    );
  }

  private conversion(entry: MetricEntry, params: JsonRecord, own: string[]): ResolvedMetric | null {
    const settings = record(params.conversion_type_params);
    const field = ['type_params', 'conversion_type_params'];
    if (!settings) {
      this.problem(entry, field, 'a conversion metric needs type_params.conversion_type_params');
      return null;
    }
    // The newer spec names metrics (base_metric) and may keep the measure (base_measure) beside it:
    // the metric is read, and the filters of both are kept.
    const side = (which: 'base' | 'conversion') => {
      const measureRef = readRef(settings[`${which}_measure`]);
      const metricValue = settings[`${which}_metric`];
      const input =
        metricValue !== undefined && metricValue !== null
          ? this.metricInput(entry, readRef(metricValue), [...field, `${which}_metric`])
          : this.measureInput(entry, measureRef, [...field, `${which}_measure`]);
      if (input && measureRef && input.ref !== measureRef)
        input.ref.filters = pushUnique([...input.ref.filters], measureRef.filters);
      return input;
    };
    const base = side('base');
    const conversion = side('conversion');
    if (!base || !conversion) return null;
    const entity = nonBlank(settings.entity) ?? null;
    const window = windowText(settings.window) ?? null;
    const calculation = nonBlank(settings.calculation)?.toLowerCase() ?? 'conversion_rate';
    const note = `/* conversions${entity ? ` of ${entity}` : ''}${window ? ` within ${window}` : ''} */`;
    return this.combine(
      own,
      [base, conversion],
      (extra) => {
        const converted = conversion.node.render([...conversion.ref.filters, ...own, ...extra]);
        if (calculation === 'conversions') return `${converted} ${note}`;
        const started = base.node.render([...base.ref.filters, ...own, ...extra]);
        return `${wrap(converted)} / NULLIF(${started}, 0) ${note}`;
      },
      { conversion: { entity, window, calculation } },
    );
  }
}
