/**
 * Search corrections, the search documents and kept search pages
 * (src/metric/search-page.ts, src/metric/search-rank.ts,
 * prisma/migrations/20261123000000_search_documents): a
 * word that is none of the organization's words is corrected among them, a
 * page is ranked once per `metrics_version`, and whatever writes the metrics
 * (here plain SQL, as another instance or a fixture load would), the next
 * search sees the change.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { insertMetricBeside } from '../helpers/metric-sql.js';
import { expectOk, statementCount } from './expectations.js';

const r = registry();
const acme = r.org();
const netRevenue = acme.metric({ name: 'Net Revenue', key: 'net_revenue', concept_name: 'revenue' });
const grossRevenue = acme.metric({ name: 'Gross Revenue', key: 'gross_revenue', concept_name: 'revenue' });
const churn = acme.metric({ name: 'Churn Rate', key: 'churn_rate', concept_name: 'retention' });
const untagged = acme.metric({ name: 'Fulfillment Latency', key: 'fulfillment_latency', tags: [] });
// Descriptions are searched as written but give no words to correct to.
const misspelt = acme.metric({ name: 'Bookings', key: 'bookings', description: 'Counted from revnue events.' });
const key = acme.key();
// Another organization's words correct nothing here, and its metrics are never found.
const other = r.org();
const otherTypo = other.metric({ name: 'Revnue Typo', key: 'revnue_typo', concept_name: 'revenue' });
other.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), serverTiming: true });
});
afterAll(() => t.close());

async function search(q: string): Promise<{ ids: string[]; total: number }> {
  const body = expectOk(await t.get(`/api/v1/metrics?pageSize=100&q=${encodeURIComponent(q)}`, key.secret));
  return { ids: body.data.map((item: { id: string }) => item.id), total: body.pagination.total };
}

describe('search corrections', () => {
  it('corrects a typo to the organization’s words, whatever other organizations spell', async () => {
    const found = await search('revnue');
    expect(found.ids).toHaveLength(3);
    expect(found.ids).toEqual(expect.arrayContaining([misspelt.id, netRevenue.id, grossRevenue.id]));
    expect(found.ids).not.toContain(otherTypo.id);
  });

  it('completes a partial word, and keeps the known words of the query as they are', async () => {
    expect(await search('reven')).toEqual({ ids: expect.arrayContaining([netRevenue.id, grossRevenue.id]), total: 2 });
    expect(await search('gross reven')).toEqual({ ids: [grossRevenue.id], total: 1 });
    expect(await search('churn rat')).toEqual({ ids: [churn.id], total: 1 });
  });

  it('ranks a name matched through a correction above the misspelling matched in a description', async () => {
    // "revnue" is in a description as written, an accident of spelling; the revenue metrics' names match its
    // correction, the reading meant.
    const found = await search('revnue');
    expect(found.ids.slice(0, 2)).toEqual(expect.arrayContaining([netRevenue.id, grossRevenue.id]));
    expect(found.ids[2]).toBe(misspelt.id);
  });

  it('takes a query in websearch syntax as written', async () => {
    expect((await search('revenue -gross')).ids).toEqual([netRevenue.id]);
    expect((await search('"net revenue"')).ids).toEqual([netRevenue.id]);
    // A negated query is not corrected: the typo finds what it matches as written, not what the user excluded.
    expect(await search('revnue -gross')).toEqual({ ids: [misspelt.id], total: 1 });
  });

  it('reads punctuation inside a word as a space, as in the metrics’ text', async () => {
    for (const q of ['net-revenue', 'net/revenue', 'Net.Revenue', 'NET_REVENUE']) {
      expect((await search(q)).ids, q).toEqual([netRevenue.id]);
    }
  });

  it('finds a metric without tags', async () => {
    expect((await search('latency')).ids).toEqual([untagged.id]);
  });

  it('nothing similar: empty', async () => {
    expect(await search('xylophonequartz')).toEqual({ ids: [], total: 0 });
  });
});

describe('kept search pages', () => {
  it('are ranked once per version: again, the page is read by its ids and a page past the end needs no search', async () => {
    const path = '/api/v1/metrics?pageSize=1&q=revenue';
    const first = await t.get(path, key.secret);
    const again = await t.get(path, key.secret);
    expect(expectOk(again)).toEqual(expectOk(first));
    expect([statementCount(first), statementCount(again)]).toEqual([2, 2]);

    // Ranked, an empty page past the end counts the matches; kept, it needs only the caller's key.
    const past = await t.get(`${path}&page=9`, key.secret);
    const pastAgain = await t.get(`${path}&page=9`, key.secret);
    for (const res of [past, pastAgain]) {
      expect(expectOk(res)).toMatchObject({ data: [], pagination: { page: 9, total: 2, totalPages: 2 } });
    }
    expect([statementCount(past), statementCount(pastAgain)]).toEqual([3, 1]);
  });

  it('are kept by the query as searched: case and surrounding spaces do not matter', async () => {
    const past = (q: string) => t.get(`/api/v1/metrics?pageSize=1&page=9&q=${encodeURIComponent(q)}`, key.secret);
    expect(statementCount(await past('gross revenue'))).toBe(3);
    expect(statementCount(await past('  Gross REVENUE '))).toBe(1);
  });

  it('are kept per filter and page', async () => {
    const all = await search('revenue');
    const res = await t.get('/api/v1/metrics?q=revenue&lifecycle_status=NO_SUCH_STATUS', key.secret);
    expect(expectOk(res).pagination.total).toBe(0);
    const pages = await Promise.all(
      [1, 2].map(async (page) => {
        const body = expectOk(await t.get(`/api/v1/metrics?q=revenue&pageSize=1&page=${page}`, key.secret));
        return body.data.map((item: { id: string }) => item.id);
      }),
    );
    expect(pages.flat()).toEqual(all.ids);
  });
});

describe('search documents follow the metrics', () => {
  it('on insert, rename and delete', async () => {
    // Kept empty before the insert, found after it.
    expect(await search('zorblax')).toEqual({ ids: [], total: 0 });
    expect(await search('parcels')).toEqual({ ids: [], total: 0 });
    const id = await insertMetricBeside(t.database.prisma, churn.id, {
      key: 'zorblax_throughput',
      name: 'Zorblax Throughput',
      description: 'Parcels per hour.',
      conceptName: 'operations',
    });
    expect((await search('zorblax')).ids).toEqual([id]);
    expect((await search('zorblx')).ids).toEqual([id]);
    expect((await search('parcels')).ids).toEqual([id]);

    await t.database.prisma.$executeRaw`
      UPDATE metric SET name = 'Quintessa Throughput', key = 'quintessa_throughput', description = 'Crates per hour.'
      WHERE id = ${id}::uuid`;
    expect((await search('quintesa')).ids).toEqual([id]);
    expect(await search('zorblax')).toEqual({ ids: [], total: 0 });
    expect(await search('parcels')).toEqual({ ids: [], total: 0 });

    await t.database.prisma.$executeRaw`DELETE FROM metric WHERE id = ${id}::uuid`;
    expect(await search('quintessa')).toEqual({ ids: [], total: 0 });
    expect(await search('throughput')).toEqual({ ids: [], total: 0 });
  });
});
