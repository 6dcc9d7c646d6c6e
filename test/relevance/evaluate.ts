/**
 * The judged set's measures, through the HTTP app as a client searches:
 * `GET /api/v1/metrics?q=...&pageSize=10`, per query the first 10 results.
 *
 * - MRR@10: 1 / the rank of the first metric graded 2 (the one meant), 0 when
 *   it is not in the first 10.
 * - nDCG@10: gains 2^grade - 1, discounted by log2(rank + 1), over the ideal
 *   order of every graded metric.
 * - recall@10: the share of the metrics graded 1 or 2 found in the first 10.
 */
import { readFileSync } from 'node:fs';
import type { LightMyRequestResponse } from 'fastify';
import { type Judged, type Kind, QUERIES } from './queries.js';

export const registry = JSON.parse(readFileSync(new URL('./registry.json', import.meta.url), 'utf8'));
const org = registry.organizations[0];
export const SECRET: string = org.api_keys[0].secret;
const idOfKey = new Map<string, string>(org.metrics.map((m: { key: string; id: string }) => [m.key, m.id]));
const keyOfId = new Map<string, string>(org.metrics.map((m: { key: string; id: string }) => [m.id, m.key]));

export interface Scores {
  mrr: number;
  ndcg: number;
  recall: number;
}
export interface QueryResult extends Scores {
  judged: Judged;
  keys: string[];
}

const dcg = (gains: number[]) => gains.reduce((sum, g, i) => sum + (2 ** g - 1) / Math.log2(i + 2), 0);

export function score(judged: Judged, keys: string[]): Scores {
  for (const key of Object.keys(judged.grades)) {
    if (!idOfKey.has(key)) throw new Error(`${judged.q}: no metric ${key} in registry.json`);
  }
  const top = keys.slice(0, 10);
  const grade = (key: string) => judged.grades[key] ?? 0;
  const first = top.findIndex((key) => grade(key) === 2);
  const ideal = Object.values(judged.grades)
    .sort((a, b) => b - a)
    .slice(0, 10);
  const relevant = Object.keys(judged.grades);
  return {
    mrr: first < 0 ? 0 : 1 / (first + 1),
    ndcg: dcg(top.map(grade)) / dcg(ideal),
    recall: top.filter((key) => grade(key) > 0).length / Math.min(10, relevant.length),
  };
}

export async function evaluate(get: (url: string) => Promise<LightMyRequestResponse>): Promise<QueryResult[]> {
  const results: QueryResult[] = [];
  for (const judged of QUERIES) {
    const res = await get(`/api/v1/metrics?q=${encodeURIComponent(judged.q)}&pageSize=10`);
    if (res.statusCode !== 200) throw new Error(`${judged.q}: ${res.statusCode} ${res.body}`);
    const keys = res.json().data.map((item: { id: string }) => keyOfId.get(item.id) ?? item.id);
    results.push({ judged, keys, ...score(judged, keys) });
  }
  return results;
}

const mean = (rows: Scores[]): Scores => ({
  mrr: rows.reduce((s, r) => s + r.mrr, 0) / rows.length,
  ndcg: rows.reduce((s, r) => s + r.ndcg, 0) / rows.length,
  recall: rows.reduce((s, r) => s + r.recall, 0) / rows.length,
});

export function summarize(results: QueryResult[]): { byKind: Map<Kind, Scores & { n: number }>; overall: Scores } {
  const byKind = new Map<Kind, Scores & { n: number }>();
  for (const kind of new Set(results.map((r) => r.judged.kind))) {
    const rows = results.filter((r) => r.judged.kind === kind);
    byKind.set(kind, { ...mean(rows), n: rows.length });
  }
  return { byKind, overall: mean(results) };
}

/** A markdown table of the measures per kind and overall, then the queries that missed the metric meant at rank 1. */
export function report(results: QueryResult[]): string {
  const { byKind, overall } = summarize(results);
  const f = (x: number) => x.toFixed(2);
  const lines = ['| kind | queries | MRR@10 | nDCG@10 | recall@10 |', '|---|---|---|---|---|'];
  for (const [kind, s] of byKind) lines.push(`| ${kind} | ${s.n} | ${f(s.mrr)} | ${f(s.ndcg)} | ${f(s.recall)} |`);
  lines.push(
    `| **overall** | ${results.length} | **${f(overall.mrr)}** | **${f(overall.ndcg)}** | **${f(overall.recall)}** |`,
  );
  const misses = results.filter((r) => r.mrr < 1);
  if (misses.length) lines.push('', 'Not first:');
  for (const r of misses)
    lines.push(`- ${r.judged.kind}: "${r.judged.q}" (MRR ${f(r.mrr)}): ${r.keys.join(', ') || '(none)'}`);
  return lines.join('\n');
}
