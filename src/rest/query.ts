/** Query parameters of the REST routes, as Fastify parses them. */
export type Query = Record<string, string | string[] | undefined>;

/** A repeated query parameter counts with its first value. */
export function param(query: Query, name: string): string | undefined {
  const value = query[name];
  return Array.isArray(value) ? value[0] : value;
}
