/**
 * The read routes take metric rows from SQL (src/metric/by-id.ts,
 * list-page.ts, search-page.ts, connection-page.ts) instead of Prisma's
 * model API. Those rows must be exactly what the model API returns:
 * every field, its type (dates, JSON, arrays, enums) and the documented orders.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFixture } from '../../src/fixtures/load.js';
import type { Prisma } from '../../src/generated/prisma/client.js';
import { findMetricRow, findMetrics } from '../../src/metric/by-id.js';
import { keysetMetricPage } from '../../src/metric/connection-page.js';
import { type EffectiveFilter, effectiveFilter } from '../../src/metric/list.js';
import { listMetricPage } from '../../src/metric/list-page.js';
import { createMetricLoaders, loadMetricWithParts } from '../../src/metric/loaders.js';
import { searchMetricPage } from '../../src/metric/search-page.js';
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

/** The filter as Prisma's model API reads it: what the one SQL filter (src/metric/list.ts) must match. */
function modelWhere(orgId: string, filter: EffectiveFilter): Prisma.MetricWhereInput {
  return {
    orgId,
    ...(filter.lifecycle ? { lifecycleStatus: { in: filter.lifecycle } } : {}),
    ...(filter.policyTier !== null ? { policyTier: filter.policyTier } : {}),
    ...(filter.scope !== null ? { scope: filter.scope } : {}),
    ...(filter.metricType !== null ? { metricType: filter.metricType } : {}),
    // The verdict as announced (the fixture load announces every metric's).
    ...(filter.trust !== null ? { trustState: { verdict: filter.trust } } : {}),
  };
}

const LIST_ORDER: Prisma.MetricOrderByWithRelationInput[] = [{ name: 'asc' }, { id: 'asc' }];

const FILTERS = [
  {},
  { lifecycleStatus: 'RELEASED' },
  { lifecycleStatus: 'CANONICAL' },
  { status: 'approved' },
  { status: 'review' },
  { policyTier: 'tier_1' },
  { scope: 'enterprise_canonical' },
  { scope: 'not-a-scope' },
  { type: 'derived' },
  { lifecycleStatus: 'not-a-status' },
  { status: 'approved', policyTier: 'tier_1', scope: 'enterprise_canonical', type: 'base' },
  { trust: 'use' },
  { trust: 'use_with_caution' },
  { trust: 'do_not_use' },
  { trust: 'use_with_caution', status: 'review', policyTier: 'tier_1' },
];

const relationsQuery = {
  relationships: {
    orderBy: [{ kind: 'asc' as const }, { targetMetricId: 'asc' as const }],
    // What a relationship carries of its target (CARRIED_TARGET_FIELDS); the demo's are all in the organization.
    include: { target: { select: { id: true, orgId: true, key: true, name: true, lifecycleStatus: true } } },
  },
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
    for (const orgId of orgIds) {
      for (const input of FILTERS) {
        const filter = effectiveFilter(input);
        const where = modelWhere(orgId, filter);
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

  it('metricsConnection pages (keyset, either direction) equal the model API for each filter', async () => {
    for (const orgId of orgIds) {
      for (const input of FILTERS) {
        const filter = effectiveFilter(input);
        const expected = await db.prisma.metric.findMany({ where: modelWhere(orgId, filter), orderBy: LIST_ORDER });
        const forward = [];
        let after: string | undefined;
        for (;;) {
          const rows = await keysetMetricPage(db.sql, orgId, filter, { after, limit: 3, inverted: false });
          forward.push(...rows);
          if (rows.length < 3) break;
          after = rows.at(-1)?.id;
        }
        expect(forward).toStrictEqual(expected);
        const backward = [];
        let before: string | undefined;
        for (;;) {
          const rows = await keysetMetricPage(db.sql, orgId, filter, { before, limit: 2, inverted: true });
          backward.unshift(...rows.reverse());
          if (rows.length < 2) break;
          before = backward[0]?.id;
        }
        expect(backward).toStrictEqual(expected);
        const [first, second] = expected;
        if (first && second) {
          expect(
            await keysetMetricPage(db.sql, orgId, filter, {
              after: first.id,
              before: second.id,
              limit: 5,
              inverted: false,
            }),
          ).toStrictEqual([]);
        }
      }
    }
    // A cursor of another organization's metric starts nothing.
    const [first, second] = orgIds as [string, string];
    const foreign = await db.prisma.metric.findFirstOrThrow({ where: { orgId: second } });
    expect(
      await keysetMetricPage(db.sql, first, effectiveFilter(), { after: foreign.id, limit: 5, inverted: false }),
    ).toStrictEqual([]);
  });

  it('search pages keep only what the filter keeps', async () => {
    for (const orgId of orgIds) {
      for (const input of FILTERS) {
        const filter = effectiveFilter(input);
        const matching = new Set(
          (await db.prisma.metric.findMany({ where: modelWhere(orgId, filter), select: { id: true } })).map(
            (m) => m.id,
          ),
        );
        for (const query of ['revenue', 'active users', 'churn rate']) {
          const { rows, total } = await searchMetricPage(db.sql, orgId, query, filter, { skip: 0, take: 100 });
          expect(rows.length).toBe(total);
          for (const row of rows) expect(matching.has(row.id), `${query} ${JSON.stringify(input)}`).toBe(true);
          if (
            filter.lifecycle === null &&
            filter.policyTier === null &&
            filter.scope === null &&
            !filter.metricType &&
            filter.trust === null
          ) {
            continue;
          }
          // Unfiltered, the same query finds these and possibly more.
          const all = await searchMetricPage(db.sql, orgId, query, effectiveFilter(), { skip: 0, take: 100 });
          expect(all.total).toBeGreaterThanOrEqual(total);
        }
      }
    }
  });
});
