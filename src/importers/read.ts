/**
 * Lenient readers for foreign files: a value of the wrong type reads as
 * absent, because dbt and OSI add, rename and null fields between versions
 * and an importer must not fail on what it does not use.
 */
import { ImportError } from './import-error.js';

export type JsonRecord = Record<string, unknown>;

export function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function record(value: unknown): JsonRecord | undefined {
  return isRecord(value) ? value : undefined;
}

export function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A non-blank string, trimmed. */
export function nonBlank(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * The file as a value: already-parsed input is taken as is, text and bytes
 * are parsed as JSON, so that a truncated file is refused with the parser's
 * position rather than failing later on a missing field.
 */
export function parseJsonInput(input: unknown, what: string): unknown {
  let source: string;
  if (typeof input === 'string') source = input;
  else if (input instanceof Uint8Array) source = new TextDecoder().decode(input);
  else return input;
  try {
    return JSON.parse(source);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new ImportError([{ path: '', message: `not valid JSON (${detail}); expected ${what}` }]);
  }
}

/**
 * A metric key from a name in another tool: lower-cased, every run of
 * characters outside `[a-z0-9_.-]` made one `_`, so that `Total Sales`
 * becomes `total_sales`; dbt's names are keys already and stay unchanged.
 */
export function keyFromName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9_.-]+/g, '_')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 128);
}

/** `revenue_growth_mom_00` -> `Revenue Growth Mom 00`, for metrics without a label. */
export function readableName(name: string): string {
  return name
    .split(/[\s_.-]+/)
    .filter((word) => word !== '')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join(' ');
}

/** Appends the values not in the list yet, keeping first-seen order. */
export function pushUnique<T>(target: T[], values: Iterable<T>): T[] {
  for (const value of values) if (!target.includes(value)) target.push(value);
  return target;
}
