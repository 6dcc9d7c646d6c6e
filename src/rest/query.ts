import { errors, HttpError } from '../errors.js';

/** Query parameters of the REST routes, as Fastify parses them. */
export type Query = Record<string, string | string[] | undefined>;

/** A repeated query parameter counts with its first value. */
export function param(query: Query, name: string): string | undefined {
  const value = query[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Refuses (400, naming it) a query parameter a route does not take. A write
 * route runs it before the body is read: a misspelt flag (`?check=true` for a
 * dry run) must not be ignored and the write done as if it were not there.
 */
export function rejectUnknownParameters(query: Query, known: readonly string[]): void {
  const unknown = Object.keys(query).find((name) => !known.includes(name));
  if (unknown !== undefined) throw new HttpError(errors.unknownQueryParameter(unknown, known));
}
