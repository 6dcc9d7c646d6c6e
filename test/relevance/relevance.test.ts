/**
 * The judged set (test/relevance/registry.json, queries.ts) through the HTTP
 * app: relevance is deterministic, so its figures are held as a test. The
 * table is printed (`npm run relevance`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { evaluate, type QueryResult, registry, report, SECRET, summarize } from './evaluate.js';
import type { Kind } from './queries.js';

/**
 * MRR@10 per kind as the ranking reaches it (issue 38), two decimals rounded down: no kind may fall
 * below it. Every kind but questions has the metric meant first on every query.
 */
const HELD: Record<Kind, number> = {
  'exact name': 1,
  'other case': 1,
  'word order': 1,
  'plural/stemming': 1,
  hyphenation: 1,
  key: 1,
  'one-word partial': 1,
  typo: 1,
  'two-word partial': 1,
  abbreviation: 1,
  question: 0.71,
  'phrase order': 1,
  coverage: 1,
};

let t: TestApp;
let results: QueryResult[];
beforeAll(async () => {
  t = await startTestApp({ fixture: registry });
  results = await evaluate((url) => t.get(url, SECRET));
  console.log(report(results));
}, 120_000);
afterAll(() => t?.close());

describe('judged search relevance', () => {
  it('has at least 150 metrics and 60 queries', () => {
    expect(registry.organizations[0].metrics.length).toBeGreaterThanOrEqual(150);
    expect(results.length).toBeGreaterThanOrEqual(60);
  });

  // The targets of the relevance work (issue 17), held: MRR@10 at least 0.9 overall and on every kind
  // but questions, at least 0.6 on questions, nDCG@10 at least 0.85 overall. Today's search reaches
  // 0.97 / 0.96 overall and 0.72 on questions (docs/search.md, "The judged set").
  it('MRR@10 at least 0.9 overall and on every kind but questions (0.6), nDCG@10 at least 0.85', () => {
    const { byKind, overall } = summarize(results);
    expect(overall.mrr).toBeGreaterThanOrEqual(0.9);
    expect(overall.ndcg).toBeGreaterThanOrEqual(0.85);
    for (const [kind, scores] of byKind) {
      expect(scores.mrr, kind).toBeGreaterThanOrEqual(kind === 'question' ? 0.6 : 0.9);
    }
  });

  // Issue 38: a name that holds the query's words as a phrase, or whose words are mostly the query's,
  // ranks above one that holds them among more words or apart. Both kinds have cases of their own.
  it('phrase order and coverage: at least 5 queries each, MRR@10 at least 0.9', () => {
    const { byKind } = summarize(results);
    for (const kind of ['phrase order', 'coverage'] as const) {
      expect(byKind.get(kind)?.n, kind).toBeGreaterThanOrEqual(5);
      expect(byKind.get(kind)?.mrr, kind).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('no kind falls below the MRR@10 it has reached', () => {
    const { byKind } = summarize(results);
    expect([...byKind.keys()].sort()).toEqual(Object.keys(HELD).sort());
    for (const [kind, scores] of byKind) expect(scores.mrr, kind).toBeGreaterThanOrEqual(HELD[kind]);
  });
});
