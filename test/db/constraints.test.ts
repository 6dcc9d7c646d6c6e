/**
 * Rules the database keeps for every writer, not only the fixture loader:
 * a relationship stays inside one organization, a metric never changes
 * organization, and no slug is shaped like a UUID.
 */
import { randomUUID } from 'node:crypto';
import { type RawBuilder, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile } from '../../src/db/kysely.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { registry } from '../fixtures/registry.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

const fixture = registry();
const acme = fixture.org({ slug: 'acme-constraints' });
const globex = fixture.org({ slug: 'globex-constraints' });
const revenue = acme.metric({ name: 'Revenue' });
const orders = acme.metric({ name: 'Orders' });
const foreign = globex.metric({ name: 'Foreign' });

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await loadFixture(db.prisma, fixture.build());
});
afterAll(() => db.drop());

/** Runs a statement on the service's own driver (which keeps the database's message on PGlite too). */
const rejected = (statement: RawBuilder<unknown>) =>
  db.sql.query(compile(statement)).then(
    () => 'accepted',
    (error: Error) => `${error.message} ${JSON.stringify(error)}`,
  );

describe('database constraints', () => {
  it('a relationship to a metric of another organization is refused, one inside the organization accepted', async () => {
    const across = await rejected(
      sql`INSERT INTO metric_relationship (id, metric_id, kind, target_metric_id)
        VALUES (${randomUUID()}::uuid, ${revenue.id}::uuid, 'related_to', ${foreign.id}::uuid)`,
    );
    expect(across).toContain(`relationship target ${foreign.id} is not a metric of the organization`);

    const inside = randomUUID();
    await db.sql.query(
      compile(sql`INSERT INTO metric_relationship (id, metric_id, kind, target_metric_id)
      VALUES (${inside}::uuid, ${revenue.id}::uuid, 'related_to', ${orders.id}::uuid)`),
    );
    // Nor can an existing relationship be pointed across.
    const moved = await rejected(
      sql`UPDATE metric_relationship SET target_metric_id = ${foreign.id}::uuid WHERE id = ${inside}::uuid`,
    );
    expect(moved).toContain('is not a metric of the organization');
    expect(await db.prisma.metricRelationship.count({ where: { targetMetricId: foreign.id } })).toBe(0);
  });

  it('a metric cannot move to another organization', async () => {
    const moved = await rejected(sql`UPDATE metric SET org_id = ${globex.id}::uuid WHERE id = ${orders.id}::uuid`);
    expect(moved).toContain('cannot move to another organization');
  });

  it('no organization slug is shaped like a UUID', async () => {
    const renamed = await rejected(
      sql`UPDATE organization SET slug = ${globex.id.toUpperCase()} WHERE id = ${acme.id}::uuid`,
    );
    expect(renamed).toContain('organization_slug_not_uuid');
  });
});
