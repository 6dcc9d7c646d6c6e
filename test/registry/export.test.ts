/**
 * Export and round trip (issue 35): GET /api/registry and registry:export
 * give the organization's registry as a document that, applied back, plans
 * nothing: a hand-written document with every field a document carries, and
 * every shared dbt and OSI fixture imported, exported as a registry document
 * and as OSI (valid against the Apache Ossie 0.2.0.dev0 schema), and applied
 * back. The shared fixtures' tests skip where ../shared is absent.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { addUser } from '../../src/admin/users.js';
import { runCli } from '../../src/cli-commands.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { HOST, newTeamOrg, planOf, putRegistry, type RegistryDoc, type TeamOrg, totals } from './support.js';

const shared = new URL('../../../shared/fixtures/', import.meta.url);
const hasFixtures = existsSync(shared);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const getExport = (org: TeamOrg, query = '', auth: Record<string, string> = { authorization: `Bearer ${org.token}` }) =>
  t.inject({ method: 'GET', url: `/api/registry${query}`, headers: { host: HOST, ...auth } });

/** Applies `body` as a dry run and expects every metric unchanged and nothing else. */
async function expectNoChange(org: TeamOrg, body: string, count: number, format = 'registry') {
  const res = await putRegistry(t, body, {
    token: org.token,
    query: `dry_run=true&format=${format}`,
    contentType: 'application/json',
  });
  const plan = planOf(res);
  expect(plan.plan.filter((entry) => entry.result !== 'unchanged')).toEqual([]);
  expect(plan.totals).toEqual(totals({ unchanged: count }));
  expect((res.json() as { data: { trust_policy: string } }).data.trust_policy).toBe('unchanged');
}

/** A document with every field a metric carries, set to something other than its default. */
function fullDocument(org: TeamOrg, approver: string): RegistryDoc {
  return {
    organization: org.slug,
    metrics: [
      {
        key: 'net_revenue',
        name: 'Net Revenue',
        description: 'Revenue after refunds.',
        project: 'Finance',
        domain: 'Revenue',
        owner_team: 'Finance Analytics',
        owner_display_name: 'Fiona',
        metric_type: 'base',
        lifecycle_status: 'APPROVED',
        definition_version: '2.0.0',
        policy_tier: 'tier_1',
        scope: 'domain_canonical',
        tags: ['finance', 'board'],
        aliases: ['NR'],
        concept_name: 'revenue',
        template_name: 'sum',
        sql_expression: 'SUM(amount) - SUM(refunds)',
        grains: ['day', 'month'],
        default_grain: 'month',
        dimensions: [{ name: 'region', type: 'categorical' }],
        filters: ["status = 'paid'"],
        source_refs: [{ table: 'analytics.orders', dataset: 'orders' }],
        expression: { op: 'minus' },
        dependencies: { measures: ['amount'] },
        business_definition: {
          included: 'Paid orders.',
          excluded: 'Tests.',
          time_window: 'Calendar month.',
          caveats: 'Late refunds.',
          legacy_description: 'Old text.',
        },
        time_semantics: { timezone: 'UTC' },
        deprecated_framing_rules: [{ rule: 'not gross' }],
        dimension_map: { region: 'geo' },
        column_aliases: { amt: 'amount' },
        consumer_contexts: { board: { note: 'monthly' } },
        policy_examples: [{ q: 'ok' }],
        execution_context: {
          resolved_parameters: { currency: 'EUR' },
          rendered_sql_examples: [{ sql: 'SELECT 1' }],
          latest_closed_period: '2026-10',
        },
        governance: {
          approver_role: 'CFO',
          approver_user: 'fiona',
          approved_at: '2026-01-02',
          effective_from: '2026-01-03T04:05:06.000Z',
          effective_to: null,
          next_review_date: '2027-01-01',
        },
        approval_state: { state: 'approved' },
        versions: [
          { definition_version: '1.0.0', status: 'superseded', released_at: '2025-01-01T00:00:00.000Z' },
          {
            definition_version: '2.0.0',
            status: 'released',
            released_at: '2026-01-01T00:00:00.000Z',
            change_summary: 'Refunds out.',
          },
        ],
        approvals: [
          {
            definition_version: '2.0.0',
            approver_role: 'CFO',
            approver,
            decision: 'approved',
            decided_at: '2026-01-02T00:00:00.000Z',
            comment: 'Fine.',
          },
          {
            definition_version: null,
            approver_role: 'Auditor',
            approver: null,
            decision: 'rejected',
            decided_at: '2025-06-01T00:00:00.000Z',
          },
        ],
        relationships: [{ kind: 'supersedes', target: 'gross_revenue' }],
      },
      {
        key: 'gross_revenue',
        name: 'Gross Revenue',
        description: '',
        project: 'Finance',
        owner_team: 'Finance Analytics',
        sql_expression: 'SUM(amount)',
      },
      {
        key: 'revenue_ratio',
        name: 'Revenue Ratio',
        description: 'Net over gross.',
        project: 'Finance',
        owner_team: 'Finance Analytics',
        metric_type: 'ratio',
        sql_expression: 'net_revenue / gross_revenue',
        inputs: ['net_revenue', 'gross_revenue'],
        relationships: [{ kind: 'related_to', target: 'net_revenue' }],
      },
    ],
  };
}

describe('export of a registry document', () => {
  let org: TeamOrg;
  let document: RegistryDoc;
  beforeAll(async () => {
    org = await newTeamOrg(t.database.prisma, 'export');
    const approver = `approver-${org.slug}@example.com`;
    await addUser(t.database.prisma, { org: org.slug, email: approver, name: 'Ann', role: 'admin' });
    document = {
      ...fullDocument(org, approver),
      trust_policy: { tier_1: { failed_validation: 'do_not_use', stale_after_days: 7 } },
    } as RegistryDoc;
    expect(planOf(await putRegistry(t, document, { token: org.token })).totals.created).toBe(3);
  });

  it('gives back every field, list and the trust policy, and plans nothing applied back', async () => {
    const res = await getExport(org);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const exported = res.json() as RegistryDoc & { trust_policy: unknown };
    expect(exported.organization).toBe(org.slug);
    expect(exported.trust_policy).toEqual({ tier_1: { failed_validation: 'do_not_use', stale_after_days: 7 } });
    expect(exported.metrics.map((metric) => metric.key)).toEqual(['gross_revenue', 'net_revenue', 'revenue_ratio']);
    const given = document.metrics[0] as Record<string, unknown>;
    const net = exported.metrics[1] as Record<string, unknown>;
    for (const [field, value] of Object.entries(given)) {
      if (field === 'versions' || field === 'approvals') continue;
      expect(net[field], field).toEqual(value);
    }
    expect(net.versions).toEqual([
      {
        definition_version: '1.0.0',
        status: 'superseded',
        released_at: '2025-01-01T00:00:00.000Z',
        change_summary: '',
      },
      given.versions && (given.versions as unknown[])[1],
    ]);
    expect(net.approvals).toEqual([
      { ...(given.approvals as Record<string, unknown>[])[1], comment: '' },
      (given.approvals as unknown[])[0],
    ]);
    expect(exported.metrics[2]?.inputs).toEqual(['net_revenue', 'gross_revenue']);
    await expectNoChange(org, res.body, 3);
  });

  it('keeps a changed metric apart: the export after a change plans nothing, the old one plans the change', async () => {
    const before = (await getExport(org)).body;
    const changed = fullDocument(org, `approver-${org.slug}@example.com`);
    (changed.metrics[1] as Record<string, unknown>).description = 'Now described.';
    expect(planOf(await putRegistry(t, changed, { token: org.token })).totals.updated).toBe(1);
    await expectNoChange(org, (await getExport(org)).body, 3);
    const back = planOf(
      await putRegistry(t, before, { token: org.token, query: 'dry_run=true', contentType: 'application/json' }),
    );
    expect(back.plan.find((entry) => entry.key === 'gross_revenue')).toEqual({
      key: 'gross_revenue',
      result: 'updated',
      changed_fields: ['description'],
      changes: [{ field: 'description', from: 'Now described.', to: '' }],
    });
  });

  it('filters by the source that created the metrics', async () => {
    await t.database.prisma.metric.updateMany({
      where: { orgId: org.id, key: 'gross_revenue' },
      data: { source: 'dbt:shop' },
    });
    const dbt = (await getExport(org, '?source=dbt%3Ashop')).json() as RegistryDoc;
    expect(dbt.metrics.map((metric) => metric.key)).toEqual(['gross_revenue']);
    const own = (await getExport(org, '?source=registry')).json() as RegistryDoc;
    expect(own.metrics.map((metric) => metric.key)).toEqual(['net_revenue', 'revenue_ratio']);
    expect(((await getExport(org, '?source=nobody')).json() as RegistryDoc).metrics).toEqual([]);
  });

  it('is for a service token with registry:write or an admin session, and refuses bad parameters', async () => {
    expect((await getExport(org, '', { authorization: `Bearer ${org.key}` })).statusCode).toBe(401);
    expect((await getExport(org, '', {})).statusCode).toBe(401);
    const session = await getExport(org, '', { cookie: `session=${org.ownerSession}` });
    expect(session.statusCode).toBe(200);
    expect((session.json() as RegistryDoc).organization).toBe(org.slug);
    for (const query of ['?format=csv', '?source=', `?source=${'s'.repeat(201)}`, '?page=2']) {
      const res = await getExport(org, query);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error, query).toBeTruthy();
    }
  });

  it('registry:export writes YAML (JSON for .json) that registry:apply applies with nothing to do', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'export-'));
    const run = async (...argv: string[]) => {
      const out: string[] = [];
      const code = await runCli(argv, {
        prisma: t.database.prisma,
        out: (line) => out.push(line),
        err: (line) => out.push(line),
      });
      return { code, out };
    };
    const yaml = await run('registry:export', '--org', org.slug);
    expect(yaml.code).toBe(0);
    expect((parse(yaml.out.join('\n')) as RegistryDoc).metrics).toHaveLength(3);
    const file = join(dir, 'registry.json');
    expect((await run('registry:export', '--org', org.slug, '--out', file)).code).toBe(0);
    expect((JSON.parse(await readFile(file, 'utf8')) as RegistryDoc).metrics).toHaveLength(3);
    const yamlFile = join(dir, 'registry.yaml');
    await run('registry:export', '--org', org.slug, '--out', yamlFile);
    const check = await run('registry:apply', '--org', org.slug, yamlFile, '--check');
    expect(check.out.at(-1)).toBe('No drift.');
    expect(check.code).toBe(0);
    const osi = await run('registry:export', '--org', org.slug, '--format', 'osi', '--source', 'registry');
    expect(
      (JSON.parse(osi.out.join('\n')) as { semantic_model: { metrics: unknown[] }[] }).semantic_model[0]?.metrics,
    ).toHaveLength(2);
    expect((await run('registry:export', '--org', org.slug, '--format', 'csv')).code).toBe(2);
  });
});

describe.skipIf(!hasFixtures)('round trip of every shared fixture', () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const osiSchema = hasFixtures ? readFileSync(new URL('osi/ossie.osi-schema.v0.2.0.dev0.json', shared), 'utf8') : '{}';
  const validateOsi = ajv.compile(JSON.parse(osiSchema));
  const fixtures = hasFixtures
    ? [
        ...readdirSync(new URL('dbt/', shared))
          .filter((name) => name.endsWith('.semantic_manifest.json'))
          .map((name) => ({ format: 'dbt', path: `dbt/${name}`, type: 'application/json' })),
        ...readdirSync(new URL('osi/', shared))
          .filter((name) => name.endsWith('.yaml'))
          .map((name) => ({ format: 'osi', path: `osi/${name}`, type: 'application/yaml' })),
      ]
    : [];

  it.each(fixtures)(
    '$path: import, export (registry and OSI), apply back: nothing to do',
    async ({ format, path, type }) => {
      const org = await newTeamOrg(t.database.prisma, 'trip');
      const imported = planOf(
        await putRegistry(t, readFileSync(new URL(path, shared), 'utf8'), {
          token: org.token,
          query: `format=${format}`,
          contentType: type,
        }),
      );
      const count = imported.totals.created;
      expect(count).toBeGreaterThan(0);

      const registry = await getExport(org);
      expect(registry.statusCode).toBe(200);
      await expectNoChange(org, registry.body, count);

      const osi = await getExport(org, '?format=osi');
      expect(osi.statusCode).toBe(200);
      const osiDocument = osi.json() as { semantic_model: { metrics: { name: string }[] }[] };
      expect(validateOsi(osiDocument), JSON.stringify(validateOsi.errors?.slice(0, 3))).toBe(true);
      expect(osiDocument.semantic_model.flatMap((model) => model.metrics).length).toBe(count);
      await expectNoChange(org, osi.body, count, 'osi');

      // OSI -> registry -> OSI: another organization made from the OSI export exports the same OSI and registry.
      const other = await newTeamOrg(t.database.prisma, 'trip');
      const applied = planOf(
        await putRegistry(t, osi.body, { token: other.token, query: 'format=osi', contentType: 'application/json' }),
      );
      expect(applied.totals).toEqual(totals({ created: count }));
      expect((await getExport(other, '?format=osi')).json()).toEqual(osiDocument);
      const again = (await getExport(other)).json() as RegistryDoc;
      expect(again.metrics).toEqual((registry.json() as RegistryDoc).metrics);
    },
  );
});
