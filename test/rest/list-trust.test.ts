/**
 * Verdicts on the list, through a real listening socket: REST list items
 * carry `trust` as the contract computes it; `trust=` (REST) and
 * `filter: { trust }` (GraphQL) keep the metrics whose verdict as last
 * evaluated is the one asked for; a write that moves a verdict moves the
 * filtered totals and the list's ETag at once, and a verdict that time alone
 * moves shows in the filter (and the tag) after the next sweep; a page with
 * verdicts costs at most 2 statements more than one without, at any size.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { sweepOnce } from '../../src/changes/sweep.js';
import { type MetricJson, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { statementCount } from './expectations.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** Validation evidence is stale after this many days in this app (TRUST_STALE_VALIDATION_DAYS). */
const STALE_DAYS = 1;
/** How long after this file loads the `aging` metric's evidence goes stale. */
const AGING_MS = 12_000;
const loadedAt = Date.now();
const hoursAgo = (hours: number) => new Date(loadedAt - hours * 60 * 60 * 1000).toISOString();

const r = registry();
const acme = r.org();
const validated = (metric: MetricJson, status: 'passed' | 'failed' = 'passed') => {
  acme.validation(metric, { ran_at: hoursAgo(2), status });
  return metric;
};
const m = {
  revenue: validated(acme.metric({ name: 'Revenue', key: 'revenue', lifecycle_status: 'RELEASED' })),
  orders: validated(acme.metric({ name: 'Orders', key: 'orders', lifecycle_status: 'APPROVED' })),
  churn: acme.metric({ name: 'Churn', key: 'churn', lifecycle_status: 'DRAFT' }),
  margin: validated(acme.metric({ name: 'Margin', key: 'margin', lifecycle_status: 'RELEASED' }), 'failed'),
  legacy: acme.metric({ name: 'Legacy Revenue', key: 'legacy_revenue', lifecycle_status: 'DEPRECATED' }),
  oldRevenue: validated(acme.metric({ name: 'Old Revenue', key: 'old_revenue', lifecycle_status: 'RELEASED' })),
};
acme.relate(m.revenue, 'supersedes', m.oldRevenue);
// Enough metrics for full pages of 25 and 100, of every verdict.
const fillers = Array.from({ length: 150 }, (_, i) => {
  const metric = acme.metric({
    name: `Filler ${String(i).padStart(3, '0')}`,
    lifecycle_status: i % 15 === 0 ? 'DEPRECATED' : i % 3 === 0 ? 'CANDIDATE' : 'RELEASED',
  });
  if (i % 3 !== 0) validated(metric);
  return metric;
});
const contractKey = acme.key();
const definitionOnly = acme.key({ scopes: ['definition:read'] });
const other = r.org();
const elsewhere = other.metric({ name: 'Elsewhere', lifecycle_status: 'DEPRECATED' });
other.key();
// An organization of its own (so that no other test sees its verdict move) with evidence that goes stale a few
// seconds into the run: a verdict that time alone moves.
const later = r.org();
const aging = later.metric({ name: 'Aging', key: 'aging', lifecycle_status: 'RELEASED' });
later.validation(aging, { ran_at: new Date(loadedAt - STALE_DAYS * DAY_MS + AGING_MS).toISOString() });
const fresh = later.metric({ name: 'Fresh', key: 'fresh', lifecycle_status: 'RELEASED' });
later.validation(fresh, { ran_at: hoursAgo(2) });
const laterKey = later.key();

const VERDICTS = ['use', 'use_with_caution', 'do_not_use'] as const;

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), serverTiming: true, staleValidationDays: STALE_DAYS });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(() => t?.close());

interface Answer {
  status: number;
  etag: string | null;
  statements: number | null;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies of several shapes
  body: any;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  const timing = res.headers.get('server-timing');
  return {
    status: res.status,
    etag: res.headers.get('etag'),
    statements: timing ? statementCount({ headers: { 'server-timing': timing } }) : null,
    body: text ? JSON.parse(text) : null,
  };
}

function get(path: string, secret = contractKey.secret, headers: Record<string, string> = {}): Promise<Answer> {
  return fetch(new URL(path, base), { headers: { authorization: `Bearer ${secret}`, ...headers } }).then(answer);
}

function graphql(query: string, variables: Record<string, unknown> = {}, secret = contractKey.secret) {
  return fetch(new URL('/graphql', base), {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  }).then(answer);
}

interface Item {
  id: string;
  lifecycle_status: string;
  trust?: { verdict: string; reasons: string[]; preferred_metric_id: string | null };
}

/** Every item of a list query, page after page, and the total the first page gave. */
async function allItems(query = '', secret = contractKey.secret): Promise<{ items: Item[]; total: number }> {
  const items: Item[] = [];
  let total = 0;
  for (let page = 1; ; page++) {
    const res = await get(`/api/v1/metrics?pageSize=100&page=${page}${query}`, secret);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (page === 1) total = res.body.pagination.total;
    items.push(...res.body.data);
    if (page >= res.body.pagination.totalPages) break;
  }
  return { items, total };
}

const idsOf = (items: { id: string }[]) => items.map((item) => item.id);
const contractTrust = async (id: string, secret = contractKey.secret) =>
  (await get(`/api/v1/metrics/${id}/contract`, secret)).body.data.trust;

describe('list items carry trust', () => {
  it('each item has the verdict the contract serves, by the documented rules', async () => {
    const { items, total } = await allItems();
    expect(total).toBe(Object.keys(m).length + fillers.length);
    for (const item of items) expect(item.trust, item.id).toEqual(await contractTrust(item.id));
    const byId = new Map(items.map((item) => [item.id, item.trust]));
    // toMatchObject: the verdict object may carry more fields (it is the contract's, additive).
    expect(byId.get(m.revenue.id)).toMatchObject({ verdict: 'use', reasons: [], preferred_metric_id: null });
    expect(byId.get(m.churn.id)).toMatchObject({
      verdict: 'use_with_caution',
      reasons: ['pre_release', 'never_validated'],
      preferred_metric_id: null,
    });
    expect(byId.get(m.margin.id)).toMatchObject({ verdict: 'use_with_caution', reasons: ['failed_validation'] });
    expect(byId.get(m.legacy.id)).toMatchObject({ verdict: 'do_not_use', reasons: ['deprecated'] });
    expect(byId.get(m.oldRevenue.id)).toMatchObject({
      verdict: 'do_not_use',
      reasons: ['superseded'],
      preferred_metric_id: m.revenue.id,
    });
  });

  it('a key of definition:read alone lists without verdicts, and may not filter by them (403)', async () => {
    const res = await get('/api/v1/metrics?pageSize=5', definitionOnly.secret);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(5);
    for (const item of res.body.data) expect(item).not.toHaveProperty('trust');
    expect(await get('/api/v1/metrics?trust=use', definitionOnly.secret)).toMatchObject({
      status: 403,
      body: { error: 'Insufficient scope' },
    });
  });
});

describe('trust= on the REST list', () => {
  it('keeps exactly the metrics of each verdict, in list order, with their total', async () => {
    const { items: everything } = await allItems();
    const seen = new Set<string>();
    for (const verdict of VERDICTS) {
      const { items, total } = await allItems(`&trust=${verdict}`);
      const expected = everything.filter((item) => item.trust?.verdict === verdict);
      expect(expected.length, verdict).toBeGreaterThan(1);
      expect(idsOf(items), verdict).toEqual(idsOf(expected));
      expect(total, verdict).toBe(expected.length);
      for (const id of idsOf(items)) seen.add(id);
    }
    // Every metric of the organization has one verdict, and no other organization's metric shows.
    expect(seen.size).toBe(everything.length);
    expect(seen.has(elsewhere.id)).toBe(false);
  });

  it('combines with the other filters and with search', async () => {
    const released = await allItems('&lifecycle_status=RELEASED');
    const { items } = await allItems('&lifecycle_status=RELEASED&trust=use_with_caution');
    expect(idsOf(items)).toEqual(idsOf(released.items.filter((item) => item.trust?.verdict === 'use_with_caution')));
    expect(idsOf(items)).toContain(m.margin.id);

    const search = await get('/api/v1/metrics?q=revenue&trust=do_not_use');
    expect(search.status).toBe(200);
    expect(new Set(idsOf(search.body.data))).toEqual(new Set([m.legacy.id, m.oldRevenue.id]));
    expect(search.body.pagination.total).toBe(2);
    const unfiltered = await get('/api/v1/metrics?q=revenue');
    expect(idsOf(unfiltered.body.data)).toContain(m.revenue.id);
  });

  const ONE_OF = 'trust must be one of use, use_with_caution, do_not_use';
  it.each([
    ['another case', 'USE', ONE_OF],
    ['several verdicts', 'use,do_not_use', ONE_OF],
    ['empty', '', ONE_OF],
    ['a space before it', ' use', ONE_OF],
    ['10,000 characters', 'x'.repeat(10_000), 'trust must be at most 64 characters'],
    [
      'a NUL',
      'use\u0000',
      'trust must not contain control characters (other than tab and line breaks) or unpaired surrogates',
    ],
  ])('%s: 400 naming the parameter', async (_label, value, error) => {
    const res = await get(`/api/v1/metrics?trust=${encodeURIComponent(value)}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error } });
    // The same with a search, and before the scope is looked at.
    const searched = await get(`/api/v1/metrics?q=revenue&trust=${encodeURIComponent(value)}`, definitionOnly.secret);
    expect({ status: searched.status, body: searched.body }).toEqual({ status: 400, body: { error } });
  });

  it('a repeated parameter counts with its first value, as for the other filters', async () => {
    const res = await get('/api/v1/metrics?trust=do_not_use&trust=use&pageSize=100');
    expect(res.status).toBe(200);
    for (const item of res.body.data as Item[]) expect(item.trust?.verdict).toBe('do_not_use');
  });
});

describe('filter.trust on GraphQL', () => {
  const PAGE = `query($filter: MetricFilter) {
    metrics(pageSize: 100, filter: $filter) { pagination { total } items { id trust { verdict } } }
  }`;

  it('metrics, a search and metricsConnection keep the verdict asked for', async () => {
    const rest = await allItems('&trust=do_not_use');
    const res = await graphql(PAGE, { filter: { trust: 'do_not_use' } });
    expect(res.body.errors).toBeUndefined();
    expect(idsOf(res.body.data.metrics.items)).toEqual(idsOf(rest.items));
    expect(res.body.data.metrics.pagination.total).toBe(rest.total);

    const literal = await graphql(
      '{ metrics(search: "revenue", filter: { trust: do_not_use, lifecycleStatus: "DEPRECATED" }) { items { id } } }',
    );
    expect(idsOf(literal.body.data.metrics.items)).toEqual([m.legacy.id]);

    const connection = await graphql(
      '{ metricsConnection(first: 100, filter: { trust: do_not_use }) { edges { node { id } } } }',
    );
    expect(connection.body.data.metricsConnection.edges.map((edge: { node: { id: string } }) => edge.node.id)).toEqual(
      idsOf(rest.items),
    );
  });

  it('a value that is no verdict is an error naming it; a key of definition:read alone is refused', async () => {
    const literal = await graphql('{ metrics(filter: { trust: maybe }) { items { id } } }');
    expect(literal.body.data).toBeUndefined();
    expect(literal.body.errors[0].message).toMatch(/maybe.*TrustVerdict|TrustVerdict.*maybe/);

    const variable = await graphql(PAGE, { filter: { trust: 'use,do_not_use' } });
    expect(variable.body.data).toBeUndefined();
    expect(variable.body.errors[0].message).toMatch(/TrustVerdict/);

    const refused = await graphql(
      PAGE.replace(' trust { verdict }', ''),
      { filter: { trust: 'use' } },
      definitionOnly.secret,
    );
    expect(refused.body.data).toBeNull();
    expect(refused.body.errors).toMatchObject([{ message: 'Insufficient scope', extensions: { code: 'FORBIDDEN' } }]);
  });
});

describe('a verdict that moves', () => {
  let token: string;
  beforeAll(async () => {
    token = (await createServiceToken(t.database.prisma, { org: acme.id, name: 'CI', scopes: ['validations:write'] }))
      .secret;
  });

  const validate = async (metric: MetricJson, status: 'passed' | 'failed') => {
    const res = await fetch(new URL('/api/validations', base), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ results: [{ metric_key: metric.key, ran_at: new Date().toISOString(), status }] }),
    });
    expect(res.status, await res.text()).toBe(200);
  };

  it('through a write: the filtered totals and the ETag follow at once, 304 only while nothing moved', async () => {
    // Revenue is on the second page of 100 of `use` (after the fillers and Orders).
    const page = '/api/v1/metrics?trust=use&pageSize=100&page=2';
    const before = { use: await allItems('&trust=use'), caution: await allItems('&trust=use_with_caution') };
    expect(idsOf(before.use.items)).toContain(m.revenue.id);
    const first = await get(page);
    expect(idsOf(first.body.data)).toContain(m.revenue.id);
    const tag = first.etag as string;
    expect(tag).toBeTruthy();
    expect((await get(page, contractKey.secret, { 'if-none-match': tag })).status).toBe(304);

    await validate(m.revenue, 'failed');
    const after = await get(page, contractKey.secret, { 'if-none-match': tag });
    expect(after.status).toBe(200);
    expect(after.etag).not.toBe(tag);
    expect(after.body.pagination.total).toBe(before.use.total - 1);
    expect(idsOf((await allItems('&trust=use')).items)).toEqual(
      idsOf(before.use.items).filter((id) => id !== m.revenue.id),
    );
    const caution = await allItems('&trust=use_with_caution');
    expect(caution.total).toBe(before.caution.total + 1);
    expect(caution.items.find((item) => item.id === m.revenue.id)?.trust).toMatchObject({
      verdict: 'use_with_caution',
      reasons: ['failed_validation'],
    });

    await validate(m.revenue, 'passed');
    const back = await get(page, contractKey.secret, { 'if-none-match': after.etag as string });
    expect(back.status).toBe(200);
    expect(back.body.pagination.total).toBe(before.use.total);
    expect(idsOf((await allItems('&trust=use')).items)).toEqual(idsOf(before.use.items));
  });

  it('through time: the item shows it at once, the filter and the ETag after the next sweep', async () => {
    const key = laterKey.secret;
    const list = (query: string, headers: Record<string, string> = {}) =>
      get(`/api/v1/metrics?pageSize=100${query}`, key, headers);
    const usable = await list('&trust=use');
    expect(idsOf(usable.body.data), 'the evidence was still fresh when it was evaluated').toEqual([aging.id, fresh.id]);
    const tag = usable.etag as string;

    // Wait for the evidence to go stale (the verdict computed now moves; nothing was written).
    const deadline = loadedAt + AGING_MS + 10_000;
    while ((await contractTrust(aging.id, key)).verdict === 'use' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(await contractTrust(aging.id, key)).toMatchObject({
      verdict: 'use_with_caution',
      reasons: ['stale_validation'],
    });

    // The filter reads the verdict as last evaluated: still `use`, and its page is still the one the tag names.
    const stale = await list('&trust=use');
    expect(idsOf(stale.body.data)).toEqual([aging.id, fresh.id]);
    expect(stale.body.data[0].trust).toMatchObject({ verdict: 'use_with_caution', reasons: ['stale_validation'] });
    expect((await list('&trust=use', { 'if-none-match': tag })).status).toBe(304);
    expect(idsOf((await list('&trust=use_with_caution')).body.data)).toEqual([]);

    // The sweep evaluates it: the filter and the tag follow.
    const swept = await sweepOnce(t.database.prisma, {
      intervalMs: 1,
      retentionDays: 30,
      trust: { staleValidationDays: STALE_DAYS },
    });
    expect(swept.changed).toContain(later.id);
    const moved = await list('&trust=use', { 'if-none-match': tag });
    expect(moved.status).toBe(200);
    expect(idsOf(moved.body.data)).toEqual([fresh.id]);
    expect(idsOf((await list('&trust=use_with_caution')).body.data)).toEqual([aging.id]);
  }, 40_000);
});

describe('statements of a page with verdicts', () => {
  const graphqlPage = (size: number, trust: boolean) =>
    graphql(
      `{ metrics(pageSize: ${size}) { items { id name${trust ? ' trust { verdict reasons preferredMetricId }' : ''} } } }`,
    );

  it.each([25, 100])(
    'a page of %i: at most 2 statements more with trust than without, on REST and GraphQL',
    async (size) => {
      const withTrust = await get(`/api/v1/metrics?pageSize=${size}`);
      const without = await get(`/api/v1/metrics?pageSize=${size}`, definitionOnly.secret);
      expect(withTrust.body.data).toHaveLength(size);
      expect(withTrust.body.data.every((item: Item) => item.trust)).toBe(true);
      expect(without.body.data.some((item: Item) => item.trust)).toBe(false);
      expect(withTrust.statements).toBeGreaterThan(0);
      expect(withTrust.statements).toBeLessThanOrEqual((without.statements as number) + 2);

      const gqlWith = await graphqlPage(size, true);
      const gqlWithout = await graphqlPage(size, false);
      expect(gqlWith.body.data.metrics.items).toHaveLength(size);
      expect(gqlWith.statements).toBeLessThanOrEqual((gqlWithout.statements as number) + 2);

      const filtered = await get(`/api/v1/metrics?pageSize=${size}&trust=use_with_caution`);
      expect(filtered.statements).toBeLessThanOrEqual((without.statements as number) + 2);
    },
  );

  it('a search page too, ranked and kept (read again by its ids)', async () => {
    const search = (q: string, trust: boolean) =>
      graphql(
        `{ metrics(pageSize: 100, search: "${q}") { items { id name${trust ? ' trust { verdict reasons }' : ''} } } }`,
      );
    // Two queries, each ranked on its first request and kept for the next one.
    const without = [await search('filler 00', false), await search('filler 00', false)];
    const withTrust = [await search('filler 01', true), await search('filler 01', true)];
    expect(withTrust[0]?.body.data.metrics.items.length).toBeGreaterThan(25);
    for (const [i, answer] of withTrust.entries()) {
      expect(answer.body.data.metrics.items.every((item: { trust?: unknown }) => item.trust)).toBe(true);
      expect(answer.statements).toBeLessThanOrEqual((without[i]?.statements as number) + 2);
    }
  });

  it('whatever the page size: a page of 100 with trust costs what a page of 25 does', async () => {
    const small = await get('/api/v1/metrics?pageSize=25&page=2');
    const large = await get('/api/v1/metrics?pageSize=100&page=2');
    expect(small.statements).toBe(large.statements);
    const gqlSmall = await graphqlPage(25, true);
    const gqlLarge = await graphqlPage(100, true);
    expect(gqlSmall.statements).toBe(gqlLarge.statements);
  });
});
