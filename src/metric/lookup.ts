/**
 * Metrics of an organization found by what a person or an agent calls them:
 * the machine key, or the name regardless of case. Each answers an id (or
 * null); the metric itself is then read by id like any other.
 */
import { sql } from 'kysely';
import { compile, db } from '../db/kysely.js';
import { POINT_READ, type SqlReader } from '../db/sql.js';

/** The organization's metric whose key is exactly `key` (keys are unique within an organization). */
export async function findMetricIdByKey(reader: SqlReader, orgId: string, key: string): Promise<string | null> {
  const [row] = await reader.query(
    compile(db.selectFrom('metric').select('id').where('orgId', '=', orgId).where('key', '=', key)),
    POINT_READ,
  );
  return row?.id ?? null;
}

/**
 * The organization's metric whose name equals `name` case-insensitively;
 * names need not be unique, so the first by name (code points), then id.
 */
export async function findMetricIdByName(reader: SqlReader, orgId: string, name: string): Promise<string | null> {
  // metric_search is a table of the migrations that the Prisma schema does not model: raw SQL, its row declared.
  const [row] = await reader.query(
    compile(sql<{ id: string }>`
      SELECT id::text AS id FROM metric_search
      WHERE org_id = ${orgId}::uuid AND name_lower = lower(${name})
      ORDER BY name, id LIMIT 1`),
    POINT_READ,
  );
  return row?.id ?? null;
}
