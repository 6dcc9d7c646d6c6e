/**
 * The read routes take metric rows from SQL (src/metric/rows.ts) instead of
 * Prisma's model API. Those rows must be exactly what the model API returns:
 * every field, its type (dates, JSON, arrays, enums) and the documented orders.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFixture } from '../../src/fixtures/load.js';
import { effectiveFilter, LIST_ORDER, metricWhere } from '../../src/metric/list.js';
import { createMetricLoaders, loadMetricWithParts } from '../../src/metric/loaders.js';
import { findMetricRow, findMetrics, listMetricPage } from '../../src/metric/rows.js';
import { demoFixture } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
let orgIds: string[];

beforeAll(async () => {
  db = await createTestDatabase();
  await loadFixture(db.prisma, demoFixture);
  orgIds = (await db.prisma.organization.findMany({ select: { id: true } })).map((o) => o.id);
});

afterAll(() => db.drop());

const relationsQuery = {
  relationships: { orderBy: [{ kind: 'asc' as const }, { targetMetricId: 'asc' as const }] },
  approvals: { orderBy: [{ decidedAt: 'desc' as const }, { id: 'asc' as const }] },
  versions: { orderBy: [{ releasedAt: { sort: 'desc' as const, nulls: 'last' as const } }, { id: 'asc' as const }] },
};

describe('metric rows from SQL', () => {
  it('equal the model rows, with their relations, for every metric of the demo', async () => {
    const models = await db.prisma.metric.findMany({ include: relationsQuery });
    expect(models.length).toBeGreaterThan(10);
    expect(models.some((m) => m.relationships.length && m.approvals.length && m.versions.length)).toBe(true);
    for (const { relationships, approvals, versions, ...model } of models) {
      expect((await findMetricRow(db.sql, model.orgId, model.id, []))?.metric).toStrictEqual(model);
      // In the metric's own statement, the relations prime their loader ...
      const loaders = createMetricLoaders(db.sql, model.orgId);
      const parts = new Set(['relations'] as const);
      expect(await loadMetricWithParts(db.sql, loaders, model.orgId, model.id, { fields: null, parts })).toStrictEqual(
        model,
      );
      expect(await loaders.relations.load(model.id)).toStrictEqual({ relationships, approvals, versions });
    }
    // ... and batched for a list they are the same.
    const loaders = createMetricLoaders(db.sql, orgIds[0] as string);
    expect(await loaders.relations.loadMany(models.map((m) => m.id))).toStrictEqual(
      models.map(({ relationships, approvals, versions }) => ({ relationships, approvals, versions })),
    );
  });

  it('are scoped to the organization', async () => {
    const [first, second] = orgIds as [string, string];
    const metric = await db.prisma.metric.findFirstOrThrow({ where: { orgId: first } });
    expect(await findMetricRow(db.sql, second, metric.id, [])).toBeNull();
    expect(await findMetrics(db.sql, second, [metric.id])).toStrictEqual([null]);
    expect((await findMetrics(db.sql, first, [metric.id]))[0]?.id).toBe(metric.id);
  });

  it('list pages and totals equal the model API for each filter and page', async () => {
    const filters = [
      {},
      { lifecycleStatus: 'CANONICAL' },
      { status: 'approved' },
      { policyTier: 'tier_1' },
      { scope: 'enterprise_canonical' },
      { type: 'derived' },
      { lifecycleStatus: 'not-a-status' },
    ];
    for (const orgId of orgIds) {
      for (const input of filters) {
        const filter = effectiveFilter(input);
        const where = metricWhere(orgId, filter);
        const total = await db.prisma.metric.count({ where });
        for (const [skip, take] of [
          [0, 5],
          [5, 5],
          [0, 100],
          [total + 10, 5],
        ] as const) {
          const expected = await db.prisma.metric.findMany({ where, orderBy: LIST_ORDER, skip, take });
          expect(await listMetricPage(db.sql, orgId, filter, { skip, take })).toStrictEqual({
            rows: expected,
            total,
          });
        }
      }
    }
  });
});
