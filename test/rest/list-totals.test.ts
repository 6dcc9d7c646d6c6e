/**
 * List totals are kept by the organization's `metrics_version`, which the
 * database bumps with every change to its metrics (src/metric/list-page.ts). A
 * kept total must never outlive the data it counted: whatever writes the
 * metrics (here plain SQL, as another instance or a fixture load would),
 * the next request counts again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { insertMetricBeside } from '../helpers/metric-sql.js';
import { expectOk, statementCount } from './expectations.js';

const r = registry();
const acme = r.org();
const first = acme.metric({ name: 'Alpha', lifecycle_status: 'DRAFT' });
for (const name of ['Bravo', 'Charlie', 'Delta']) acme.metric({ name, lifecycle_status: 'RELEASED' });
const key = acme.key();
const other = r.org();
other.metric({ name: 'Elsewhere' });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), serverTiming: true });
});
afterAll(() => t.close());

async function total(query = '') {
  const res = await t.get(`/api/v1/metrics?pageSize=2${query}`, key.secret);
  return { total: expectOk(res).pagination.total as number, statements: statementCount(res) };
}

describe('list totals', () => {
  it('are counted once per version and reused, with the same statements per request', async () => {
    expect(await total()).toEqual({ total: 4, statements: 2 });
    expect(await total()).toEqual({ total: 4, statements: 2 });
    // A page past the end of a known total needs no page statement.
    const past = await t.get('/api/v1/metrics?pageSize=2&page=9', key.secret);
    expect(expectOk(past).pagination.total).toBe(4);
    expect(statementCount(past)).toBe(1);
  });

  it('follow inserts, updates and deletes at once, for each filter', async () => {
    expect((await total('&lifecycle_status=RELEASED')).total).toBe(3);
    const id = await insertMetricBeside(t.database.prisma, first.id, { key: 'echo', name: 'Echo' });
    expect((await total()).total).toBe(5);
    expect((await total('&lifecycle_status=RELEASED')).total).toBe(4);

    await t.database.prisma.$executeRaw`UPDATE metric SET lifecycle_status = 'DRAFT' WHERE id = ${id}::uuid`;
    expect((await total('&lifecycle_status=RELEASED')).total).toBe(3);
    expect((await total('&lifecycle_status=DRAFT')).total).toBe(2);

    await t.database.prisma.$executeRaw`DELETE FROM metric WHERE id = ${id}::uuid`;
    expect((await total()).total).toBe(4);
    expect((await total('&lifecycle_status=DRAFT')).total).toBe(1);
  });

  it('of one organization do not move with another organization’s changes', async () => {
    const before = await t.database.prisma.organization.findUniqueOrThrow({ where: { id: acme.id } });
    await t.database.prisma.$executeRaw`UPDATE metric SET name = 'Elsewhere 2' WHERE org_id = ${other.id}::uuid`;
    const after = await t.database.prisma.organization.findUniqueOrThrow({ where: { id: acme.id } });
    expect(after.metricsVersion).toBe(before.metricsVersion);
    expect((await total()).total).toBe(4);
  });
});
