/**
 * The judged set (test/relevance/registry.json, queries.ts) through the HTTP
 * app: relevance is deterministic, so its figures are held as a test. The
 * table is printed (`npm run relevance`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { evaluate, type QueryResult, registry, report, SECRET, summarize } from './evaluate.js';

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
  // 0.96 / 0.95 overall and 0.70 on questions (README, "Search ranking").
  it('MRR@10 at least 0.9 overall and on every kind but questions (0.6), nDCG@10 at least 0.85', () => {
    const { byKind, overall } = summarize(results);
    expect(overall.mrr).toBeGreaterThanOrEqual(0.9);
    expect(overall.ndcg).toBeGreaterThanOrEqual(0.85);
    for (const [kind, scores] of byKind) {
      expect(scores.mrr, kind).toBeGreaterThanOrEqual(kind === 'question' ? 0.6 : 0.9);
    }
  });
});
