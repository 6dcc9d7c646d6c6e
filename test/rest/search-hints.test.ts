/**
 * Search that says what it did (src/metric/search-rank.ts, src/metric/search-page.ts,
 * prisma/migrations/20261127000000_search_hints): transposed letters are corrected; a name that
 * holds the query's words in any order, or whose words begin with them, ranks above metrics that
 * hold them only in their descriptions (and the variants that come with those); the list's `meta`
 * says which words were corrected and, when nothing is found, suggests close names or keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectOk, statementCount } from './expectations.js';

const r = registry();
const acme = r.org();
const churn = acme.metric({ name: 'Churn Rate', key: 'churn_rate' });
// Validated or draft: only their tier puts them above the released metrics below.
const aht = acme.metric({
  name: 'Average Handle Time',
  key: 'aht_minutes',
  lifecycle_status: 'VALIDATED',
  description: 'Minutes an agent spends on a contact, talk and wrap-up included.',
});
const ahtEu = acme.metric({ name: 'Average Handle Time (EU)', key: 'aht_minutes_eu', lifecycle_status: 'VALIDATED' });
acme.relate(ahtEu, 'variant_of', aht);
const target = acme.metric({ name: 'Handle Time Target', key: 'handle_time_target', lifecycle_status: 'DRAFT' });
// Released, with the words in their descriptions only; the variant comes with its parent.
const occupancy = acme.metric({
  name: 'Agent Occupancy',
  key: 'agent_occupancy',
  description: 'Share of logged-in time that agents handle contacts.',
});
const occupancyEu = acme.metric({
  name: 'Agent Occupancy (EU)',
  key: 'agent_occupancy_eu',
  lifecycle_status: 'APPROVED',
  description: 'Agent Occupancy of the EU teams: time agents handle contacts.',
});
acme.relate(occupancyEu, 'variant_of', occupancy);
// Released; its name words are close to "handl" and "tim" without all beginning with them.
const handoff = acme.metric({ name: 'Handoff Timing', key: 'handoff_timing' });
const contribution = acme.metric({
  name: 'Contribution Margin',
  key: 'contribution_margin',
  lifecycle_status: 'CANDIDATE',
});
const gross = acme.metric({
  name: 'Gross Margin',
  key: 'gross_margin',
  description: 'Revenue less cost of goods, before the contribution of variable costs.',
});
const grossEu = acme.metric({
  name: 'Gross Margin (EU)',
  key: 'gross_margin_eu',
  lifecycle_status: 'APPROVED',
  description: 'Gross Margin of the EU sales; see the contribution note.',
});
acme.relate(grossEu, 'variant_of', gross);
const key = acme.key();
// Another organization's names are never suggested here.
const other = r.org();
other.metric({ name: 'Handle Time Target', key: 'handle_time_target_other' });
other.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), serverTiming: true });
});
afterAll(() => t.close());

const path = (q: string, query = '') => `/api/v1/metrics?pageSize=100&q=${encodeURIComponent(q)}${query}`;

async function search(q: string, query = '') {
  const body = expectOk(await t.get(path(q, query), key.secret));
  return { ids: body.data.map((item: { id: string }) => item.id), total: body.pagination.total, meta: body.meta };
}

describe('transposed letters', () => {
  it('are corrected like other typos, and meta says so', async () => {
    for (const q of ['chrun', 'CHRUN', 'chrun rate', 'churn rtae']) {
      const corrected = q.includes('rtae') ? { from: 'rtae', to: 'rate' } : { from: 'chrun', to: 'churn' };
      expect(await search(q), q).toEqual({
        ids: [churn.id],
        total: 1,
        meta: { apiVersion: 'v1', corrected: [corrected] },
      });
    }
  });
});

describe('names before descriptions', () => {
  const handleTime = [aht.id, ahtEu.id, target.id, occupancy.id, occupancyEu.id];

  it('a name that holds every word of the query, in any order, ranks above text-only matches and their variants', async () => {
    for (const q of ['handle time', 'time handle', 'Time Handle']) {
      expect(await search(q), q).toEqual({ ids: handleTime, total: 5, meta: { apiVersion: 'v1' } });
    }
    for (const q of ['margin contribution', 'contribution margin']) {
      expect(await search(q), q).toEqual({
        ids: [contribution.id, gross.id, grossEu.id],
        total: 3,
        meta: { apiVersion: 'v1' },
      });
    }
  });

  it('so does a name whose words begin with the query’s words, above names that are only close to them', async () => {
    expect(await search('handl tim')).toEqual({
      ids: [aht.id, ahtEu.id, target.id, handoff.id, occupancy.id, occupancyEu.id],
      total: 6,
      meta: {
        apiVersion: 'v1',
        corrected: [
          { from: 'handl', to: 'handle' },
          { from: 'tim', to: 'time' },
        ],
      },
    });
    expect(await search('contrib marg')).toEqual({
      ids: [contribution.id, gross.id, grossEu.id],
      total: 3,
      meta: {
        apiVersion: 'v1',
        corrected: [
          { from: 'contrib', to: 'contribution' },
          { from: 'marg', to: 'margin' },
        ],
      },
    });
  });
});

describe('meta of a search', () => {
  it('is the version alone on plain listing and when every result matched as written', async () => {
    expect(expectOk(await t.get('/api/v1/metrics', key.secret)).meta).toEqual({ apiVersion: 'v1' });
    expect((await search('churn')).meta).toEqual({ apiVersion: 'v1' });
  });

  it('says what was corrected on a page past the end too', async () => {
    const body = expectOk(await t.get('/api/v1/metrics?pageSize=1&page=5&q=chrun', key.secret));
    expect(body).toMatchObject({ data: [], pagination: { total: 1 } });
    expect(body.meta).toEqual({ apiVersion: 'v1', corrected: [{ from: 'chrun', to: 'churn' }] });
  });

  it('suggests close names or keys of the organization when nothing is found', async () => {
    // Quoted: taken as written, not corrected.
    expect(await search('"handle tme target"')).toEqual({
      ids: [],
      total: 0,
      meta: { apiVersion: 'v1', did_you_mean: ['Handle Time Target', 'Average Handle Time'] },
    });
    // A key is suggested when it is closer than the name.
    expect((await search('"aht minnutes"')).meta).toEqual({
      apiVersion: 'v1',
      did_you_mean: ['aht_minutes', 'aht_minutes_eu'],
    });
    // Whatever the filters: the names of the organization.
    expect(await search('churn', '&lifecycle_status=DRAFT')).toEqual({
      ids: [],
      total: 0,
      meta: { apiVersion: 'v1', did_you_mean: ['Churn Rate'] },
    });
    // No word at all: nothing to compare, no error.
    expect(await search('*** ???')).toEqual({ ids: [], total: 0, meta: { apiVersion: 'v1', did_you_mean: [] } });
    expect(await search('xylophonequartz')).toEqual({
      ids: [],
      total: 0,
      meta: { apiVersion: 'v1', did_you_mean: [] },
    });
  });

  it('is kept with the page: asked again, the same answer from the key lookup and the page’s rows', async () => {
    const first = await t.get(path('chrun'), key.secret);
    const again = await t.get(path('chrun'), key.secret);
    expect(expectOk(again)).toEqual(expectOk(first));
    expect([statementCount(first), statementCount(again)]).toEqual([2, 2]);

    // Nothing found: ranked, then the suggestions (one statement more); kept, the key lookup alone.
    const none = await t.get(path('"qqq zzz"'), key.secret);
    const noneAgain = await t.get(path('"qqq zzz"'), key.secret);
    expect(expectOk(noneAgain)).toEqual(expectOk(none));
    expect([statementCount(none), statementCount(noneAgain)]).toEqual([3, 1]);
  });
});

describe('GraphQL', () => {
  const query = `query Search($search: String) {
    metrics(search: $search, pageSize: 100) { items { id } searchHints { corrected { from to } didYouMean } }
  }`;
  const post = (search: string | null) =>
    t.inject({
      method: 'POST',
      url: '/graphql',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        authorization: `Bearer ${key.secret}`,
      },
      payload: { query, variables: { search } },
    });

  it('carries the same hints on MetricPage.searchHints, null on plain listing', async () => {
    expect((await post('chrun')).json()).toEqual({
      data: {
        metrics: {
          items: [{ id: churn.id }],
          searchHints: { corrected: [{ from: 'chrun', to: 'churn' }], didYouMean: [] },
        },
      },
    });
    expect((await post('"aht minnutes"')).json().data.metrics.searchHints).toEqual({
      corrected: [],
      didYouMean: ['aht_minutes', 'aht_minutes_eu'],
    });
    expect((await post(null)).json().data.metrics.searchHints).toBeNull();
  });
});
