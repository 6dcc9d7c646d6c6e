/**
 * Batching: the number of SQL statements of each read route (reported by
 * `Server-Timing` with serverTiming on) does not grow with the data. Two
 * registries, one of 5 metrics with little around them and one of 60 with
 * many threads, messages, pinned notes, versions and relationships, must
 * cost the same statements per route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KeyJson, type MetricJson, type OrgBuilder, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectOk, statementCount } from './expectations.js';

interface Setup {
  fixture: unknown;
  key: KeyJson;
  /** the metric whose detail and contract are read */
  focus: MetricJson;
  metricCount: number;
}

/** Gives `metric` `n` of every kind of surrounding data. */
function surround(org: OrgBuilder, metric: MetricJson, others: MetricJson[], n: number): void {
  for (let i = 0; i < n; i++) {
    const day = String((i % 28) + 1).padStart(2, '0');
    const version = org.version(metric, { definition_version: `1.${i}.0`, released_at: `2026-01-${day}T00:00:00Z` });
    org.approval(metric, { version_id: version.id });
    org.validation(metric, { ran_at: `2026-02-${day}T00:00:00Z` });
    org.challenge(metric, { status: i % 2 ? 'open' : 'resolved' });
    const thread = org.thread(metric, { intent: ['objection', 'proposal', 'question'][i % 3] });
    for (let j = 0; j < 3; j++) {
      org.message(thread, {
        pinned_at: j === 0 ? `2026-03-${day}T00:00:00Z` : null,
        deleted_at: j === 2 ? '2026-04-01T00:00:00Z' : null,
      });
    }
  }
  const kinds = ['variant_of', 'supersedes', 'related_to', 'conflicts_with'] as const;
  others.slice(0, n).forEach((other, i) => {
    org.relate(metric, kinds[i % 4] ?? 'related_to', other);
    org.relate(other, kinds[(i + 1) % 4] ?? 'related_to', metric);
  });
}

function build(metricCount: number, perMetric: number): Setup {
  const r = registry();
  const org = r.org();
  const metrics: MetricJson[] = [];
  for (let i = 0; i < metricCount; i++) {
    metrics.push(org.metric({ name: `${i % 2 ? 'Revenue' : 'Margin'} ${String(i).padStart(3, '0')}` }));
  }
  const [focus, ...others] = metrics as [MetricJson, ...MetricJson[]];
  surround(org, focus, others, perMetric * 5);
  for (const metric of others) surround(org, metric, [], perMetric);
  const key = org.key();
  return { fixture: r.build(), key, focus, metricCount };
}

const small = build(5, 1);
const large = build(60, 4);

const routes = {
  list: () => '/api/v1/metrics?pageSize=100',
  search: () => '/api/v1/metrics?pageSize=100&q=revenue',
  detail: (setup: Setup) => `/api/v1/metrics/${setup.focus.id}`,
  contract: (setup: Setup) => `/api/v1/metrics/${setup.focus.id}/contract`,
};
const limits = { list: 3, search: 3, detail: 6, contract: 6 };

let smallApp: TestApp;
let largeApp: TestApp;
beforeAll(async () => {
  [smallApp, largeApp] = await Promise.all([
    startTestApp({ fixture: small.fixture, serverTiming: true }),
    startTestApp({ fixture: large.fixture, serverTiming: true }),
  ]);
});
afterAll(async () => {
  await Promise.all([smallApp?.close(), largeApp?.close()]);
});

async function measure(app: TestApp, setup: Setup, route: keyof typeof routes) {
  const res = await app.get(routes[route](setup), setup.key.secret);
  return { body: expectOk(res), statements: statementCount(res) };
}

describe('SQL statements per request', () => {
  it('the registries differ in size as intended', async () => {
    expect((await measure(smallApp, small, 'list')).body.pagination.total).toBe(5);
    expect((await measure(largeApp, large, 'list')).body.pagination.total).toBe(60);
    expect((await measure(largeApp, large, 'search')).body.pagination.total).toBe(30);
    const contract = (await measure(largeApp, large, 'contract')).body.data;
    expect(contract.discussion_thread_count).toBe(20);
    expect(contract.agent_context_notes).toHaveLength(10);
    expect((await measure(largeApp, large, 'detail')).body.data.relationships).toHaveLength(20);
  });

  it.each(Object.keys(routes) as (keyof typeof routes)[])('%s: constant and within its limit', async (route) => {
    const a = await measure(smallApp, small, route);
    const b = await measure(largeApp, large, route);
    expect({ route, small: a.statements }).toEqual({ route, small: b.statements });
    expect(b.statements).toBeLessThanOrEqual(limits[route]);
    expect(b.statements).toBeGreaterThan(0);
  });

  it('the count does not depend on the page size', async () => {
    const few = statementCount(await largeApp.get('/api/v1/metrics?pageSize=5', large.key.secret));
    const many = statementCount(await largeApp.get('/api/v1/metrics?pageSize=100', large.key.secret));
    expect(few).toBe(many);
  });
});
