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

// Every repetition is bounded (a reference is a name and a grain, far shorter), so that a filter of
// many unclosed `{{ Dimension('` is read in time linear in its length.
const TEMPLATE_CALL =
  /\{\{\s{0,16}(Dimension|TimeDimension|Entity|Metric)\(\s{0,16}(['"])((?:(?!\2).){0,256})\2([^)]{0,256})\)((?:\s{0,16}\.\s{0,16}\w{1,64}\(\s{0,16}['"]?\w{0,64}['"]?\s{0,16}\)){0,8})\s{0,16}\}\}/g;

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
  const templates: string[] = [];
  // A stack rather than recursion: how deep the lists go is the file's choice.
  const pending: unknown[] = [filter];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (value.trim() !== '') templates.push(value);
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push(value[i]);
    } else if (isRecord(value)) {
      pending.push(list(value.where_filters), text(value.where_sql_template));
    }
  }
  return templates;
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
  let comment = false;
  let kept = '';
  // One pass: a comment-removing pattern would rescan to the end from every unclosed `/*`.
  for (let i = 0; i < sql.length; i++) {
    const char = sql.charAt(i);
    if (comment) {
      if (char === '*' && sql.charAt(i + 1) === '/') {
        comment = false;
        i++;
      }
    } else if (quote) {
      if (char === quote) quote = undefined;
    } else if (char === '/' && sql.charAt(i + 1) === '*') {
      comment = true;
      i++;
      if (depth === 0) kept += ' ';
    } else if (char === "'" || char === '"') {
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

/** An expression that would pass the length it may have; the caller decides what stands instead. */
export class ExpressionTooLong extends Error {
  override readonly name = 'ExpressionTooLong';
}

/**
 * A derived metric's expression with each input's alias (or name) replaced by
 * that input's expression; identifiers inside quotes are left alone. Throws
 * ExpressionTooLong as soon as the result would pass `maxLength`, before
 * building it: an expression may name one input thousands of times.
 */
export function substituteInputs(expr: string, inputs: ReadonlyMap<string, string>, maxLength: number): string {
  const wrapped = new Map([...inputs].map(([name, sql]) => [name, wrap(sql)]));
  let length = expr.length;
  return expr.replace(/'(?:[^']|'')*'|"[^"]*"|[A-Za-z_][A-Za-z0-9_]*/g, (token) => {
    if (token.startsWith("'") || token.startsWith('"')) return token;
    const replacement = wrapped.get(token);
    if (replacement === undefined) return token;
    length += replacement.length - token.length;
    if (length > maxLength) throw new ExpressionTooLong();
    return replacement;
  });
}
