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

  // The figures today's search reaches on this set, held so that no change makes it worse. The
  // targets of the relevance work (MRR@10 0.9 overall and per kind, 0.6 on questions, nDCG@10 0.85)
  // are not met yet: see the README, "Search relevance".
  it('MRR@10 and nDCG@10 at least what today’s search reaches (0.67 and 0.73 overall)', () => {
    const { overall } = summarize(results);
    expect(overall.mrr).toBeGreaterThanOrEqual(0.66);
    expect(overall.ndcg).toBeGreaterThanOrEqual(0.72);
  });
});
