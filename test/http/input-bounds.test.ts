/**
 * Bounded input (issue: one key holder could exhaust the heap with distinct
 * 900 KB search strings): REST `q` and filters, GraphQL `search` and filter
 * values past their bounds are refused with a message, never cut short, and
 * the read caches stay within their byte bounds whatever is searched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFixture } from '../../src/fixtures/load.js';
import { MAX_FILTER_CHARACTERS, MAX_SEARCH_CHARACTERS, MAX_SEARCH_WORDS } from '../../src/metric/input.js';
import { createReadCache, keptEntryBytes, type ReadCache } from '../../src/metric/read-cache.js';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/database.js';

const r = registry();
const acme = r.org();
const key = acme.key();
acme.metric({ name: 'Revenue' });
acme.metric({ name: 'Net Revenue Growth' });
acme.metric({ name: 'Churn' });

let t: TestApp;
const reads = createReadCache();
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), readCache: reads });
});
afterAll(() => t.close());

const list = (params: Record<string, string>) => t.get(`/api/v1/metrics?${new URLSearchParams(params)}`, key.secret);

function graphql(query: string, variables: Record<string, unknown> = {}) {
  return t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
    payload: { query, variables },
  });
}

const SEARCH =
  'query($s: String, $f: MetricFilter) { metrics(search: $s, filter: $f, pageSize: 1) { items { name } } }';
const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

describe('REST: q and filters are bounded', () => {
  it(`q of ${MAX_SEARCH_CHARACTERS} characters and ${MAX_SEARCH_WORDS} words is searched`, async () => {
    expect((await list({ q: 'r'.repeat(MAX_SEARCH_CHARACTERS) })).statusCode).toBe(200);
    expect((await list({ q: words(MAX_SEARCH_WORDS) })).statusCode).toBe(200);
    // Surrounding whitespace does not count; characters are code points, not UTF-16 units.
    expect((await list({ q: `  ${'é'.repeat(MAX_SEARCH_CHARACTERS)}  ` })).statusCode).toBe(200);
    expect((await list({ q: '😀'.repeat(MAX_SEARCH_CHARACTERS) })).statusCode).toBe(200);
  });

  it('a longer q is 400 with a message saying the bound', async () => {
    const res = await list({ q: 'r'.repeat(MAX_SEARCH_CHARACTERS + 1) });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: `q must be at most ${MAX_SEARCH_CHARACTERS} characters` });
    expect((await list({ q: '😀'.repeat(MAX_SEARCH_CHARACTERS + 1) })).statusCode).toBe(400);
  });

  it('a q of more words is 400', async () => {
    const res = await list({ q: words(MAX_SEARCH_WORDS + 1) });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: `q must be at most ${MAX_SEARCH_WORDS} words` });
    // Punctuation separates words, as in the search itself.
    expect((await list({ q: Array.from({ length: 17 }, () => 'a').join('-') })).statusCode).toBe(400);
  });

  it.each(['lifecycle_status', 'status', 'policy_tier', 'scope', 'type'])(
    '%s: a value over the bound is 400, one at it is accepted',
    async (name) => {
      expect((await list({ [name]: 'x'.repeat(MAX_FILTER_CHARACTERS) })).statusCode).toBe(200);
      const res = await list({ [name]: 'x'.repeat(MAX_FILTER_CHARACTERS + 1) });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: `${name} must be at most ${MAX_FILTER_CHARACTERS} characters` });
    },
  );

  it('authentication still comes first', async () => {
    const res = await t.get(`/api/v1/metrics?q=${'r'.repeat(1000)}`);
    expect(res.statusCode).toBe(401);
  });

  it('whitespace-only q is still ignored, however long', async () => {
    const res = await list({ q: ' '.repeat(2000) });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toHaveLength(3);
  });
});

describe('GraphQL: search and filter values are bounded', () => {
  it('a search over the bound is a GraphQL error and no data', async () => {
    const res = await graphql(SEARCH, { s: 'r'.repeat(MAX_SEARCH_CHARACTERS + 1) });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.data).toBeNull();
    expect(body.errors[0].message).toBe(`search must be at most ${MAX_SEARCH_CHARACTERS} characters`);
    expect(body.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
    const many = (await graphql(SEARCH, { s: words(MAX_SEARCH_WORDS + 1) })).json();
    expect(many.errors[0].message).toBe(`search must be at most ${MAX_SEARCH_WORDS} words`);
  });

  it('at the bound it is searched', async () => {
    const body = (await graphql(SEARCH, { s: `revenue ${words(MAX_SEARCH_WORDS - 1)}` })).json();
    expect(body.errors).toBeUndefined();
  });

  it('filter values over the bound are errors on metrics and metricsConnection', async () => {
    const long = 'x'.repeat(MAX_FILTER_CHARACTERS + 1);
    const body = (await graphql(SEARCH, { f: { policyTier: long } })).json();
    expect(body.data).toBeNull();
    expect(body.errors[0].message).toBe(`filter.policyTier must be at most ${MAX_FILTER_CHARACTERS} characters`);
    const connection = (
      await graphql('query($f: MetricFilter) { metricsConnection(filter: $f) { edges { node { name } } } }', {
        f: { lifecycleStatus: long },
      })
    ).json();
    expect(connection.errors[0].message).toBe(
      `filter.lifecycleStatus must be at most ${MAX_FILTER_CHARACTERS} characters`,
    );
  });

  it('finding 1 at a small scale: distinct 900 KB searches are refused and never kept', async () => {
    const before = { totals: reads.totals.size, searches: reads.searches.size };
    for (let i = 0; i < 10; i++) {
      const body = (await graphql(SEARCH, { s: `${i} ${'r'.repeat(900 * 1024)}` })).json();
      expect(body.data).toBeNull();
      expect(body.errors[0].message).toBe(`search must be at most ${MAX_SEARCH_CHARACTERS} characters`);
    }
    expect(reads.searches.size).toBe(before.searches);
    expect(reads.totals.size).toBe(before.totals);
  });
});

/** The bytes a cache's entries are taken to hold, counted from its entries (not its own tally). */
function heldBytes(cache: ReadCache) {
  let totals = 0;
  for (const [k, v] of cache.totals.entries()) totals += keptEntryBytes(k, v);
  let searches = 0;
  for (const [k, v] of cache.searches.entries()) searches += keptEntryBytes(k, v);
  return { totals, searches };
}

describe('read caches are bounded in bytes and keyed by the normalized query', () => {
  it('many distinct searches and filters at the bounds keep the caches under their byte bounds', async () => {
    const bounds = { totalsBytes: 32 * 1024, searchesBytes: 64 * 1024 };
    const database = await createTestDatabase({ poolSize: 4 });
    await loadFixture(database.prisma, r.build());
    const reads = createReadCache(bounds);
    const app = await buildTestInstance(database, { readCache: reads });
    try {
      const get = (params: Record<string, string>) =>
        app.inject({
          method: 'GET',
          url: `/api/v1/metrics?${new URLSearchParams(params)}`,
          headers: { authorization: `Bearer ${key.secret}` },
        });
      // Each entry weighs over 500 bytes (its key), so 200 of each overflow both bounds.
      for (let i = 0; i < 200; i++) {
        const q = `revenue ${String(i).padStart(4, '0')}${'z'.repeat(MAX_SEARCH_CHARACTERS - 13)}`;
        expect((await get({ q })).statusCode).toBe(200);
        expect(
          (
            await get({
              policy_tier: `${i}`.padEnd(MAX_FILTER_CHARACTERS, 'p'),
              type: 't'.repeat(MAX_FILTER_CHARACTERS),
            })
          ).statusCode,
        ).toBe(200);
      }
      const held = heldBytes(reads);
      expect(held.totals).toBeGreaterThan(bounds.totalsBytes / 2);
      expect(held.totals).toBeLessThanOrEqual(bounds.totalsBytes);
      expect(held.searches).toBeGreaterThan(bounds.searchesBytes / 2);
      expect(held.searches).toBeLessThanOrEqual(bounds.searchesBytes);
      expect(reads.totals.calculatedSize).toBe(held.totals);
      expect(reads.searches.calculatedSize).toBe(held.searches);

      // Spellings that differ in case and whitespace share one kept page.
      reads.searches.clear();
      for (const q of ['net revenue', '  Net   Revenue ', 'NET\trevenue']) {
        const res = await get({ q });
        expect(res.json().data.map((m: { name: string }) => m.name)).toEqual(['Net Revenue Growth']);
      }
      expect(reads.searches.size).toBe(1);
    } finally {
      await app.close();
      await database.drop();
    }
  });
});
