/**
 * Applies to one organization are serialized, and readers see the registry
 * before or after an apply, never in between (registry-document.md,
 * "Apply"). Nothing here depends on how fast the machine is: the checks hold
 * for every interleaving, and a reader polls for as long as the apply runs.
 */
import { setImmediate } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import {
  type DocMetric,
  doc,
  docMetric,
  metricsVersion,
  newTeamOrg,
  type PlanBody,
  planOf,
  postValidations,
  putRegistry,
  totals,
} from './support.js';

let t: TestApp;
let second: FastifyInstance;
beforeAll(async () => {
  // Errors are logged: a 500 here should say why.
  t = await startTestApp({ poolSize: 6, logger: pino({ level: 'error' }) });
  // Another instance over the same database: serialization must hold across instances.
  second = await buildTestInstance(t.database);
});
afterAll(async () => {
  await second?.close();
  await t.close();
});

const prisma = () => t.database.prisma;
const pad = (n: number) => String(n).padStart(4, '0');

async function descriptions(orgId: string): Promise<Record<string, string>> {
  const rows = await prisma().metric.findMany({ where: { orgId }, select: { key: true, description: true } });
  return Object.fromEntries(rows.map((row) => [row.key, row.description]));
}

describe('two applies at once', () => {
  it('of different documents (with prune) serialize: both succeed, the end state is exactly the later one', async () => {
    const org = await newTeamOrg(prisma());
    const range = (from: number, to: number, label: string): DocMetric[] =>
      Array.from({ length: to - from }, (_, i) => docMetric(`k${pad(from + i)}`, { description: `From ${label}.` }));
    const a = doc(org.slug, range(0, 200, 'A'));
    const b = doc(org.slug, range(100, 300, 'B'));
    const [resA, resB] = await Promise.all([
      // The later one removes the 100 keys of the first that it does not list.
      putRegistry(t, a, { token: org.token, query: 'prune=true&allow_removals=100' }),
      putRegistry(second, b, { token: org.token, query: 'prune=true&allow_removals=100' }),
    ]);
    const [planA, planB] = [planOf(resA), planOf(resB)];
    const aFirst = planA.totals.created === 200;
    const [firstPlan, laterPlan, later] = aFirst ? [planA, planB, 'B'] : [planB, planA, 'A'];
    expect(firstPlan.totals).toEqual(totals({ created: 200 }));
    // The later one was planned against the state the first left.
    expect(laterPlan.totals).toEqual(totals({ created: 100, updated: 100, removed: 100 }));
    const updated = laterPlan.plan.filter((entry) => entry.result === 'updated');
    expect(updated.map((entry) => entry.key)).toEqual(Array.from({ length: 100 }, (_, i) => `k${pad(100 + i)}`));
    for (const entry of updated) expect(entry.changed_fields).toEqual(['description']);
    const expectedKeys = (aFirst ? b : a).metrics.map((metric) => metric.key);
    expect(await descriptions(org.id)).toEqual(Object.fromEntries(expectedKeys.map((key) => [key, `From ${later}.`])));
  });

  it('of the same document: one creates, the other finds it unchanged (never a duplicate or a 500)', async () => {
    const org = await newTeamOrg(prisma());
    const document = doc(
      org.slug,
      Array.from({ length: 100 }, (_, i) => docMetric(`same_${pad(i)}`, { domain: 'Shared Domain' })),
      { project: 'Shared Project' },
    );
    const plans = (
      await Promise.all([
        putRegistry(t, document, { token: org.token }),
        putRegistry(second, document, { token: org.token }),
        putRegistry(t, document, { token: org.token }),
      ])
    ).map((res) => planOf(res).totals);
    expect(plans.filter((plan) => plan.created === 100)).toHaveLength(1);
    expect(plans.filter((plan) => plan.unchanged === 100)).toHaveLength(2);
    expect(await prisma().metric.count({ where: { orgId: org.id } })).toBe(100);
    expect(await prisma().project.count({ where: { orgId: org.id } })).toBe(1);
    expect(await prisma().domain.count({ where: { orgId: org.id } })).toBe(1);
  });

  it('an apply pruning a metric and validation evidence for it: one waits for the other, neither half applies', async () => {
    const org = await newTeamOrg(prisma());
    await planOf(await putRegistry(t, doc(org.slug, [docMetric('kept'), docMetric('doomed')]), { token: org.token }));
    const [prune, evidence] = await Promise.all([
      putRegistry(t, doc(org.slug, [docMetric('kept')]), { token: org.token, query: 'prune=true' }),
      postValidations(
        second,
        {
          results: [
            { metric_key: 'kept', ran_at: '2026-03-01T00:00:00Z', status: 'passed' },
            { metric_key: 'doomed', ran_at: '2026-03-01T00:00:00Z', status: 'passed' },
          ],
        },
        { token: org.token },
      ),
    ]);
    expect(planOf(prune).totals).toEqual(totals({ unchanged: 1, removed: 1 }));
    const kept = await prisma().metric.findFirstOrThrow({ where: { orgId: org.id, key: 'kept' } });
    const keptValidations = await prisma().validation.count({ where: { metricId: kept.id } });
    if (evidence.statusCode === 200) {
      // Recorded first, then removed with its metric.
      expect(evidence.json()).toEqual({ data: { recorded: 2, duplicates: 0 } });
      expect(keptValidations).toBe(1);
    } else {
      // The prune first: the evidence names the missing metric and records nothing.
      expect(evidence.statusCode).toBe(400);
      expect(evidence.json()).toEqual({
        error: 'results[1].metric_key: no metric with key "doomed" in this organization',
      });
      expect(keptValidations).toBe(0);
    }
  });
});

describe('a reader during an apply of 1,000 changes', () => {
  it('sees the registry all before or all after, and never goes back', async () => {
    const org = await newTeamOrg(prisma());
    const before = Array.from({ length: 1000 }, (_, i) => docMetric(`m${pad(i)}`, { description: 'State old.' }));
    expect(planOf(await putRegistry(t, doc(org.slug, before), { token: org.token })).totals).toEqual(
      totals({ created: 1000 }),
    );
    // 1,000 changes: every description, and 500 new metrics (so the total moves too).
    const after = [
      ...before.map((metric) => ({ ...metric, description: 'State new.' })),
      ...Array.from({ length: 500 }, (_, i) => docMetric(`n${pad(i)}`, { description: 'State new.' })),
    ];
    const versionBefore = await metricsVersion(prisma(), org.id);

    type Seen = 'old' | 'new';
    const seen: { read: string; state: Seen; started: number; ended: number }[] = [];
    let clock = 0;
    /** One response: its total and every description on it must tell the same state. */
    const read = async (url: string): Promise<void> => {
      const started = clock++;
      const res = await t.get(url, org.key);
      const ended = clock++;
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json() as { data: { description: string }[]; pagination: { total: number } };
      const states = [...new Set(body.data.map((item) => (item.description === 'State new.' ? 'new' : 'old')))];
      expect(states, `${url}: one state on a page`).toHaveLength(1);
      const state = states[0] as Seen;
      if (!url.includes('q=')) {
        expect(body.pagination.total, `${url}: the total of the state the page shows`).toBe(
          state === 'new' ? 1500 : 1000,
        );
      }
      seen.push({ read: url, state, started, ended });
    };
    const urls = [
      '/api/v1/metrics?pageSize=100&page=1',
      '/api/v1/metrics?pageSize=100&page=10',
      '/api/v1/metrics?q=state&pageSize=50',
    ];
    let done = false;
    // Two readers, each polling for as long as the apply runs. On the embedded database a read
    // through inject never waits for I/O: a poll that did not yield would run on microtasks alone,
    // and the timers the apply paces its writes with (src/registry/apply.ts) would never fire.
    const readers = [urls, [...urls].reverse()].map(async (order) => {
      while (!done) {
        for (const url of order) await read(url);
        await setImmediate();
      }
    });
    const applying = putRegistry(second, doc(org.slug, after), { token: org.token }).finally(() => {
      done = true;
    });
    const [res] = await Promise.all([applying, ...readers]);
    expect(planOf(res).totals).toEqual(totals({ created: 500, updated: 1000 }));
    for (const url of urls) await read(url);
    // Monotonic: once a read has seen the new registry, no read that starts later sees the old one.
    const firstNewEnded = Math.min(...seen.filter((entry) => entry.state === 'new').map((entry) => entry.ended));
    expect(Number.isFinite(firstNewEnded)).toBe(true);
    expect(
      seen.filter((entry) => entry.state === 'old' && entry.started > firstNewEnded),
      JSON.stringify(seen),
    ).toEqual([]);
    expect(await metricsVersion(prisma(), org.id)).toBeGreaterThan(versionBefore);
  });
});

describe('a document of 10,000 metrics', () => {
  it('applies, re-applies as a no-op, and applies 100 changes', async () => {
    const org = await newTeamOrg(prisma());
    const metrics = Array.from({ length: 10_000 }, (_, i) =>
      docMetric(`metric_${pad(i)}`, {
        name: `Metric ${pad(i)}`,
        description: `Description of metric ${i}, long enough to be realistic for a registry entry.`,
        lifecycle_status: i % 3 === 0 ? 'RELEASED' : 'DRAFT',
        domain: `Domain ${i % 10}`,
        aliases: [`m${i}`],
        grains: ['day', 'month'],
        versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-01-01T00:00:00Z' }],
        ...(i > 0 ? { relationships: [{ kind: 'related_to', target: `metric_${pad(i - 1)}` }] } : {}),
      }),
    );
    const document = doc(org.slug, metrics);
    const first = planOf(await putRegistry(t, document, { token: org.token }));
    expect(first.totals).toEqual(totals({ created: 10_000 }));
    expect(first.plan).toHaveLength(10_000);
    expect(await prisma().metric.count({ where: { orgId: org.id } })).toBe(10_000);
    expect(await prisma().metricRelationship.count({ where: { metric: { orgId: org.id } } })).toBe(9_999);
    const listed = await t.get('/api/v1/metrics?pageSize=1', org.key);
    expect(listed.json().pagination.total).toBe(10_000);

    const version = await metricsVersion(prisma(), org.id);
    const noop: PlanBody = planOf(await putRegistry(t, document, { token: org.token }));
    expect(noop.totals).toEqual(totals({ unchanged: 10_000 }));
    expect(await metricsVersion(prisma(), org.id)).toBe(version);

    const changed = doc(
      org.slug,
      metrics.map((metric, i) => (i % 100 === 0 ? { ...metric, description: 'Changed.' } : metric)),
    );
    const hundred = planOf(await putRegistry(t, changed, { token: org.token }));
    expect(hundred.totals).toEqual(totals({ updated: 100, unchanged: 9_900 }));
  }, 600_000);
});
