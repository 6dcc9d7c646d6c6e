/**
 * Many sources, one registry (docs/registry.md#sources): two dbt projects and
 * a registry document applied in turn, in every order and again, over a
 * listening socket; prune per source; a steward's governance surviving the
 * nightly import; conflicts named, refused and forced; plans with values;
 * `check=true` and `registry:apply --check --url`.
 */
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli-commands.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, type RegistryDoc, type TeamOrg } from './support.js';

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await startTestApp();
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(() => t.close());

const prisma = () => t.database.prisma;

/**
 * A dbt semantic manifest of `project` (its name where dbt's manifest.json
 * writes it, `metadata.project_name`) with one semantic model and a simple
 * metric per name, shaped as the shared fixtures' (target/semantic_manifest.json).
 */
function manifest(project: string, metrics: { name: string; description?: string; governance?: object }[]) {
  const model = `${project}_orders`;
  return {
    metadata: { project_name: project },
    semantic_models: [
      {
        name: model,
        defaults: { agg_time_dimension: 'ordered_at' },
        description: `Orders of ${project}.`,
        node_relation: {
          alias: model,
          schema_name: 'marts',
          database: 'analytics',
          relation_name: `"analytics"."marts"."${model}"`,
        },
        primary_entity: null,
        entities: [{ name: 'order_line', type: 'primary', expr: 'order_line_id', config: { meta: {} } }],
        measures: [],
        dimensions: [
          {
            name: 'ordered_at',
            type: 'time',
            is_partition: false,
            type_params: { time_granularity: 'day', validity_params: null },
            expr: 'ordered_at',
            config: { meta: {} },
          },
          { name: 'region', type: 'categorical', is_partition: false, expr: 'region', config: { meta: {} } },
        ],
        label: null,
        metadata: null,
        config: { meta: {} },
      },
    ],
    metrics: metrics.map((metric) => ({
      name: metric.name,
      description: metric.description ?? `The ${metric.name} of ${project}.`,
      type: 'simple',
      type_params: {
        expr: 'line_total',
        input_measures: [],
        join_to_timespine: false,
        is_private: false,
        metric_aggregation_params: {
          semantic_model: model,
          agg: 'sum',
          agg_params: null,
          agg_time_dimension: 'ordered_at',
          non_additive_dimension: null,
          expr: 'line_total',
        },
      },
      filter: null,
      metadata: null,
      label: null,
      config: { meta: metric.governance ? { governance: metric.governance } : {} },
      time_granularity: null,
    })),
    project_configuration: { time_spine_table_configurations: [], metadata: null, time_spines: [] },
    saved_queries: [],
  };
}

interface Entry {
  key: string;
  result: string;
  changed_fields: string[];
  changes?: { field: string; from: unknown; to: unknown }[];
  conflicts?: { field: string; owner: string }[];
}

async function put(org: TeamOrg, body: unknown, query = '') {
  const response = await fetch(`${base}/api/registry${query}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${org.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as { data: { plan: Entry[] } & Record<string, unknown> } & Record<string, unknown>,
  };
}

const alpha = manifest('alpha', [{ name: 'trips_count' }, { name: 'trip_minutes' }]);
const beta = manifest('beta', [{ name: 'riders' }]);

/** The steward's document: its own metric, and governance over dbt's trips_count (repeating dbt's required fields). */
function stewardDoc(org: TeamOrg): RegistryDoc {
  return doc(org.slug, [
    docMetric('board_kpi', { lifecycle_status: 'RELEASED' }),
    {
      key: 'trips_count',
      name: 'Trips Count',
      description: 'The trips_count of alpha.',
      sql_expression: 'SUM(line_total)',
      project: 'dbt',
      lifecycle_status: 'RELEASED',
      policy_tier: 'tier_1',
    },
  ]);
}

const inputs = (org: TeamOrg) =>
  ({
    alpha: [alpha, '?format=dbt'],
    beta: [beta, '?format=dbt'],
    registry: [stewardDoc(org), ''],
  }) as const;

const ORDERS = [
  ['alpha', 'beta', 'registry'],
  ['alpha', 'registry', 'beta'],
  ['beta', 'alpha', 'registry'],
  ['beta', 'registry', 'alpha'],
  ['registry', 'alpha', 'beta'],
  ['registry', 'beta', 'alpha'],
] as const;

describe('two dbt projects and a registry document', () => {
  it.each(ORDERS)('applied %s, %s, %s and again: nothing planned the second time', async (...order) => {
    const org = await newTeamOrg(prisma(), 'sources');
    for (const name of order) {
      const [body, query] = inputs(org)[name];
      const first = await put(org, body, query);
      expect(first.status, JSON.stringify(first.body)).toBe(200);
    }
    for (const name of order) {
      const [body, query] = inputs(org)[name];
      const again = await put(org, body, query);
      expect(again.status).toBe(200);
      const changed = again.body.data.plan.filter((entry) => !['unchanged', 'absent'].includes(entry.result));
      expect(changed, `${name} again`).toEqual([]);
    }
    const trips = await prisma().metric.findFirstOrThrow({ where: { orgId: org.id, key: 'trips_count' } });
    // The steward's governance, whoever came first.
    expect([trips.lifecycleStatus, trips.policyTier]).toEqual(['RELEASED', 'tier_1']);
    const sources = await prisma().metric.findMany({ where: { orgId: org.id }, select: { key: true, source: true } });
    const byKey = Object.fromEntries(sources.map((m) => [m.key, m.source]));
    expect(byKey.riders).toBe('dbt:beta');
    expect(byKey.board_kpi).toBe('registry');
    expect(byKey.trips_count).toBe(order.indexOf('alpha') < order.indexOf('registry') ? 'dbt:alpha' : 'registry');
  });

  it("pruning one project's import removes none of the others' metrics", async () => {
    const org = await newTeamOrg(prisma(), 'prune');
    for (const [body, query] of Object.values(inputs(org))) expect((await put(org, body, query)).status).toBe(200);
    // alpha drops trip_minutes: only it goes.
    const fewer = manifest('alpha', [{ name: 'trips_count' }]);
    const pruned = await put(org, fewer, '?format=dbt&prune=true');
    expect(pruned.status, JSON.stringify(pruned.body)).toBe(200);
    const removed = pruned.body.data.plan.filter((entry) => entry.result === 'removed').map((entry) => entry.key);
    expect(removed).toEqual(['trip_minutes']);
    const absent = pruned.body.data.plan.filter((entry) => entry.result === 'absent').map((entry) => entry.key);
    expect(absent.sort()).toEqual(['board_kpi', 'riders']);
    const keys = (await prisma().metric.findMany({ where: { orgId: org.id }, select: { key: true } })).map(
      (m) => m.key,
    );
    expect(keys.sort()).toEqual(['board_kpi', 'riders', 'trips_count']);
  });

  it("a steward's lifecycle survives the nightly import; a field dbt owns set otherwise is a conflict, refused then forced", async () => {
    const org = await newTeamOrg(prisma(), 'steward');
    expect((await put(org, alpha, '?format=dbt')).status).toBe(200);
    const steward = stewardDoc(org);
    expect((await put(org, steward)).status).toBe(200);
    const nightly = await put(org, alpha, '?format=dbt');
    expect(nightly.body.data.plan.find((entry) => entry.key === 'trips_count')?.result).toBe('unchanged');

    // The steward rewrites dbt's description: a conflict with dbt:alpha, named in the dry run's plan.
    const conflicting = structuredClone(steward);
    (conflicting.metrics[1] as Record<string, unknown>).description = 'Completed trips only.';
    const dry = await put(org, conflicting, '?dry_run=true');
    expect(dry.status).toBe(200);
    expect(dry.body.data.plan.find((entry) => entry.key === 'trips_count')?.conflicts).toEqual([
      { field: 'description', owner: 'dbt:alpha' },
    ]);
    const refused = await put(org, conflicting);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('metrics[1].description');
    expect(JSON.stringify(refused.body)).toContain('force_conflicts=true');
    const forced = await put(org, conflicting, '?force_conflicts=true');
    expect(forced.status, JSON.stringify(forced.body)).toBe(200);
    const trips = await prisma().metric.findFirstOrThrow({ where: { orgId: org.id, key: 'trips_count' } });
    expect(trips.description).toBe('Completed trips only.');
    expect((trips.fieldSources as Record<string, string>).description).toBe('registry');
    // What admins read of it: the creating source, and the owner of each field a source set.
    const sources = await fetch(`${base}/api/metrics/${trips.id}/sources`, {
      headers: { authorization: `Bearer ${org.token}` },
    });
    expect(sources.status).toBe(200);
    const { data } = (await sources.json()) as {
      data: { source: string; fields: { field: string; source: string }[] };
    };
    expect(data.source).toBe('dbt:alpha');
    const owners = Object.fromEntries(data.fields.map(({ field, source }) => [field, source]));
    expect(owners).toMatchObject({
      description: 'registry',
      lifecycle_status: 'registry',
      policy_tier: 'registry',
      sql_expression: 'dbt:alpha',
    });
    const other = await newTeamOrg(prisma(), 'other');
    const hidden = await fetch(`${base}/api/metrics/${trips.id}/sources`, {
      headers: { authorization: `Bearer ${other.token}` },
    });
    expect(hidden.status).toBe(404);
    // dbt now conflicts in turn when it sets its own description again.
    const back = await put(org, alpha, '?format=dbt');
    expect(back.status).toBe(400);
    expect(JSON.stringify(back.body)).toContain('source \\"registry\\" owns this field');
  });

  it('source= names the source; a bad name is refused with its place', async () => {
    const org = await newTeamOrg(prisma(), 'named');
    const named = await put(org, alpha, '?format=dbt&source=dbt:nightly');
    expect(named.body.data.source).toBe('dbt:nightly');
    const bad = await put(org, alpha, `?format=dbt&source=${encodeURIComponent('Not A Source')}`);
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('source');
    const inDocument = await put(org, { ...doc(org.slug, [docMetric('x')]), source: 'BAD' });
    expect(inDocument.status).toBe(400);
  });
});

describe('plans that show values', () => {
  it('each changed field with its old and new value, long ones shortened with their length', async () => {
    const org = await newTeamOrg(prisma(), 'values');
    const long = 'x'.repeat(5000);
    expect((await put(org, doc(org.slug, [docMetric('m')]))).status).toBe(200);
    const changed = await put(
      org,
      doc(org.slug, [docMetric('m', { name: 'Renamed', sql_expression: long, lifecycle_status: 'RELEASED' })]),
      '?dry_run=true',
    );
    const entry = changed.body.data.plan[0] as Entry;
    expect(entry.changes).toEqual([
      { field: 'name', from: 'Metric m', to: 'Renamed' },
      { field: 'lifecycle_status', from: 'DRAFT', to: 'RELEASED' },
      { field: 'sql_expression', from: 'SUM(amount)', to: `${'x'.repeat(200)}… (5000 characters)` },
    ]);
  });
});

describe('check=true', () => {
  it('answers in_sync and writes nothing', async () => {
    const org = await newTeamOrg(prisma(), 'check');
    const document = doc(org.slug, [docMetric('m')]);
    const drift = await put(org, document, '?check=true');
    expect(drift.status).toBe(200);
    expect(drift.body.data).toMatchObject({ in_sync: false, applied: false });
    expect(await prisma().metric.count({ where: { orgId: org.id } })).toBe(0);
    expect((await put(org, document)).status).toBe(200);
    expect((await put(org, document, '?check=true')).body.data.in_sync).toBe(true);
  });
});

describe('registry:apply --check --url', () => {
  async function cli(args: string[], token: string | undefined) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(args, {
      prisma: async () => {
        throw new Error('--url must not open the database');
      },
      out: (line) => out.push(line),
      err: (line) => err.push(line),
      serviceToken: token,
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('exits 0 in sync, 1 on drift, 2 on errors', async () => {
    const org = await newTeamOrg(prisma(), 'cli-url');
    const file = join(tmpdir(), `${org.slug}.json`);
    await writeFile(file, JSON.stringify(doc(org.slug, [docMetric('m')])));
    const check = (token: string | undefined, url = base, ...more: string[]) =>
      cli(['registry:apply', '--check', '--url', url, file, ...more], token);

    const drift = await check(org.token);
    expect(drift.code, drift.err).toBe(1);
    expect(drift.out).toContain('created');
    expect(await prisma().metric.count({ where: { orgId: org.id } })).toBe(0);
    expect((await put(org, doc(org.slug, [docMetric('m')]))).status).toBe(200);
    expect((await check(org.token)).code).toBe(0);
    expect((await check(org.token, base, '--org', org.slug)).code).toBe(0);
    expect((await check(org.token, base, '--org', 'another-org')).code).toBe(2);

    expect((await check('mgt_not-a-token')).code).toBe(2);
    expect((await check(undefined)).code).toBe(2);
    expect((await check(org.token, 'http://127.0.0.1:1')).code).toBe(2);
    await writeFile(file, JSON.stringify(doc('no-such-org', [docMetric('m')])));
    expect((await check(org.token)).code).toBe(2);
  });
});
