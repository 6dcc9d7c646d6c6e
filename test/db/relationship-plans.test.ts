/**
 * After every write of relationships, search's parent of each metric they
 * touch is worked out again (`metric_parent`, in the migrations): its
 * superseder, by target and kind, the lowest id first. That lookup reads the
 * index on (target, kind, metric) and stops at its first entry. Before, with
 * an index on the target alone, PostgreSQL walked the unique index in metric
 * id order and filtered every relationship of the registry until the first
 * match: at 1,000,000 metrics, a write of 40,000 relationships did not end
 * in ten minutes. PostgreSQL only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { insertMetricsBeside } from '../helpers/metric-sql.js';
import { lacks, POSTGRES } from '../helpers/needs.js';
import { type ExplainRow, planNodes } from '../helpers/plans.js';

const METRICS = 20_000;
const INDEX = 'metric_relationship_target_metric_id_kind_metric_id_idx';

const r = registry();
const org = r.org();
const seedMetric = org.metric({ key: 'seed' });

/** `metric_parent`'s superseder lookup, as its SQL function runs it. */
const SUPERSEDER = `SELECT r."metric_id" FROM "metric_relationship" r
  WHERE r."target_metric_id" = $1::uuid AND r."kind" = 'supersedes' AND r."metric_id" <> $1::uuid ORDER BY 1 LIMIT 1`;

describe.skipIf(lacks(POSTGRES))('relationship writes at 20,000 metrics', () => {
  let t: TestApp;
  let ids: string[];

  beforeAll(async () => {
    t = await startTestApp({ fixture: r.build() });
    const { prisma } = t.database;
    ids = await insertMetricsBeside(prisma, seedMetric.id, METRICS, 'rel');
    // Each metric related to the one before it, every tenth superseding it.
    await prisma.$executeRaw`
      INSERT INTO metric_relationship (id, metric_id, kind, target_metric_id)
      SELECT gen_random_uuid(), a.id::uuid,
        (CASE WHEN n % 10 = 0 THEN 'supersedes' ELSE 'related_to' END)::"RelationshipKind", b.id::uuid
      FROM unnest(${ids}::text[]) WITH ORDINALITY AS a(id, n)
      JOIN unnest(${ids}::text[]) WITH ORDINALITY AS b(id, m) ON m = n - 1`;
    await prisma.$executeRawUnsafe('ANALYZE metric_relationship');
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it("finds a metric's superseder through the (target, kind, metric) index, reading one entry", async () => {
    const { prisma } = t.database;
    // A metric no one supersedes: the old plan read every relationship for it.
    const target = ids[METRICS - 1] as string;
    const [row] = await prisma.$queryRawUnsafe<ExplainRow[]>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${SUPERSEDER.replaceAll('$1::uuid', `'${target}'::uuid`)}`,
    );
    const nodes = [...planNodes((row as ExplainRow)['QUERY PLAN'][0].Plan)];
    const scans = nodes.filter((node) => node['Relation Name'] === 'metric_relationship');
    expect(scans.map((node) => node['Index Name'])).toEqual([INDEX]);
    expect(scans.every((node) => (node['Rows Removed by Filter'] ?? 0) === 0)).toBe(true);
  });

  it('a write of relationships keeps search parents right: a superseded metric names its superseder', async () => {
    const { prisma } = t.database;
    const [older, newer] = [ids[100] as string, ids[5000] as string];
    await prisma.$executeRaw`INSERT INTO metric_relationship (id, metric_id, kind, target_metric_id)
      VALUES (gen_random_uuid(), ${newer}::uuid, 'supersedes', ${older}::uuid)`;
    const [search] = await prisma.$queryRaw<{ parent_id: string | null }[]>`
      SELECT parent_id::text AS parent_id FROM metric_search WHERE id = ${older}::uuid`;
    // The lowest id of those that supersede it: the one before it in the chain (if a tenth), or the new one.
    const [expected] = await prisma.$queryRaw<{ id: string }[]>`
      SELECT min(metric_id::text) AS id FROM metric_relationship
      WHERE target_metric_id = ${older}::uuid AND kind = 'supersedes' AND metric_id <> ${older}::uuid`;
    expect(search?.parent_id).toBe(expected?.id);
  });
});
