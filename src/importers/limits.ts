/**
 * What an import may make of a file (docs/importers.md, "Limits"). A metric
 * inherits its expression, semantic models, dimensions and filters from its
 * inputs, so a file of a few kilobytes could otherwise make a registry
 * document of gigabytes: every copy an importer makes is counted against
 * these bounds as it is made, and passing one is a problem naming the
 * metric, never an out-of-memory.
 */

/** Input metrics read through input metrics: deeper chains are refused (MetricFlow projects stay far below). */
export const MAX_DERIVED_DEPTH = 64;

/** The characters of one metric's inlined SQL expression; past it the expression names its input metrics by key. */
export const MAX_RENDERED_EXPRESSION = 16_384;

/** Characters rendered for a whole file, inlined expressions and abandoned attempts included. */
export const MAX_RENDERED_TOTAL = 32 * 1024 * 1024;

/** Per metric: the tables (dbt semantic models, OSI datasets) it reads. */
export const MAX_SOURCE_REFS = 64;

/** Per metric: the dimensions of the tables it reads. */
export const MAX_DIMENSIONS = 1_000;

/** Per metric: its filters with those of its inputs. */
export const MAX_FILTERS = 100;

/** The characters of the document an import makes, counted as a hand-written document's body is (16 MiB). */
export const MAX_IMPORTED_SIZE = 16 * 1024 * 1024;

/** A METRIC_GOVERNANCE extension's `data` string: its length, and its nesting checked before it is parsed. */
export const MAX_GOVERNANCE_DATA = 256 * 1024;
export const MAX_GOVERNANCE_DEPTH = 32;

const formatted = (count: number) => count.toLocaleString('en-US');

/** The problem of a metric whose inherited list passes its bound. */
export function tooMany(what: string, limit: number): string {
  return `more than ${formatted(limit)} ${what} (the most an imported metric may have)`;
}

interface Dimension {
  name: string;
}

/** Each table's dimensions, the first of each name, up to one past MAX_DIMENSIONS: worked out once a file. */
const uniqueOfTable = new WeakMap<readonly Dimension[], Dimension[]>();

function uniqueDimensions<T extends Dimension>(table: readonly T[]): T[] {
  let unique = uniqueOfTable.get(table) as T[] | undefined;
  if (!unique) {
    const byName = new Map<string, T>();
    for (const dimension of table) {
      if (byName.size > MAX_DIMENSIONS) break;
      if (!byName.has(dimension.name)) byName.set(dimension.name, dimension);
    }
    unique = [...byName.values()];
    uniqueOfTable.set(table, unique);
  }
  return unique;
}

/**
 * The dimensions of the tables a metric reads, the first of each name, as
 * copies; more than MAX_DIMENSIONS (uncopied) when there are more, found
 * without going through them all, since every metric of a file may read the
 * same wide table.
 */
export function dimensionsUpTo<T extends Dimension>(tables: readonly (readonly T[])[]): T[] {
  const kept = new Map<string, T>();
  for (const table of tables) {
    const unique = uniqueDimensions(table);
    if (unique.length > MAX_DIMENSIONS) return unique;
    for (const dimension of unique) {
      if (kept.has(dimension.name)) continue;
      kept.set(dimension.name, dimension);
      if (kept.size > MAX_DIMENSIONS) return [...kept.values()];
    }
  }
  return [...kept.values()].map((dimension) => ({ ...dimension }));
}

/**
 * The size of the document an import makes, counted metric by metric from
 * what each metric inherits (its own fields are the file's and bounded by
 * its size). `spend` answers false once the document would pass
 * MAX_IMPORTED_SIZE; the importer then reports that metric and stops.
 */
export class ImportedSize {
  private used = 0;

  spend(metric: {
    sql_expression: string;
    source_refs?: readonly Record<string, unknown>[];
    dimensions?: readonly unknown[];
    filters?: readonly string[];
  }): boolean {
    let size = metric.sql_expression.length;
    for (const ref of metric.source_refs ?? []) size += jsonLength(ref);
    for (const dimension of metric.dimensions ?? []) size += jsonLength(dimension);
    for (const filter of metric.filters ?? []) size += filter.length + 3;
    this.used += size;
    return this.used <= MAX_IMPORTED_SIZE;
  }

  static readonly message =
    `the document made from this file passes ${formatted(MAX_IMPORTED_SIZE)} characters at this metric (what metrics inherit from their inputs and tables is counted); split the file`;
}

/** A flat record's JSON length, near enough: members and their string values. */
function jsonLength(value: unknown): number {
  if (value === null || typeof value !== 'object') return 8;
  let size = 2;
  for (const [name, member] of Object.entries(value))
    size += name.length + 4 + (typeof member === 'string' ? member.length + 2 : 8);
  return size;
}

/**
 * The deepest nesting of arrays and objects in a JSON text, found by one
 * pass over its characters (strings skipped), so that a text nested far too
 * deep is refused before the parser or any walk of its value sees it.
 */
export function jsonNesting(source: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < source.length; i++) {
    const char = source.charCodeAt(i);
    if (inString) {
      if (char === 0x5c) i++;
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x7b || char === 0x5b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (char === 0x7d || char === 0x5d) depth--;
  }
  return deepest;
}
