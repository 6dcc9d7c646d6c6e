/**
 * What a dbt metric computes, resolved through its measures and input
 * metrics: a readable SQL expression (filters pushed down to the aggregates
 * they restrict, as MetricFlow does), the semantic models it reads, its
 * filters as written, its finest queryable grain and its direct inputs.
 */

import type { ManifestIndex, MeasureInfo, MetricEntry, SemanticModelInfo } from './dbt-manifest.js';
import { aggregateSql, ExpressionTooLong, filterTemplates, substituteInputs, windowText, wrap } from './dbt-sql.js';
import { formatPath, ImportError, type ImportProblem } from './import-error.js';
import {
  MAX_DERIVED_DEPTH,
  MAX_FILTERS,
  MAX_RENDERED_EXPRESSION,
  MAX_RENDERED_TOTAL,
  MAX_SOURCE_REFS,
} from './limits.js';
import { type JsonRecord, keyFromName, list, nonBlank, record, text } from './read.js';

/** How a metric's expression writes one of its inputs, under the filters given. */
type RenderInput = (input: Input, filters: readonly string[]) => string;

export interface ResolvedMetric {
  /** the expression with these extra filters (from metrics that read this one) applied */
  render(filters: readonly string[], input: RenderInput): string;
  /** at most one more than MAX_SOURCE_REFS: one more says the metric reads too many */
  models: SemanticModelInfo[];
  /** at most one more than MAX_FILTERS, likewise */
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
  return name === undefined ? undefined : model.timeGranularity.get(name);
}

function leaf(agg: string, aggParams: unknown, expr: string, model: SemanticModelInfo, grain: string | undefined) {
  return {
    render: (filters: readonly string[], _input: RenderInput) => aggregateSql(agg, aggParams, expr, filters),
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

interface Input {
  ref: InputRef;
  node: ResolvedMetric;
  kind: 'measure' | 'metric';
}

/** The name an input reference gives, read as {@link readRef} reads it. */
function refName(value: unknown): string | undefined {
  return typeof value === 'string' ? nonBlank(value) : nonBlank(record(value)?.name);
}

/** Where each metric type names its input metrics (a measure there, in older manifests, is not one). */
export function inputNames(raw: JsonRecord): string[] {
  const params = record(raw.type_params) ?? {};
  switch ((text(raw.type) ?? '').toLowerCase()) {
    case 'ratio':
      return [params.numerator, params.denominator].flatMap((ref) => refName(ref) ?? []);
    case 'derived':
    case 'expr':
      return list(params.metrics).flatMap((ref) => refName(ref) ?? []);
    case 'cumulative': {
      const metric = refName(record(params.cumulative_type_params)?.metric);
      return metric ? [metric] : [];
    }
    case 'conversion': {
      const settings = record(params.conversion_type_params);
      return [settings?.base_metric, settings?.conversion_metric].flatMap((ref) => refName(ref) ?? []);
    }
    default:
      return [];
  }
}

/** Up to one value more than `limit`, first seen first, without duplicates. */
function unionUpTo<T>(lists: Iterable<Iterable<T>>, limit: number): T[] {
  const union = new Set<T>();
  for (const values of lists)
    for (const value of values) {
      if (union.size > limit) return [...union];
      union.add(value);
    }
  return [...union];
}

/** Keys shown when a chain of input metrics is refused. */
const CHAIN_SHOWN = 5;

/** A cycle's metrics, from `frames` back to `closing`, the middle left out past 2 * CHAIN_SHOWN of them. */
function cycleText(frames: readonly { entry: MetricEntry }[], closing: string): string {
  const names = [...frames.map((frame) => frame.entry.name), closing];
  if (names.length <= 2 * CHAIN_SHOWN) return names.join(' -> ');
  return `${names.slice(0, CHAIN_SHOWN).join(' -> ')} -> ... (${names.length - 1} metrics) -> ${names.slice(-CHAIN_SHOWN).join(' -> ')}`;
}

export class MetricResolver {
  private readonly resolved = new Map<string, ResolvedMetric | null>();
  /** inlined expressions by metric and the filters they were rendered under; null when too long */
  private readonly rendered = new Map<ResolvedMetric, Map<string, string | null>>();
  private renderedCharacters = 0;

  constructor(
    private readonly manifest: ManifestIndex,
    private readonly problems: ImportProblem[],
  ) {
    this.refuseCyclesAndDeepChains();
  }

  /** null when the metric (or one it reads) is broken; its problems are recorded once. */
  resolve(entry: MetricEntry): ResolvedMetric | null {
    const known = this.resolved.get(entry.name);
    if (known !== undefined) return known;
    // Chains are at most MAX_DERIVED_DEPTH deep here (the others were refused), so this recursion is bounded.
    const result = this.build(entry);
    this.resolved.set(entry.name, result);
    return result;
  }

  /**
   * Before anything is resolved, one walk over the input metrics (a stack,
   * not recursion: how deep they go is the file's choice) refuses cycles and
   * chains deeper than MAX_DERIVED_DEPTH; what reads a refused metric is
   * broken too, without a problem of its own.
   */
  private refuseCyclesAndDeepChains() {
    const { metrics, metricList } = this.manifest;
    const inputs = (entry: MetricEntry) => inputNames(entry.raw).filter((name) => metrics.has(name));
    /** links below each metric, and the input they go through; absent while in progress */
    const depth = new Map<string, { links: number; through?: string }>();
    const broken = new Set<string>();
    const inProgress = new Set<string>();
    for (const root of metricList) {
      if (depth.has(root.name) || broken.has(root.name)) continue;
      const stack = [{ entry: root, inputs: inputs(root), next: 0 }];
      inProgress.add(root.name);
      while (stack.length > 0) {
        const frame = stack[stack.length - 1] as (typeof stack)[number];
        const name = frame.inputs[frame.next++];
        if (name !== undefined) {
          if (depth.has(name) || broken.has(name)) continue;
          const entry = metrics.get(name) as MetricEntry;
          if (inProgress.has(name)) {
            const from = stack.findIndex((open) => open.entry.name === name);
            this.problem(entry, ['type_params'], `inputs form a cycle: ${cycleText(stack.slice(from), name)}`);
            broken.add(name);
          } else {
            inProgress.add(name);
            stack.push({ entry, inputs: inputs(entry), next: 0 });
          }
          continue;
        }
        stack.pop();
        const { entry } = frame;
        inProgress.delete(entry.name);
        if (broken.has(entry.name) || frame.inputs.some((input) => broken.has(input) || inProgress.has(input))) {
          broken.add(entry.name);
          this.resolved.set(entry.name, null);
          continue;
        }
        let links = 0;
        let through: string | undefined;
        for (const input of frame.inputs) {
          const below = (depth.get(input)?.links ?? 0) + 1;
          if (below > links) [links, through] = [below, input];
        }
        if (links > MAX_DERIVED_DEPTH) {
          const chain = [entry.name];
          for (let at = through; at !== undefined && chain.length < CHAIN_SHOWN; at = depth.get(at)?.through)
            chain.push(at);
          this.problem(
            entry,
            ['type_params'],
            `its input metrics go ${links} deep (${chain.join(' -> ')} -> ...); at most ${MAX_DERIVED_DEPTH}`,
          );
          broken.add(entry.name);
          this.resolved.set(entry.name, null);
          continue;
        }
        depth.set(entry.name, { links, through });
      }
    }
  }

  /**
   * The metric's SQL expression: its inputs inlined, or, when that would
   * pass MAX_RENDERED_EXPRESSION, its input metrics named by key (measures
   * still aggregated); null, with a problem, when even that is too long.
   */
  expression(entry: MetricEntry, resolved: ResolvedMetric): string | null {
    for (const input of [this.inline, this.byKey]) {
      try {
        const sql = resolved.render([], input);
        if (sql.length <= MAX_RENDERED_EXPRESSION) return sql;
      } catch (error) {
        if (!(error instanceof ExpressionTooLong)) throw error;
      }
    }
    this.problem(
      entry,
      [],
      `its SQL expression is longer than ${MAX_RENDERED_EXPRESSION} characters even with its input metrics named, not inlined`,
    );
    return null;
  }

  private readonly inline: RenderInput = ({ node }, filters) => this.inlined(node, filters);

  private readonly byKey: RenderInput = ({ ref, node, kind }, filters) =>
    kind === 'metric' ? keyFromName(ref.name) : this.inlined(node, filters);

  /** Rendered once per metric and filters, however many metrics read it. */
  private inlined(node: ResolvedMetric, filters: readonly string[]): string {
    let byFilters = this.rendered.get(node);
    if (!byFilters) {
      byFilters = new Map();
      this.rendered.set(node, byFilters);
    }
    const key = filters.join('\u0000');
    const known = byFilters.get(key);
    if (known === null) throw new ExpressionTooLong();
    if (known !== undefined) return known;
    let sql: string;
    try {
      sql = node.render(filters, this.inline);
      if (sql.length > MAX_RENDERED_EXPRESSION) throw new ExpressionTooLong();
    } catch (error) {
      if (error instanceof ExpressionTooLong) byFilters.set(key, null);
      throw error;
    }
    this.renderedCharacters += sql.length;
    if (this.renderedCharacters > MAX_RENDERED_TOTAL)
      throw new ImportError([
        ...this.problems,
        {
          path: '',
          message: `the expressions of this file's metrics pass ${MAX_RENDERED_TOTAL} characters once their inputs are inlined; split the file`,
        },
      ]);
    byFilters.set(key, sql);
    return sql;
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
    return { ref, node: measureLeaf(measure), kind: 'measure' as const } satisfies Input;
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
      return {
        ...base,
        render: (filters, input) => base.render([...own, ...filters], input),
        filters: unionUpTo([own], MAX_FILTERS),
      };
    }
    const input = this.measureInput(entry, readRef(params.measure), ['type_params', 'measure']);
    if (!input) return null;
    const filters = [...input.ref.filters, ...own];
    return {
      ...input.node,
      render: (extra, render) => render(input, [...filters, ...extra]),
      filters: unionUpTo([filters], MAX_FILTERS),
      measures: [input.ref.name],
    };
  }

  private combine(
    own: string[],
    inputs: Input[],
    render: ResolvedMetric['render'],
    timeSemantics?: Record<string, unknown>,
  ): ResolvedMetric {
    return {
      render,
      models: unionUpTo(
        inputs.map(({ node }) => node.models),
        MAX_SOURCE_REFS,
      ),
      filters: unionUpTo([own, ...inputs.flatMap(({ ref, node }) => [ref.filters, node.filters])], MAX_FILTERS),
      grain: coarsest(inputs.map(({ node }) => node.grain)),
      measures: [...new Set(inputs.filter(({ kind }) => kind === 'measure').map(({ ref }) => ref.name))],
      metrics: [...new Set(inputs.filter(({ kind }) => kind === 'metric').map(({ ref }) => ref.name))],
      timeSemantics,
    };
  }

  private ratio(entry: MetricEntry, params: JsonRecord, own: string[]): ResolvedMetric | null {
    const numerator = this.metricInput(entry, readRef(params.numerator), ['type_params', 'numerator']);
    const denominator = this.metricInput(entry, readRef(params.denominator), ['type_params', 'denominator']);
    if (!numerator || !denominator) return null;
    return this.combine(own, [numerator, denominator], (extra, render) => {
      const top = wrap(render(numerator, [...numerator.ref.filters, ...own, ...extra]));
      return `${top} / NULLIF(${render(denominator, [...denominator.ref.filters, ...own, ...extra])}, 0)`;
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
    return this.combine(own, present, (extra, render) => {
      const expressions = new Map<string, string>();
      for (const input of present) {
        const { ref } = input;
        const sql = render(input, [...ref.filters, ...own, ...extra]);
        expressions.set(ref.alias ?? ref.name, ref.offset ? `${sql} /* ${ref.offset} */` : sql);
      }
      return substituteInputs(expr, expressions, MAX_RENDERED_EXPRESSION);
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
      (extra, render) => `${render(input, [...input.ref.filters, ...own, ...extra])} /* cumulative, ${span} */`,
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
        input.ref.filters = [...new Set([...input.ref.filters, ...measureRef.filters])];
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
      (extra, render) => {
        const converted = render(conversion, [...conversion.ref.filters, ...own, ...extra]);
        if (calculation === 'conversions') return `${converted} ${note}`;
        const started = render(base, [...base.ref.filters, ...own, ...extra]);
        return `${wrap(converted)} / NULLIF(${started}, 0) ${note}`;
      },
      { conversion: { entity, window, calculation } },
    );
  }
}
