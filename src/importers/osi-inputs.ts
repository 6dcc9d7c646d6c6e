/**
 * The input metrics of an OSI metric (docs/importers.md, "Inputs of OSI
 * metrics"). OSI has no field for them: a metric built on another writes the
 * other's name in its SQL expression. A name is read as a metric only where
 * nothing else can be meant: an identifier of the expression (outside string
 * literals and comments) that is neither qualified (`x.name`), nor a
 * qualifier (`name.x`), nor a function called (`name(`), that names another
 * metric of the same semantic model (unquoted in any case, quoted exactly),
 * and that is not also the name of one of the model's datasets or fields,
 * nor an SQL keyword when unquoted. Anything else is no input: a missing
 * link is a lineage left unsaid, a wrong one would move verdicts.
 */

/** SQL words an expression uses around its operands; a metric of such a name is named only quoted. */
const KEYWORDS = new Set([
  'all',
  'and',
  'any',
  'as',
  'asc',
  'between',
  'both',
  'by',
  'case',
  'cast',
  'current_date',
  'current_time',
  'current_timestamp',
  'date',
  'day',
  'desc',
  'distinct',
  'else',
  'end',
  'escape',
  'except',
  'exists',
  'false',
  'filter',
  'following',
  'for',
  'from',
  'hour',
  'ilike',
  'in',
  'interval',
  'is',
  'leading',
  'like',
  'minute',
  'month',
  'not',
  'null',
  'nulls',
  'on',
  'or',
  'order',
  'over',
  'partition',
  'preceding',
  'range',
  'rows',
  'second',
  'select',
  'some',
  'then',
  'time',
  'timestamp',
  'trailing',
  'true',
  'unbounded',
  'union',
  'unknown',
  'when',
  'where',
  'within',
  'year',
]);

/**
 * One token at a time: a comment, a string literal, a quoted identifier
 * (group 1, unterminated: group 2 empty), an identifier (group 3), a number,
 * or any other character. Each alternative runs to the end of the text when
 * unterminated instead of failing, so the scan is linear in the text.
 */
const TOKEN =
  /--[^\n]*|\/\*(?:[^*]|\*(?!\/))*(?:\*\/|$)|'(?:[^']|'')*(?:'|$)|"((?:[^"]|"")*)("|$)|([A-Za-z_][A-Za-z0-9_$]*)|[0-9][A-Za-z0-9_.$]*|\S/g;

/** What a metric's expression may name, for one semantic model. */
export interface MetricNames {
  /** the model's metric names by their lower-cased spelling (an unquoted identifier) */
  unquoted: ReadonlyMap<string, string>;
  /** the model's metric names as written (a quoted identifier) */
  quoted: ReadonlySet<string>;
  /** the lower-cased names of the model's datasets and fields: never read as a metric */
  taken: ReadonlySet<string>;
}

/** The names of `metrics` as {@link inputMetricNames} reads them, beside the model's datasets and fields. */
export function metricNames(metrics: readonly string[], datasetsAndFields: readonly string[]): MetricNames {
  return {
    unquoted: new Map(metrics.map((name) => [name.toLowerCase(), name])),
    quoted: new Set(metrics),
    taken: new Set(datasetsAndFields.map((name) => name.toLowerCase())),
  };
}

/**
 * The metrics (by name, as the model writes them) that `sql` names, in the
 * order it first names them, without `self`.
 */
export function inputMetricNames(sql: string, names: MetricNames, self: string): string[] {
  const found = new Set<string>();
  /** a name seen, decided by the token after it (not `.` nor `(`) */
  let pending: string | undefined;
  let previous = '';
  for (const match of sql.matchAll(TOKEN)) {
    const [token] = match;
    if (token.startsWith('--') || token.startsWith('/*')) continue;
    if (pending !== undefined && token !== '.' && token !== '(') found.add(pending);
    pending = undefined;
    const quoted = match[1] !== undefined && match[2] === '"' ? match[1].replace(/""/g, '"') : undefined;
    const bare = match[3];
    if (previous !== '.') {
      let name: string | undefined;
      if (quoted !== undefined && names.quoted.has(quoted)) name = quoted;
      else if (bare !== undefined && !KEYWORDS.has(bare.toLowerCase())) name = names.unquoted.get(bare.toLowerCase());
      if (name !== undefined && name !== self && !names.taken.has(name.toLowerCase())) pending = name;
    }
    previous = token;
  }
  if (pending !== undefined) found.add(pending);
  return [...found];
}
