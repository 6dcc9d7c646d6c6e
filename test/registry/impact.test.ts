/**
 * The impact of a plan (src/registry/impact.ts, docs/impact.md): for each
 * metric a document deprecates, removes, supersedes or changes in definition,
 * its transitive dependents through its inputs
 * and the keys that read it in the last 30 days, in the HTTP dry run and the
 * applied result, as before the apply; two statements whatever the number of
 * impacted metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/admin/api-keys.js';
import { recordStatements } from '../../src/db/query-stats.js';
import { applyRegistryDocument } from '../../src/registry/apply.js';
import { parseRegistryDocument } from '../../src/registry/document.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type DocMetric, doc, docMetric, newTeamOrg, putRegistry, type RegistryDoc, type TeamOrg } from './support.js';

const DAY = 24 * 60 * 60 * 1000;
const dayBefore = (days: number) => new Date(Date.now() - days * DAY).toISOString().slice(0, 10);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

interface Impact {
  key: string;
  change: string;
  dependents: { count: number; keys: string[] };
  readers: { count: number; keys: string[] };
}

const released = (key: string, fields: Record<string, unknown> = {}) =>
  docMetric(key, { lifecycle_status: 'RELEASED', ...fields });

/**
 * An organization with: base ← mid ← top and base ← side (inputs),
 * lonely (nothing on it), old and new (no relationship yet).
 */
async function lineageOrg(): Promise<{ org: TeamOrg; metrics: DocMetric[]; ids: Record<string, string> }> {
  const org = await newTeamOrg(t.database.prisma, 'impact');
  const inputs: Record<string, string[]> = { mid: ['base'], top: ['mid'], side: ['base'] };
  const metrics = ['base', 'mid', 'top', 'side', 'lonely', 'old', 'new'].map((key) =>
    released(key, inputs[key] ? { inputs: inputs[key] } : {}),
  );
  const res = await putRegistry(t, doc(org.slug, metrics), { token: org.token });
  expect(res.statusCode, res.body).toBe(200);
  const ids: Record<string, string> = {};
  for (const row of await t.database.prisma.metric.findMany({ where: { orgId: org.id } })) ids[row.key] = row.id;
  return { org, metrics, ids };
}

/** `metrics` with the fields of `changes` set (by key; their inputs kept) and those of `drop` left out. */
function changed(metrics: DocMetric[], changes: DocMetric[], drop: string[] = []): DocMetric[] {
  return metrics
    .filter((metric) => !drop.includes(metric.key))
    .map((metric) => ({ ...metric, ...changes.find((change) => change.key === metric.key) }));
}

async function impactOf(org: TeamOrg, document: RegistryDoc, query = 'dry_run=true'): Promise<Impact[]> {
  const res = await putRegistry(t, document, { token: org.token, query });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.impact;
}

const none = { count: 0, keys: [] };

describe('the impact of a plan', () => {
  it('deprecate, definition change, supersede and remove: dependents through the inputs, and recent readers', async () => {
    const { org, metrics, ids } = await lineageOrg();
    const dashboards = await createApiKey(t.database.prisma, { org: org.slug, name: 'dashboards' });
    expect((await t.get(`/api/v1/metrics/${ids.base}/contract`, dashboards.secret)).statusCode).toBe(200);
    expect((await t.get(`/api/v1/metrics/${ids.old}`, dashboards.secret)).statusCode).toBe(200);
    // A revoked key is no reader any more; a read 31 days ago is out of the window.
    const revoked = await createApiKey(t.database.prisma, { org: org.slug, name: 'retired' });
    expect((await t.get(`/api/v1/metrics/${ids.base}`, revoked.secret)).statusCode).toBe(200);
    await t.app.flushUsage();
    await revokeApiKey(t.database.prisma, { org: org.slug, id: revoked.id });
    const former = await createApiKey(t.database.prisma, { org: org.slug, name: 'former' });
    await t.database.prisma.$executeRaw`
      INSERT INTO metric_usage (metric_id, day, key_id, org_id, reads)
      VALUES (${ids.mid}::uuid, ${dayBefore(30)}::date, ${former.id}::uuid, ${org.id}::uuid, 50),
             (${ids.mid}::uuid, ${dayBefore(29)}::date, ${dashboards.id}::uuid, ${org.id}::uuid, 1)`;
    // Reads held by the instance, not written yet: the apply route writes them before it plans.
    for (let i = 0; i < 2; i++) expect((await t.get(`/api/v1/metrics/${ids.base}`, org.key)).statusCode).toBe(200);

    const document = doc(
      org.slug,
      changed(
        metrics,
        [
          released('base', { lifecycle_status: 'DEPRECATED' }),
          released('mid', { sql_expression: 'SUM(amount) - SUM(refunds)' }),
          released('new', { relationships: [{ kind: 'supersedes', target: 'old' }] }),
          released('top', { description: 'Only the description changes: no impact.' }),
        ],
        ['lonely'],
      ),
    );
    const expected: Impact[] = [
      {
        key: 'base',
        change: 'deprecated',
        dependents: { count: 3, keys: ['mid', 'side', 'top'] },
        readers: { count: 2, keys: ['reader', 'dashboards'] },
      },
      {
        key: 'mid',
        change: 'definition_changed',
        dependents: { count: 1, keys: ['top'] },
        readers: { count: 1, keys: ['dashboards'] },
      },
      { key: 'old', change: 'superseded', dependents: none, readers: { count: 1, keys: ['dashboards'] } },
      { key: 'lonely', change: 'removed', dependents: none, readers: none },
    ];
    expect(await impactOf(org, document, 'dry_run=true&prune=true')).toEqual(expected);
    // Without prune the unlisted metric is kept: no impact for it.
    expect(await impactOf(org, document)).toEqual(expected.slice(0, 3));

    // The applied result says the same, as it was before the writes.
    const applied = await putRegistry(t, document, { token: org.token, query: 'prune=true' });
    expect(applied.statusCode, applied.body).toBe(200);
    expect(applied.json().data).toMatchObject({ applied: true, impact: expected });
    // Applied again: nothing changes, nothing is impacted (the supersession is there already).
    expect(await impactOf(org, document, 'prune=true')).toEqual([]);
  });

  it('a metric with several changes is listed once, with the strongest; a plan without such changes has none', async () => {
    const { org, metrics } = await lineageOrg();
    const both = doc(
      org.slug,
      changed(metrics, [released('base', { lifecycle_status: 'DEPRECATED', filters: ['region = EU'] })]),
    );
    expect(await impactOf(org, both)).toEqual([
      {
        key: 'base',
        change: 'deprecated',
        dependents: { count: 3, keys: ['mid', 'side', 'top'] },
        readers: none,
      },
    ]);
    const harmless = doc(
      org.slug,
      changed(metrics, [released('base', { tags: ['finance'] }), released('extra'), released('mid', { name: 'Mid' })]),
    );
    expect(await impactOf(org, harmless)).toEqual([]);
    // A metric deprecated already and kept so is no new deprecation.
    const deprecated = doc(org.slug, changed(metrics, [released('lonely', { lifecycle_status: 'DEPRECATED' })]));
    expect(await impactOf(org, deprecated, '')).toEqual([
      { key: 'lonely', change: 'deprecated', dependents: none, readers: none },
    ]);
    expect(await impactOf(org, deprecated)).toEqual([]);
  });

  it('dependents are counted once, through any depth, and the first 10 keys are named', async () => {
    const org = await newTeamOrg(t.database.prisma, 'impact-wide');
    const keys = Array.from({ length: 14 }, (_, i) => `d${String(i).padStart(2, '0')}`);
    const metrics = [released('root'), ...keys.map((key) => released(key))];
    expect((await putRegistry(t, doc(org.slug, metrics), { token: org.token })).statusCode).toBe(200);
    const ids = new Map(
      (await t.database.prisma.metric.findMany({ where: { orgId: org.id } })).map((row) => [row.key, row.id]),
    );
    // d00 and d01 on root; every later one on the two before it (a diamond at each level).
    const edges = keys.flatMap((key, i) =>
      (i < 2 ? ['root'] : [keys[i - 1] as string, keys[i - 2] as string]).map((input) => [key, input]),
    );
    for (const [metric, input] of edges) {
      await t.database.prisma.$executeRaw`
        INSERT INTO metric_input (metric_id, input_metric_id, position)
        VALUES (${ids.get(metric as string)}::uuid, ${ids.get(input as string)}::uuid, 0)`;
    }
    const document = doc(org.slug, changed(metrics, [released('root', { lifecycle_status: 'DEPRECATED' })]));
    expect(await impactOf(org, document)).toEqual([
      { key: 'root', change: 'deprecated', dependents: { count: 14, keys: keys.slice(0, 10) }, readers: none },
    ]);
  });

  it('is read in two statements, for one impacted metric or many', async () => {
    const { org, metrics } = await lineageOrg();
    async function impactStatements(changes: DocMetric[]): Promise<number> {
      const parsed = parseRegistryDocument(doc(org.slug, changed(metrics, changes)));
      if (!parsed.ok) throw new Error('the document is not valid');
      const { result, statements } = await recordStatements(() =>
        applyRegistryDocument(t.database.prisma, org.id, parsed.document, {
          dryRun: true,
          trust: { staleValidationDays: 30 },
        }),
      );
      expect(result.impact).toHaveLength(changes.length);
      // The impact's own statements: the walk down the inputs and the readers (the plan reads inputs too).
      return statements.filter((statement) => /WITH RECURSIVE dependent|metric_usage/.test(statement.sql)).length;
    }
    const deprecate = (key: string) => released(key, { lifecycle_status: 'DEPRECATED' });
    expect(await impactStatements([deprecate('base')])).toBe(2);
    expect(await impactStatements(['base', 'mid', 'top', 'side', 'lonely', 'old'].map(deprecate))).toBe(2);
  });
});
