/**
 * GET /api/v1/metrics: envelope, list items (contract 2.1, 2.2), ordering and
 * pagination (service interface), filters and search (contract 4.1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byNameThenId, legacyStatus, type MetricJson, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectOk, utc } from './expectations.js';

const r = registry();
const org = r.org();
const finance = org.domain('Finance');
const m = {
  netRevenue: org.metric({
    name: 'Net Revenue',
    key: 'net_revenue',
    description: 'Recognized revenue net of refunds.',
    lifecycle_status: 'RELEASED',
    policy_tier: 'tier_1',
    scope: 'enterprise_canonical',
    tags: ['finance'],
    concept_name: 'revenue',
    domain_id: finance,
    owner_team: 'Finance Analytics',
    definition_version: '3.1.0',
    template_name: 'sum',
    created_at: '2026-01-05T10:00:00+02:00',
    updated_at: '2026-02-05T23:30:00-05:00',
  }),
  grossRevenue: org.metric({
    name: 'Gross Revenue',
    key: 'gross_revenue',
    lifecycle_status: 'DRAFT',
    description: 'Revenue before refunds.',
  }),
  forecast: org.metric({
    name: 'Revenue Forecast',
    key: 'revenue_forecast',
    lifecycle_status: 'CANDIDATE',
    policy_tier: 'tier_3',
    scope: 'exploratory',
    metric_type: 'derived',
  }),
  churn: org.metric({
    name: 'Churn Rate',
    key: 'churn_rate',
    lifecycle_status: 'VALIDATED',
    policy_tier: 'tier_1',
    metric_type: 'derived',
  }),
  retention: org.metric({
    name: 'Logo Retention',
    key: 'logo_retention',
    lifecycle_status: 'APPROVED',
    scope: 'enterprise_canonical',
    metric_type: 'derived',
    description: 'One minus the churn rate of logos.',
  }),
  activeUsers: org.metric({
    name: 'Active Users',
    key: 'active_users',
    lifecycle_status: 'DEPRECATED',
    policy_tier: 'tier_3',
    scope: 'exploratory',
    tags: ['hyperloglog'],
  }),
  grossMargin: org.metric({
    name: 'Gross Margin',
    key: 'gm_pct_quarterly',
    policy_tier: 'tier_1',
    scope: 'enterprise_canonical',
  }),
  ltv: org.metric({
    name: 'LTV',
    key: 'ltv',
    concept_name: 'unit_economics',
    lifecycle_status: 'APPROVED',
    metric_type: 'derived',
  }),
  velocity: org.metric({
    name: 'Pipeline Velocity',
    key: 'pipeline_velocity',
    description: 'Computed from the zeppelin ledger.',
  }),
  ordersA: org.metric({ name: 'Orders', key: 'orders_a' }),
  ordersB: org.metric({ name: 'Orders', key: 'orders_b', lifecycle_status: 'DRAFT' }),
  lowercase: org.metric({ name: 'bookings (legacy)', key: 'bookings_legacy' }),
  accented: org.metric({ name: 'Éclair Count', key: 'eclair_count' }),
  upperZ: org.metric({ name: 'Zebra Index', key: 'zebra_index', lifecycle_status: 'VALIDATED' }),
};
const all: MetricJson[] = Object.values(m);
const ordered = byNameThenId(all).map((metric) => metric.id);
const key = org.key();

const other = r.org();
const otherMetrics = [
  other.metric({ name: 'Net Revenue', key: 'net_revenue', description: 'Revenue of another organization.' }),
  other.metric({ name: 'Aardvark Count', key: 'aardvark', lifecycle_status: 'DRAFT' }),
];
other.key();

const empty = r.org();
const emptyKey = empty.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
});
afterAll(() => t.close());

async function list(query = '', secret = key.secret) {
  return expectOk(await t.get(`/api/v1/metrics${query}`, secret));
}

async function ids(query: string): Promise<string[]> {
  const body = await list(query);
  expect(body.pagination.total).toBe(body.data.length);
  return body.data.map((item: { id: string }) => item.id);
}

function expectedIds(predicate: (metric: MetricJson) => boolean): string[] {
  return byNameThenId(all.filter(predicate)).map((metric) => metric.id);
}

describe('envelope and items', () => {
  it('has exactly data, pagination and meta', async () => {
    const body = await list();
    expect(Object.keys(body).sort()).toEqual(['data', 'meta', 'pagination']);
    expect(body.pagination).toEqual({ page: 1, pageSize: 20, total: all.length, totalPages: 1 });
    expect(body.meta).toEqual({ apiVersion: 'v1' });
  });

  it('each item has exactly the 14 fields of section 2.2 with the fixture values, and its trust verdict', async () => {
    const body = await list('?pageSize=100');
    const byId = new Map(all.map((metric) => [metric.id, metric]));
    for (const item of body.data) {
      const metric = byId.get(item.id);
      if (!metric) throw new Error(`unexpected metric ${item.id}`);
      // The verdict the contract serves for the metric (test/rest/list-trust.test.ts tests the verdicts themselves).
      const contract = expectOk(await t.get(`/api/v1/metrics/${metric.id}/contract`, key.secret));
      expect(item).toStrictEqual({
        id: metric.id,
        name: metric.name,
        description: metric.description,
        policy_tier: metric.policy_tier,
        owner_team: metric.owner_team,
        status: legacyStatus(metric.lifecycle_status),
        lifecycle_status: metric.lifecycle_status,
        definition_version: metric.definition_version,
        scope: metric.scope,
        domain_id: metric.domain_id ?? null,
        created_at: utc(metric.created_at),
        updated_at: utc(metric.updated_at),
        concept_name: metric.concept_name,
        template_name: metric.template_name,
        trust: contract.data.trust,
      });
    }
  });

  it('timestamps given with an offset come back in UTC with Z', async () => {
    const body = await list('?pageSize=100');
    const item = body.data.find((i: { id: string }) => i.id === m.netRevenue.id);
    expect(item.created_at).toMatch(/^2026-01-05T08:00:00(\.0+)?Z$/);
    expect(item.updated_at).toMatch(/^2026-02-06T04:30:00(\.0+)?Z$/);
    expect(item.domain_id).toBe(finance);
  });

  it('legacy status is derived for every lifecycle value', async () => {
    const body = await list('?pageSize=100');
    const pairs = new Set(
      body.data.map((i: { lifecycle_status: string; status: string }) => `${i.lifecycle_status}:${i.status}`),
    );
    expect([...pairs].sort()).toEqual([
      'APPROVED:approved',
      'CANDIDATE:review',
      'DEPRECATED:deprecated',
      'DRAFT:draft',
      'RELEASED:approved',
      'VALIDATED:review',
    ]);
  });
});

describe('ordering and pagination', () => {
  it('orders by name in code-point order, then id', async () => {
    const got = await ids('?pageSize=100');
    expect(got).toEqual(ordered);
    const names = byNameThenId(all).map((metric) => metric.name);
    expect(names.indexOf('Zebra Index')).toBeLessThan(names.indexOf('bookings (legacy)'));
    expect(names.indexOf('bookings (legacy)')).toBeLessThan(names.indexOf('Éclair Count'));
    const [first, second] = [m.ordersA.id, m.ordersB.id].sort();
    expect(got.indexOf(first as string) + 1).toBe(got.indexOf(second as string));
  });

  it.each([
    ['100', 100],
    ['101', 100],
    ['5000', 100],
    ['0', 20],
    ['-1', 20],
    ['abc', 20],
    ['1.5', 20],
    ['', 20],
    ['3', 3],
  ])('pageSize=%j is %i', async (value, pageSize) => {
    const body = await list(`?pageSize=${value}`);
    expect(body.pagination).toEqual({
      page: 1,
      pageSize,
      total: all.length,
      totalPages: Math.ceil(all.length / pageSize),
    });
    expect(body.data.map((i: { id: string }) => i.id)).toEqual(ordered.slice(0, pageSize));
  });

  it.each(['0', 'abc', '-2', '1.5', ''])('page=%j is 1', async (value) => {
    const body = await list(`?pageSize=3&page=${value}`);
    expect(body.pagination).toEqual({ page: 1, pageSize: 3, total: all.length, totalPages: Math.ceil(all.length / 3) });
    expect(body.data.map((i: { id: string }) => i.id)).toEqual(ordered.slice(0, 3));
  });

  it('pages of 3 neither repeat nor skip a metric', async () => {
    const walked: string[] = [];
    const totalPages = Math.ceil(all.length / 3);
    for (let page = 1; page <= totalPages; page++) {
      const body = await list(`?pageSize=3&page=${page}`);
      expect(body.pagination).toEqual({ page, pageSize: 3, total: all.length, totalPages });
      walked.push(...body.data.map((i: { id: string }) => i.id));
    }
    expect(walked).toEqual(ordered);
  });

  it('a page past the end is empty with the same total', async () => {
    const body = await list('?pageSize=3&page=99');
    expect(body).toEqual({
      data: [],
      pagination: { page: 99, pageSize: 3, total: all.length, totalPages: Math.ceil(all.length / 3) },
      meta: { apiVersion: 'v1' },
    });
  });

  it('an empty organization has total 0 and totalPages 0', async () => {
    expect(await list('', emptyKey.secret)).toEqual({
      data: [],
      pagination: { page: 1, pageSize: 20, total: 0, totalPages: 0 },
      meta: { apiVersion: 'v1' },
    });
  });
});

describe('filters', () => {
  it.each(['DRAFT', 'VALIDATED', 'CANDIDATE', 'APPROVED', 'RELEASED', 'DEPRECATED'])(
    'lifecycle_status=%s matches exactly',
    async (value) => {
      const expected = expectedIds((metric) => metric.lifecycle_status === value);
      expect(expected.length).toBeGreaterThan(0);
      expect(await ids(`?pageSize=100&lifecycle_status=${value}`)).toEqual(expected);
    },
  );

  it.each(['released', 'SHIPPED'])('lifecycle_status=%s matches nothing', async (value) => {
    const body = await list(`?lifecycle_status=${value}`);
    expect(body.data).toEqual([]);
    expect(body.pagination).toEqual({ page: 1, pageSize: 20, total: 0, totalPages: 0 });
  });

  it.each([
    ['draft', ['DRAFT']],
    ['review', ['VALIDATED', 'CANDIDATE']],
    ['approved', ['APPROVED', 'RELEASED']],
    ['deprecated', ['DEPRECATED']],
  ])('legacy status=%s maps to %j', async (value, lifecycles) => {
    expect(await ids(`?pageSize=100&status=${value}`)).toEqual(
      expectedIds((metric) => lifecycles.includes(metric.lifecycle_status)),
    );
  });

  it('lifecycle_status wins over status', async () => {
    expect(await ids('?pageSize=100&status=draft&lifecycle_status=RELEASED')).toEqual(
      expectedIds((metric) => metric.lifecycle_status === 'RELEASED'),
    );
  });

  it('policy_tier filters; the old tier parameter is ignored', async () => {
    expect(await ids('?pageSize=100&policy_tier=tier_1')).toEqual(
      expectedIds((metric) => metric.policy_tier === 'tier_1'),
    );
    expect(await ids('?pageSize=100&tier=tier_1')).toEqual(ordered);
  });

  it.each(['enterprise_canonical', 'domain_canonical', 'exploratory'])('scope=%s filters', async (scope) => {
    expect(await ids(`?pageSize=100&scope=${scope}`)).toEqual(expectedIds((metric) => metric.scope === scope));
  });

  it('an invalid scope is ignored', async () => {
    expect(await ids('?pageSize=100&scope=galactic')).toEqual(ordered);
  });

  it('type filters by metric type', async () => {
    expect(await ids('?pageSize=100&type=derived')).toEqual(expectedIds((metric) => metric.metric_type === 'derived'));
    expect(await ids('?pageSize=100&type=base')).toEqual(expectedIds((metric) => metric.metric_type === 'base'));
  });

  it('filters combine', async () => {
    const expected = expectedIds(
      (metric) =>
        ['APPROVED', 'RELEASED'].includes(metric.lifecycle_status) &&
        metric.scope === 'enterprise_canonical' &&
        metric.metric_type === 'base',
    );
    expect(expected).toEqual(byNameThenId([m.grossMargin, m.netRevenue]).map((x) => x.id));
    expect(await ids('?pageSize=100&status=approved&scope=enterprise_canonical&type=base')).toEqual(expected);
    expect(await ids('?pageSize=100&policy_tier=tier_1&type=derived')).toEqual([m.churn.id]);
  });
});

describe('search', () => {
  async function search(q: string, extra = '') {
    return list(`?q=${encodeURIComponent(q)}&pageSize=100${extra}`);
  }
  const idsOf = (body: { data: { id: string }[] }) => body.data.map((item) => item.id);

  it('a whitespace-only q is a plain listing', async () => {
    expect(await ids('?pageSize=100&q=%20%20%09')).toEqual(ordered);
  });

  it.each([
    ['name', 'Gross Margin', 'grossMargin'],
    ['key', 'gm_pct_quarterly', 'grossMargin'],
    ['tag', 'hyperloglog', 'activeUsers'],
    ['concept', 'unit economics', 'ltv'],
    ['description', 'zeppelin', 'velocity'],
    ['typo', 'revnue', 'netRevenue'],
  ] as const)('finds by %s (%s)', async (_what, q, name) => {
    const body = await search(q);
    expect(idsOf(body)).toContain(m[name].id);
    expect(body.data[0].id).toBe(m[name].id);
    expect(body.pagination.total).toBe(body.data.length);
  });

  it('an exact name match ranks above a description-only match', async () => {
    const found = idsOf(await search('churn rate'));
    expect(found[0]).toBe(m.churn.id);
    expect(found).toContain(m.retention.id);
  });

  it('finds every revenue metric, and only this organization’s', async () => {
    const found = idsOf(await search('revenue'));
    expect(found).toEqual(expect.arrayContaining([m.netRevenue.id, m.grossRevenue.id, m.forecast.id]));
    for (const metric of otherMetrics) expect(found).not.toContain(metric.id);
  });

  it('combines with a filter', async () => {
    const body = await search('revenue', '&lifecycle_status=DRAFT');
    expect(idsOf(body)).toEqual([m.grossRevenue.id]);
    expect(body.pagination.total).toBe(1);
    const legacy = await search('revenue', '&status=review');
    expect(idsOf(legacy)).toEqual([m.forecast.id]);
  });

  it('items have the list item shape', async () => {
    const body = await search('Net Revenue');
    expect(body.data[0]).toStrictEqual(
      (await list('?pageSize=100')).data.find((i: { id: string }) => i.id === m.netRevenue.id),
    );
  });

  it('paginates search results with the right total', async () => {
    const full = await search('revenue');
    const total = full.pagination.total;
    expect(total).toBe(full.data.length);
    expect(total).toBeGreaterThanOrEqual(3);
    const walked: string[] = [];
    for (let page = 1; page <= total; page++) {
      const body = await list(`?q=revenue&pageSize=1&page=${page}`);
      expect(body.pagination).toEqual({ page, pageSize: 1, total, totalPages: total });
      walked.push(...idsOf(body));
    }
    expect(walked).toEqual(idsOf(full));
    const past = await list(`?q=revenue&pageSize=1&page=${total + 1}`);
    expect(past.data).toEqual([]);
    expect(past.pagination).toEqual({ page: total + 1, pageSize: 1, total, totalPages: total });
  });

  it('no match: empty data and total 0', async () => {
    const body = await search('xylophonequartz');
    expect(body.data).toEqual([]);
    expect(body.pagination).toEqual({ page: 1, pageSize: 100, total: 0, totalPages: 0 });
  });
});

describe('organization boundary', () => {
  it('never lists another organization’s metrics', async () => {
    const found = await ids('?pageSize=100');
    expect(found).toEqual(ordered);
    for (const metric of otherMetrics) expect(found).not.toContain(metric.id);
  });
});
