/**
 * Readable SQL for dbt metrics: what MetricFlow would aggregate, written as
 * one expression a reviewer can read (`SUM(line_total)`,
 * `SUM(a) / NULLIF(SUM(b), 0)`), with filters as `FILTER (WHERE ...)` on
 * the aggregate they restrict. It is documentation of the definition, not
 * the query MetricFlow runs (joins and time spines are left out).
 */
import { isRecord, list, record, text } from './read.js';

/** The aggregate of a measure (or of a newer-spec simple metric) over its expression. */
export function aggregateSql(agg: string, aggParams: unknown, expr: string, filters: readonly string[]): string {
  const params = record(aggParams) ?? {};
  const percentile = typeof params.percentile === 'number' ? params.percentile : undefined;
  const ordered = (fraction: number | undefined) =>
    `PERCENTILE_${params.use_discrete_percentile === true ? 'DISC' : 'CONT'}(${fraction ?? 0.5}) WITHIN GROUP (ORDER BY ${expr})`;
  let sql: string;
  switch (agg.toLowerCase()) {
    case 'sum':
      sql = `SUM(${expr})`;
      break;
    case 'count':
      sql = `COUNT(${expr})`;
      break;
    case 'count_distinct':
      sql = `COUNT(DISTINCT ${expr})`;
      break;
    case 'average':
    case 'avg':
      sql = `AVG(${expr})`;
      break;
    case 'min':
      sql = `MIN(${expr})`;
      break;
    case 'max':
      sql = `MAX(${expr})`;
      break;
    case 'sum_boolean':
      sql = `SUM(CASE WHEN ${expr} THEN 1 ELSE 0 END)`;
      break;
    case 'median':
      sql = ordered(0.5);
      break;
    case 'percentile':
      sql = ordered(percentile);
      break;
    default:
      sql = `${agg.toUpperCase()}(${expr})`;
  }
  return filters.length === 0 ? sql : `${sql} FILTER (WHERE ${conjunction(filters)})`;
}

function conjunction(filters: readonly string[]): string {
  const rendered = filters.map(renderWhere);
  return rendered.length === 1 ? (rendered[0] ?? '') : rendered.map((condition) => `(${condition})`).join(' AND ');
}

const TEMPLATE_CALL =
  /\{\{\s*(Dimension|TimeDimension|Entity|Metric)\(\s*(['"])(.*?)\2([^)]*)\)((?:\s*\.\s*\w+\(\s*['"]?\w*['"]?\s*\))*)\s*\}\}/g;

/**
 * A where-filter template with its Jinja references written as the column
 * names MetricFlow gives them: `{{ Dimension('order_line__region') }}` ->
 * `order_line__region`, `{{ TimeDimension('metric_time', 'month') }}` ->
 * `metric_time__month`, `.grain('week')` likewise.
 */
export function renderWhere(template: string): string {
  return template.replace(TEMPLATE_CALL, (_match, _kind, _quote, name: string, rest: string, chain: string) => {
    const grain = /['"](\w+)['"]/.exec(rest)?.[1] ?? /\.\s*grain\(\s*['"](\w+)['"]/.exec(chain)?.[1];
    return grain ? `${name}__${grain.toLowerCase()}` : name;
  });
}

/**
 * The where-filter templates of a dbt filter as written: current manifests
 * write `{ where_filters: [{ where_sql_template }] }`, dsi 0.2 and older
 * `{ where_sql_template }`; a plain string or a list is taken as well.
 */
export function filterTemplates(filter: unknown): string[] {
  if (typeof filter === 'string') return filter.trim() === '' ? [] : [filter];
  if (Array.isArray(filter)) return filter.flatMap(filterTemplates);
  if (!isRecord(filter)) return [];
  const single = text(filter.where_sql_template);
  return [
    ...(single !== undefined ? filterTemplates(single) : []),
    ...list(filter.where_filters).flatMap(filterTemplates),
  ];
}

/** `{ count: 12, granularity: 'month' }` or `'12 month'` as `12 months`; undefined when absent. */
export function windowText(window: unknown): string | undefined {
  let count: string | undefined;
  let granularity: string | undefined;
  if (typeof window === 'string') [count, granularity] = window.trim().toLowerCase().split(/\s+/);
  else {
    const value = record(window);
    if (value && (typeof value.count === 'number' || typeof value.count === 'string')) count = String(value.count);
    granularity = text(value?.granularity)?.toLowerCase();
  }
  if (!count || !granularity) return undefined;
  const singular = granularity.replace(/s$/, '');
  return `${count} ${count === '1' ? singular : `${singular}s`}`;
}

/** Comments and top-level parenthesized groups removed, quotes respected: what is left shows the expression's shape. */
function outline(sql: string): string {
  let depth = 0;
  let quote: string | undefined;
  let kept = '';
  for (const char of sql.replace(/\/\*[\s\S]*?\*\//g, ' ')) {
    if (quote) {
      if (char === quote) quote = undefined;
      continue;
    }
    if (char === "'" || char === '"') {
      if (depth === 0) kept += char;
      quote = char;
    } else if (char === '(') depth += 1;
    else if (char === ')') depth -= 1;
    else if (depth === 0) kept += char;
  }
  return kept;
}

/** `SUM(x)` or `PERCENTILE_CONT(0.5) WITHIN GROUP (...) FILTER (...)`: one call, needs no parentheses. */
export function isSingleCall(sql: string): boolean {
  return /^\s*[A-Za-z_][A-Za-z0-9_]*(\s+(WITHIN\s+GROUP|FILTER))*\s*$/i.test(outline(sql));
}

export function wrap(sql: string): string {
  return isSingleCall(sql) ? sql : `(${sql})`;
}

/**
 * A derived metric's expression with each input's alias (or name) replaced by
 * that input's expression; identifiers inside quotes are left alone.
 */
export function substituteInputs(expr: string, inputs: ReadonlyMap<string, string>): string {
  return expr.replace(/'(?:[^']|'')*'|"[^"]*"|[A-Za-z_][A-Za-z0-9_]*/g, (token) => {
    if (token.startsWith("'") || token.startsWith('"')) return token;
    const replacement = inputs.get(token);
    return replacement === undefined ? token : wrap(replacement);
  });
}
