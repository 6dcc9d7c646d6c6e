/**
 * Search in tiers (src/metric/search-rank.ts,
 * prisma/migrations/20261125000000_search_tiers): exact forms and acronyms
 * first, then names, then text, then partial coverage; canonical metrics
 * before the rest, and a variant or superseded version right after the
 * metric it belongs to.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectOk } from './expectations.js';

const r = registry();
const acme = r.org();
const arr = acme.metric({ name: 'Annual Recurring Revenue', key: 'arr', description: 'Subscriptions, annualized.' });
const arrEu = acme.metric({ name: 'Annual Recurring Revenue (EU)', key: 'arr_eu', lifecycle_status: 'APPROVED' });
const arrLegacy = acme.metric({
  name: 'Annual Recurring Revenue (legacy)',
  key: 'arr_legacy',
  lifecycle_status: 'DEPRECATED',
});
acme.relate(arrEu, 'variant_of', arr);
acme.relate(arr, 'supersedes', arrLegacy);
// Repeats the abbreviation in its name, key and description; the metric meant has it only as its key.
const netNewArr = acme.metric({
  name: 'Net New ARR',
  key: 'net_new_arr',
  description: 'New ARR plus expansion ARR minus churned ARR: the change in ARR.',
});
const churn = acme.metric({ name: 'Churn Rate', key: 'churn_rate', aliases: ['logo churn'] });
const churnLegacy = acme.metric({
  name: 'Churn Rate (legacy)',
  key: 'churn_rate_legacy',
  lifecycle_status: 'DEPRECATED',
});
acme.relate(churn, 'supersedes', churnLegacy);
const churnDraft = acme.metric({ name: 'Churn Rate v2', key: 'churn_rate_v2', lifecycle_status: 'DRAFT' });
const revenueChurn = acme.metric({ name: 'Revenue Churn Rate', key: 'revenue_churn_rate' });
const dau = acme.metric({ name: 'Daily Active Users', key: 'daily_active_users' });
const stickiness = acme.metric({ name: 'Stickiness (DAU/MAU)', key: 'dau_mau_ratio' });
const signups = acme.metric({ name: 'Sign-ups', key: 'registrations' });
const nrr = acme.metric({ name: 'Net Revenue Retention', key: 'nrr_pct', aliases: ['NDR', 'net dollar retention'] });
const cac = acme.metric({
  name: 'Customer Acquisition Cost',
  key: 'cac',
  description: 'Sales and marketing spend divided by the number of new customers won.',
});
const cpl = acme.metric({ name: 'Cost per Lead', key: 'cpl', description: 'Marketing spend divided by new leads.' });
// Names that hold the same words: as a phrase or apart, among few words or many. The descriptions of
// the ones that fit worst are the shortest, so a full-text rank alone would put them first.
const kilnAverage = acme.metric({
  name: 'Average Kiln Temperature',
  key: 'kiln_temperature_avg',
  description: 'Mean of the readings of every kiln thermocouple over the firing cycle, in degrees Celsius.',
});
const kilnSpread = acme.metric({
  name: 'Kiln Temperature Spread',
  key: 'kiln_temperature_spread',
  description: 'Highest reading less the lowest reading of the kiln thermocouples during a firing cycle.',
});
const kilnAlarms = acme.metric({ name: 'Kiln Temperature Alarm Count', key: 'kiln_alarms', description: 'Alarms.' });
const byKiln = acme.metric({ name: 'Temperature by Kiln', key: 'temperature_by_kiln', description: 'Per kiln.' });
const kilnUptime = acme.metric({
  name: 'Kiln Uptime',
  key: 'kiln_uptime',
  description: 'Share of scheduled hours in which the kilns were firing, all plants and shifts included.',
});
const kilnUptimeByPlant = acme.metric({ name: 'Kiln Uptime by Plant and Shift', key: 'kiln_uptime_plant' });
const kilnUptimeDraft = acme.metric({ name: 'Kiln Uptime v2', key: 'kiln_uptime_v2', lifecycle_status: 'DRAFT' });
const key = acme.key();
// Another organization's names give this one no acronyms.
const other = r.org();
other.metric({ name: 'Quantum Widget Yield', key: 'quantum_widget_yield' });
other.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
});
afterAll(() => t.close());

async function search(q: string, query = ''): Promise<{ ids: string[]; total: number }> {
  const path = `/api/v1/metrics?pageSize=100&q=${encodeURIComponent(q)}${query}`;
  const body = expectOk(await t.get(path, key.secret));
  return { ids: body.data.map((item: { id: string }) => item.id), total: body.pagination.total };
}

describe('search tiers', () => {
  it('an exact key first, then acronyms, whatever repeats the word; variants and legacy right after', async () => {
    for (const q of ['arr', 'ARR']) {
      expect(await search(q)).toEqual({ ids: [arr.id, arrEu.id, arrLegacy.id, netNewArr.id], total: 4 });
    }
  });

  it('canonical first: a superseded version right after its successor, a draft after the released ones', async () => {
    // Names first; "churned" in a description after them.
    expect(await search('churn')).toEqual({
      ids: [churn.id, churnLegacy.id, revenueChurn.id, churnDraft.id, netNewArr.id],
      total: 5,
    });
    expect((await search('Churn Rate')).ids[0]).toBe(churn.id);
  });

  it('aliases are searched like the name, an exact alias first', async () => {
    expect((await search('logo churn')).ids).toEqual([churn.id]);
    expect((await search('NDR')).ids).toEqual([nrr.id]);
    expect((await search('net dollar retention')).ids[0]).toBe(nrr.id);
    expect((await search('dollar retention')).ids).toEqual([nrr.id]);
  });

  it('acronyms of names are words, and the document splits words on punctuation as the query does', async () => {
    expect((await search('DAU')).ids).toEqual([dau.id, stickiness.id]);
    expect((await search('NRR')).ids).toEqual([nrr.id]);
    expect((await search('mau')).ids).toEqual([stickiness.id]);
    expect((await search('signups')).ids).toEqual([signups.id]);
    expect((await search('sign ups')).ids).toEqual([signups.id]);
  });

  it('another organization’s names are no words here', async () => {
    expect(await search('qwy')).toEqual({ ids: [], total: 0 });
    expect(await search('quantum widget')).toEqual({ ids: [], total: 0 });
  });
});

describe('names that fit the query', () => {
  it('a phrase in the query’s order first, then the names mostly made of the query’s words, then name prefixes', async () => {
    expect((await search('kiln temperature')).ids).toEqual([
      kilnSpread.id, // a phrase, 2 words of 3, and the name starts with the query
      kilnAverage.id, // a phrase, 2 of 3
      kilnAlarms.id, // a phrase that starts the name, 2 of 4
      byKiln.id, // 2 of 2, apart
    ]);
  });

  it('whatever the order of the query’s words; canonical first; a rename moves a metric', async () => {
    expect((await search('uptime kiln')).ids).toEqual([kilnUptime.id, kilnUptimeByPlant.id, kilnUptimeDraft.id]);
    // The stored name words follow the name.
    await t.database.prisma.$executeRaw`
      UPDATE metric SET name = 'Kiln Uptime across Plants, Lines and Shifts' WHERE id = ${kilnUptime.id}::uuid`;
    expect((await search('uptime kiln')).ids).toEqual([kilnUptimeByPlant.id, kilnUptime.id, kilnUptimeDraft.id]);
  });
});

describe('partial coverage', () => {
  const question = 'cost of winning new customers';

  it('a question no metric matches in every word finds the metrics covering most of it', async () => {
    const found = await search(question);
    expect(found.ids[0]).toBe(cac.id);
    expect(found.ids).toContain(cpl.id);
    expect(found.total).toBe(found.ids.length);
  });

  it('pages never repeat or skip a metric, and the total counts what the ranking returns', async () => {
    const all = await search(question);
    const pages: string[] = [];
    for (let page = 1; page <= Math.ceil(all.total / 2); page++) {
      const body = expectOk(
        await t.get(`/api/v1/metrics?pageSize=2&page=${page}&q=${encodeURIComponent(question)}`, key.secret),
      );
      expect(body.pagination.total).toBe(all.total);
      pages.push(...body.data.map((item: { id: string }) => item.id));
    }
    expect(pages).toEqual(all.ids);
  });

  it('combines with filters', async () => {
    expect(await search(question, '&lifecycle_status=DEPRECATED')).toEqual({ ids: [], total: 0 });
    expect((await search(question, '&lifecycle_status=RELEASED')).ids[0]).toBe(cac.id);
  });

  it('is not used when every word matches, nor for a query in websearch syntax', async () => {
    expect(await search('churn rate -revenue')).toEqual({
      ids: [churn.id, churnLegacy.id, churnDraft.id],
      total: 3,
    });
    expect(await search('"cost of winning"')).toEqual({ ids: [], total: 0 });
  });
});

describe('families follow the relationships', () => {
  it('a relationship written behind the service’s back moves a metric next to its parent', async () => {
    await t.database.prisma.$executeRaw`
      INSERT INTO metric_relationship (id, metric_id, kind, target_metric_id)
      VALUES (gen_random_uuid(), ${churnDraft.id}::uuid, 'variant_of', ${churn.id}::uuid)`;
    expect((await search('churn')).ids).toEqual([
      churn.id,
      churnDraft.id,
      churnLegacy.id,
      revenueChurn.id,
      netNewArr.id,
    ]);

    await t.database.prisma.$executeRaw`DELETE FROM metric_relationship WHERE metric_id = ${churnDraft.id}::uuid`;
    const [family] = await t.database.prisma.$queryRaw<{ parent_id: string | null; is_parent: boolean }[]>`
      SELECT s.parent_id::text, p.is_parent FROM metric_search s, metric_search p
      WHERE s.id = ${churnDraft.id}::uuid AND p.id = ${churn.id}::uuid`;
    expect(family).toEqual({ parent_id: null, is_parent: true });
    expect((await search('churn')).ids).toEqual([
      churn.id,
      churnLegacy.id,
      revenueChurn.id,
      churnDraft.id,
      netNewArr.id,
    ]);
  });
});

describe('a deleted parent', () => {
  it('leaves its children heads of their own families', async () => {
    await t.database.prisma.$executeRaw`DELETE FROM metric WHERE id = ${arr.id}::uuid`;
    const rows = await t.database.prisma.$queryRaw<{ id: string; parent_id: string | null }[]>`
      SELECT id::text, parent_id::text FROM metric_search WHERE id IN (${arrEu.id}::uuid, ${arrLegacy.id}::uuid)
      ORDER BY name`;
    expect(rows).toEqual([
      { id: arrEu.id, parent_id: null },
      { id: arrLegacy.id, parent_id: null },
    ]);
    expect(await search('arr')).toEqual({ ids: [arrEu.id, arrLegacy.id, netNewArr.id], total: 3 });
  });
});
