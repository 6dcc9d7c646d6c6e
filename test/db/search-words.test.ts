/**
 * What the search trigger derives of a written metric (metric_search's words,
 * acronyms, forms and document, and the organization's search terms), pinned
 * to the values the SQL functions of the search-tiers migration gave before
 * their helpers became PL/pgSQL functions (migration search_words_planned_once):
 * the same words, the acronyms in the same order, the same positions in the
 * document. Written by a fixture load (the insert trigger) and again by an
 * update of every searched column (the update trigger).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const r = registry();
const acme = r.org();
const mttr = acme.metric({
  key: 'mttr_eu',
  name: 'Mean Time to Resolution (EU)',
  aliases: ['Add-to-Cart Rate', 'Daily Active Users of the Web'],
  description: 'Year-over-year e-mail sign-ups, reported monthly.',
  concept_name: 'time-to-resolution',
  tags: ['Support-Ops', 'Quarterly'],
});
const stickiness = acme.metric({
  key: 'stickiness',
  name: 'Stickiness (DAU/MAU)',
  aliases: ['Weekly Active Users vs Annual Churn', 'Net Revenue Retention'],
  description: 'Plain description.',
  concept_name: 'plain_concept',
  tags: [],
});

const EXPECTED = {
  [mttr.id]: {
    acronyms: ['mttr', 'acr', 'dauw', 'mtr', 'dauotw', 'atcr'],
    forms: ['meantimetoresolutioneu', 'dailyactiveusersoftheweb', 'addtocartrate', 'mttreu'],
    document:
      "'acr':21A 'activ':13A 'add':8A 'addtocart':18A 'atcr':25A 'cart':10A 'daili':12A 'dauotw':24A 'dauw':22A " +
      "'day':19A 'e':35C 'email':42C 'eu':5A,7A 'mail':36C 'mean':1A 'month':40C 'mtr':23A 'mttr':6A,20A 'op':30B " +
      "'quarter':31B 'rate':11A 'report':39C 'resolut':4A,28B 'sign':37C 'signup':43C 'support':29B 'time':2A,26B " +
      "'up':38C 'user':14A 'web':17A 'year':32C,34C 'yearoveryear':41C",
  },
  [stickiness.id]: {
    acronyms: ['wauvac', 'nrr', 'wauac'],
    forms: ['weeklyactiveusersvsannualchurn', 'stickinessdaumau', 'netrevenueretention', 'stickiness'],
    document:
      "'activ':6A 'annual':9A 'churn':10A 'concept':20B 'dau':2A 'descript':22C 'mau':3A 'net':11A 'nrr':17A " +
      "'plain':19B,21C 'retent':13A 'revenu':12A 'sticki':1A,4A 'user':7A 'vs':8A 'wauac':18A 'wauvac':16A " +
      "'week':5A,14A 'year':15A",
  },
};

/** Words a query may be corrected to, and the acronyms, known but never offered. */
const CORRECTABLE = [
  ...'active add addtocart cart daily day eu mean mttr of ops quarterly rate resolution support the time to users web'.split(
    ' ',
  ),
  ...'annual churn concept dau mau net plain retention revenue stickiness vs week weekly year'.split(' '),
];
const KNOWN_ONLY = ['acr', 'atcr', 'dauotw', 'dauw', 'mtr', 'nrr', 'wauac', 'wauvac'];

describe('the search words of a written metric', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture: r.build() });
  });
  afterAll(() => t?.close());

  const searchRows = () =>
    t.database.prisma.$queryRaw<{ id: string; acronyms: string[]; forms: string[]; document: string }[]>`
      SELECT s."id"::text AS "id", s."acronyms", s."forms", s."search_vector"::text AS "document"
      FROM "metric_search" s JOIN "metric" m ON m."id" = s."id" ORDER BY m."key"`;

  const expectPinned = async () => {
    const rows = await searchRows();
    expect(Object.fromEntries(rows.map(({ id, ...row }) => [id, row]))).toEqual(EXPECTED);
    const terms = await t.database.prisma.$queryRaw<{ term: string; correctable: boolean }[]>`
      SELECT st."term", st."correctable" FROM "search_term" st JOIN "organization" o ON o."id" = st."org_id"
      WHERE o."slug" = ${acme.slug} ORDER BY st."term"`;
    expect(terms.filter((row) => row.correctable).map((row) => row.term)).toEqual([...new Set(CORRECTABLE)].sort());
    expect(terms.filter((row) => !row.correctable).map((row) => row.term)).toEqual(KNOWN_ONLY);
  };

  it('are those of the search-tiers functions when the metric is inserted', async () => {
    await expectPinned();
  });

  it('are those again when every searched column is written again', async () => {
    const updated = await t.database.prisma.$executeRaw`
      UPDATE "metric" SET "name" = "name", "key" = "key", "aliases" = "aliases", "description" = "description",
        "concept_name" = "concept_name", "tags" = "tags"
      WHERE "id" IN (${mttr.id}::uuid, ${stickiness.id}::uuid)`;
    expect(updated).toBe(2);
    await t.database.prisma.$executeRaw`DELETE FROM "metric_search" WHERE "id" = ${mttr.id}::uuid`;
    await t.database.prisma.$executeRaw`UPDATE "metric" SET "name" = "name" WHERE "id" = ${mttr.id}::uuid`;
    await expectPinned();
  });
});
