/**
 * The counts the writes keep (metric_count, by triggers on metric and metric_trust_state) always
 * equal a fresh count of the rows, after each write the service makes: a fixture load, applies
 * that create, change, change nothing, prune, restore and remove every metric, validation
 * evidence, an objection opened and resolved, and the sweep. Two organizations, each checked after
 * every step, so that one's writes never move the other's counts; and the catalog's facets and the
 * metrics needing attention, read from those counts, agree with the fresh count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { sweepOnce } from '../../src/changes/sweep.js';
import { ATTENTION_KINDS, metricsNeedingAttention } from '../../src/metric/attention.js';
import { metricFacets } from '../../src/metric/facets.js';
import { createReadCache } from '../../src/metric/read-cache.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import {
  type DocMetric,
  doc,
  docMetric,
  HOST,
  metricsVersion,
  newTeamOrg,
  planOf,
  postValidations,
  putRegistry,
  type TeamOrg,
  totals,
  uuidV5,
} from '../registry/support.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const FACETS = ['lifecycle', 'scope', 'domain', 'ownerTeam'] as const;

// The other organization, loaded from a fixture: a failed validation, an open objection, a deprecated metric.
const r = registry();
const other = r.org();
const otherRevenue = other.metric({ key: 'revenue', domain_id: other.domain('Finance') });
other.validation(otherRevenue, { ran_at: new Date().toISOString(), status: 'failed' });
const signups = other.metric({ key: 'signups', lifecycle_status: 'DRAFT', scope: 'exploratory', owner_team: 'Growth' });
other.thread(signups, { intent: 'objection' });
other.metric({ key: 'legacy', lifecycle_status: 'DEPRECATED' });

let t: TestApp;
let org: TeamOrg;
let otherToken: string;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
  org = await newTeamOrg(t.database.prisma, 'counts');
  const scopes = ['registry:write', 'validations:write'];
  otherToken = (await createServiceToken(t.database.prisma, { org: other.slug, name: 'CI', scopes })).secret;
});
afterAll(() => t?.close());

const prisma = () => t.database.prisma;

interface CountRow {
  facet: string;
  value: string;
  count: number;
}
type Counts = Record<string, Record<string, number>>;

function nest(rows: CountRow[]): Counts {
  const counts: Counts = {};
  for (const { facet, value, count } of rows) counts[facet] = { ...counts[facet], [value]: count };
  return counts;
}

/** The organization's metrics counted now, by facet and value, with the migration's conditions. */
async function freshCounts(orgId: string): Promise<Counts> {
  return nest(
    await prisma().$queryRaw<CountRow[]>`
      WITH m AS (SELECT * FROM metric WHERE org_id = ${orgId}::uuid),
        s AS (SELECT s.* FROM metric_trust_state s JOIN metric m ON m.id = s.metric_id WHERE m.org_id = ${orgId}::uuid)
      SELECT facet, value, count(*)::int AS count FROM (
        SELECT 'lifecycle' AS facet, lifecycle_status::text AS value FROM m
        UNION ALL SELECT 'scope', scope::text FROM m
        UNION ALL SELECT 'domain', coalesce(domain_id::text, '') FROM m
        UNION ALL SELECT 'ownerTeam', owner_team FROM m
        UNION ALL SELECT 'trust', verdict FROM s
        UNION ALL SELECT 'attention', 'validation' FROM s
          WHERE reasons && ARRAY['failed_validation', 'stale_validation']::text[]
        UNION ALL SELECT 'attention', 'objections' FROM s WHERE 'open_objections' = ANY(reasons)
        UNION ALL SELECT 'attention', 'do_not_use' FROM s WHERE verdict = 'do_not_use') f
      GROUP BY facet, value`,
  );
}

/** The organization's counts as the writes keep them (a value counted 0 is none). */
async function keptCounts(orgId: string): Promise<Counts> {
  return nest(
    await prisma().$queryRaw<CountRow[]>`
      SELECT facet, value, count::int AS count FROM metric_count WHERE org_id = ${orgId}::uuid AND count <> 0`,
  );
}

const sum = (counts: Record<string, number> = {}) => Object.values(counts).reduce((a, b) => a + b, 0);
const byValue = (values: { value: string | null; count: number }[]) =>
  Object.fromEntries(values.map((v) => [v.value ?? '', v.count]));

/** Kept equals fresh for one organization, and the readers of the kept counts agree; returns the fresh counts. */
async function expectKept(orgId: string): Promise<Counts> {
  const fresh = await freshCounts(orgId);
  expect(await keptCounts(orgId)).toEqual(fresh);
  const [misfiled] = await prisma().$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM metric_trust_state s
    JOIN metric m ON m.id = s.metric_id WHERE m.org_id = ${orgId}::uuid AND s.org_id <> m.org_id`;
  expect(misfiled?.n).toBe(0);

  const total = await prisma().metric.count({ where: { orgId } });
  expect(sum(fresh.lifecycle)).toBe(total);
  const kept = () => metricsVersion(prisma(), orgId).then((v) => ({ cache: createReadCache(), version: String(v) }));
  const facets = await metricFacets(t.database.sql, orgId, await kept());
  expect(facets.total).toBe(total);
  for (const facet of FACETS) expect(byValue(facets[facet]), facet).toEqual(fresh[facet] ?? {});
  const unannounced = total - sum(fresh.trust);
  expect(byValue(facets.trust)).toEqual({ ...fresh.trust, ...(unannounced > 0 ? { '': unannounced } : {}) });
  const attention = await metricsNeedingAttention(t.database.sql, orgId, 100, await kept());
  for (const kind of ATTENTION_KINDS) {
    expect(attention[kind].total, kind).toBe(fresh.attention?.[kind] ?? 0);
    expect(attention[kind].metrics, kind).toHaveLength(fresh.attention?.[kind] ?? 0);
  }
  return fresh;
}

/** Both organizations checked: returns the fresh counts of the one the steps write to. */
async function expectBothKept(): Promise<Counts> {
  await expectKept(other.id);
  return expectKept(org.id);
}

const apply = (metrics: DocMetric[], query?: string) =>
  putRegistry(t, doc(org.slug, metrics), { token: org.token, query }).then(planOf);

async function validate(token: string, key: string, status: 'passed' | 'failed', ranAt = new Date()) {
  const results = [{ metric_key: key, ran_at: ranAt.toISOString(), status, source: 'ci' }];
  const res = await postValidations(t, { results }, { token });
  expect(res.statusCode, res.body).toBe(200);
}

async function asOwner(method: 'POST', url: string, payload: unknown) {
  const headers = { host: HOST, cookie: `session=${org.ownerSession}`, 'content-type': 'application/json' };
  return t.inject({ method, url, headers, payload: JSON.stringify(payload) });
}

const domainId = async (name: string) =>
  (await prisma().domain.findFirstOrThrow({ where: { orgId: org.id, name } })).id;

const first = [
  docMetric('revenue', { lifecycle_status: 'RELEASED', scope: 'enterprise_canonical', domain: 'Finance' }),
  docMetric('orders', { lifecycle_status: 'RELEASED', domain: 'Sales', owner_team: 'Sales Ops' }),
  docMetric('churn'),
  docMetric('nrr', { lifecycle_status: 'APPROVED', scope: 'domain_canonical', domain: 'Finance' }),
  docMetric('arpu', { lifecycle_status: 'CANDIDATE', owner_team: 'Growth' }),
  docMetric('legacy', { lifecycle_status: 'DEPRECATED', domain: 'Sales' }),
];
const changed = [
  docMetric('revenue', { lifecycle_status: 'RELEASED', scope: 'enterprise_canonical' }),
  docMetric('orders', { lifecycle_status: 'DEPRECATED', domain: 'Sales', owner_team: 'Sales Ops' }),
  docMetric('churn', { domain: 'Marketing' }),
  docMetric('nrr', { lifecycle_status: 'APPROVED', scope: 'domain_canonical', domain: 'Sales' }),
  docMetric('arpu', { lifecycle_status: 'CANDIDATE' }),
  docMetric('legacy', { lifecycle_status: 'DEPRECATED', domain: 'Sales' }),
];
const kept3 = changed.filter((m) => ['revenue', 'churn', 'arpu'].includes(m.key));

describe('the kept metric counts equal a fresh count after every write', () => {
  it('a fixture load, and an apply creating metrics of every facet', async () => {
    const loaded = await expectKept(other.id);
    expect(loaded.attention).toEqual({ validation: 1, objections: 1, do_not_use: 1 });
    expect(await keptCounts(org.id)).toEqual({});

    expect((await apply(first)).totals).toEqual(totals({ created: 6 }));
    const fresh = await expectBothKept();
    expect(fresh.lifecycle).toEqual({ RELEASED: 2, DRAFT: 1, APPROVED: 1, CANDIDATE: 1, DEPRECATED: 1 });
    const [finance, sales] = [await domainId('Finance'), await domainId('Sales')];
    expect(fresh.domain).toEqual({ [finance]: 2, [sales]: 2, '': 2 });
    expect(fresh.ownerTeam).toEqual({ 'Finance Analytics': 4, 'Sales Ops': 1, Growth: 1 });
    expect(sum(fresh.trust)).toBe(6);
  });

  it('an apply changing lifecycle, domains and owner teams; then one changing nothing', async () => {
    expect((await apply(changed)).totals).toEqual(totals({ updated: 5, unchanged: 1 }));
    const fresh = await expectBothKept();
    expect(fresh.lifecycle).toMatchObject({ RELEASED: 1, DEPRECATED: 2 });
    expect(fresh.domain).toEqual({ [await domainId('Sales')]: 3, [await domainId('Marketing')]: 1, '': 2 });
    expect(fresh.ownerTeam).toEqual({ 'Finance Analytics': 5, 'Sales Ops': 1 });
    expect(fresh.attention?.do_not_use).toBe(2);

    const before = await keptCounts(org.id);
    expect((await apply(changed)).totals).toEqual(totals({ unchanged: 6 }));
    expect(await keptCounts(org.id)).toEqual(before);
    await expectBothKept();
  });

  it('validation evidence moves verdicts, in each organization', async () => {
    await validate(org.token, 'revenue', 'passed');
    await validate(org.token, 'nrr', 'failed');
    await validate(org.token, 'arpu', 'passed', new Date(Date.now() - 40 * DAY_MS));
    await validate(otherToken, 'revenue', 'passed');
    const fresh = await expectBothKept();
    expect(fresh.trust?.use).toBe(1);
    expect(fresh.attention?.validation).toBe(2);
    expect((await freshCounts(other.id)).attention).toEqual({ objections: 1, do_not_use: 1 });
  });

  it('an objection opened, then resolved', async () => {
    const opened = await asOwner('POST', `/api/metrics/${uuidV5(org.id, 'revenue')}/threads`, {
      intent: 'objection',
      title: 'Refunds',
      body: 'Refunds are counted twice.',
    });
    expect(opened.statusCode, opened.body).toBe(201);
    expect((await expectBothKept()).attention?.objections).toBe(1);
    const resolved = await asOwner('POST', `/api/threads/${opened.json().data.id}/resolve`, {});
    expect(resolved.statusCode, resolved.body).toBe(200);
    expect((await expectBothKept()).attention?.objections).toBeUndefined();
  });

  it('a verdict gone behind the service is counted as none; the sweep announces it and stale evidence', async () => {
    await prisma().metricTrustState.delete({ where: { metricId: uuidV5(org.id, 'churn') } });
    const missing = await expectBothKept();
    expect(sum(missing.trust)).toBe(5);
    const sweep = { intervalMs: 1, retentionDays: 3650, trust: { staleValidationDays: 30 } };
    await sweepOnce(prisma(), sweep, new Date(Date.now() + 35 * DAY_MS));
    const swept = await expectBothKept();
    expect(sum(swept.trust)).toBe(6);
    expect(swept.attention?.validation).toBe(3);
  });

  it('a prune removes metrics with their verdicts; a document listing a removed key restores it', async () => {
    expect((await apply(kept3, 'prune=true&allow_removals=3')).totals).toEqual(totals({ unchanged: 3, removed: 3 }));
    const pruned = await expectBothKept();
    expect(sum(pruned.lifecycle)).toBe(3);
    expect(sum(pruned.trust)).toBe(3);
    expect(pruned.attention?.do_not_use).toBeUndefined();

    const nrr = changed.find((m) => m.key === 'nrr') as DocMetric;
    expect((await apply([...kept3, nrr])).totals).toEqual(totals({ unchanged: 3, restored: 1 }));
    const restored = await expectBothKept();
    expect(sum(restored.trust)).toBe(4);
    expect(restored.lifecycle?.APPROVED).toBe(1);
  });

  it("removing every metric leaves no count; the other organization's are as they were", async () => {
    const others = await keptCounts(other.id);
    await validate(otherToken, 'signups', 'failed');
    expect(await keptCounts(other.id)).not.toEqual(others);
    const before = await keptCounts(other.id);
    expect((await apply([], 'prune=true&allow_removals=4')).totals).toEqual(totals({ removed: 4 }));
    expect(await expectBothKept()).toEqual({});
    expect(await keptCounts(other.id)).toEqual(before);
  });
});
