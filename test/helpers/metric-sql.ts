/**
 * Writes a metric with plain SQL, behind the service's back (as another
 * instance or a fixture load would), for tests of what the database keeps in
 * step with its metrics: list totals, search documents.
 */
import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '../../src/generated/prisma/client.js';

/** A RELEASED base metric in the organization and project of `sibling`; returns its id. */
export async function insertMetricBeside(
  prisma: PrismaClient,
  sibling: string,
  metric: { key: string; name: string; description?: string; conceptName?: string },
): Promise<string> {
  const id = randomUUID();
  await prisma.$executeRaw`
    INSERT INTO metric (id, org_id, project_id, key, name, description, metric_type, lifecycle_status,
      definition_version, policy_tier, owner_team, scope, concept_name, template_name, sql_expression,
      default_grain, created_at, updated_at)
    SELECT ${id}::uuid, org_id, project_id, ${metric.key}, ${metric.name}, ${metric.description ?? ''}, 'base',
      'RELEASED', '1.0.0', 'tier_1', 'team', 'exploratory', ${metric.conceptName ?? 'c'}, 't', 'SUM(x)', 'day',
      now(), now()
    FROM metric WHERE id = ${sibling}::uuid`;
  return id;
}

/**
 * `count` RELEASED base metrics beside `sibling` whose detail and contract read (lists set), in one statement, keyed `<prefix>_<n>` (n from 0,
 * zero-padded to 6 digits); returns their ids in the order of n.
 */
export async function insertMetricsBeside(
  prisma: PrismaClient,
  sibling: string,
  count: number,
  prefix: string,
): Promise<string[]> {
  const rows = await prisma.$queryRaw<{ id: string; key: string }[]>`
    INSERT INTO metric (id, org_id, project_id, key, name, description, metric_type, lifecycle_status,
      definition_version, policy_tier, owner_team, scope, concept_name, template_name, sql_expression,
      default_grain, tags, grains, filters, created_at, updated_at)
    SELECT gen_random_uuid(), s.org_id, s.project_id, ${prefix} || '_' || lpad(n::text, 6, '0'),
      ${prefix} || ' ' || n, '', 'base', 'RELEASED', '1.0.0', 'tier_1', 'team', 'exploratory', 'c', 't',
      'SUM(x)', 'day', '{}', '{day}', '{}', now(), now()
    FROM metric s CROSS JOIN generate_series(0, ${count - 1}::int) AS n
    WHERE s.id = ${sibling}::uuid
    ORDER BY n
    RETURNING id::text AS id, key`;
  // The keys sort as their numbers do (zero-padded).
  return rows.sort((a, b) => (a.key < b.key ? -1 : 1)).map((row) => row.id);
}
