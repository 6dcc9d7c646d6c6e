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
