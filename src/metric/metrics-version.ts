/**
 * An organization's `metrics_version` alone (the key lookup reads it with the
 * key): what a list's tag is made of, read again on the primary when a read
 * replica could not answer a conditional request (src/rest/routes.ts).
 */
import { sql } from 'kysely';
import { compile } from '../db/kysely.js';
import { POINT_READ, type SqlReader } from '../db/sql.js';

/** null when there is no such organization. */
export async function readMetricsVersion(reader: SqlReader, orgId: string): Promise<string | null> {
  const [row] = await reader.query(
    compile(
      sql<{ version: string }>`SELECT metrics_version::text AS version FROM organization WHERE id = ${orgId}::uuid`,
    ),
    POINT_READ,
  );
  return row?.version ?? null;
}
