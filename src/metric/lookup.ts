/**
 * Metrics of an organization found by what a person or an agent calls them:
 * the machine key, or the name regardless of case. Each answers an id (or
 * null); the metric itself is then read by id like any other.
 */
import type { SqlReader } from '../db/sql.js';
import { Prisma } from '../generated/prisma/client.js';

/** The organization's metric whose key is exactly `key` (keys are unique within an organization). */
export async function findMetricIdByKey(sql: SqlReader, orgId: string, key: string): Promise<string | null> {
  const [row] = await sql.query<{ id: string }>(Prisma.sql`
    SELECT id::text AS id FROM metric WHERE org_id = ${orgId}::uuid AND key = ${key}`);
  return row?.id ?? null;
}

/**
 * The organization's metric whose name equals `name` case-insensitively;
 * names need not be unique, so the first by name (code points), then id.
 */
export async function findMetricIdByName(sql: SqlReader, orgId: string, name: string): Promise<string | null> {
  const [row] = await sql.query<{ id: string }>(Prisma.sql`
    SELECT id::text AS id FROM metric_search
    WHERE org_id = ${orgId}::uuid AND name_lower = lower(${name})
    ORDER BY name, id LIMIT 1`);
  return row?.id ?? null;
}
