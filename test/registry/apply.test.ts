/**
 * PUT /api/registry (issue 24, registry-document.md "Apply"): a document is
 * the truth for what it lists. Created, updated (with the changed fields),
 * unchanged, absent and removed, exactly; dry runs write nothing; a second
 * apply of the same document writes nothing (no new updated_at, ETag or
 * metrics_version); versions, approvals and relationships are made to match
 * the document's lists; ids are derived (UUIDv5 of the organization id and
 * the key); search follows at once. Every test makes its own organization
 * the way a team would (no fixture), except where a fixture's hand-made
 * metrics are the point.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/database.js';
import { expectError, JSON_CONTENT_TYPE } from '../rest/expectations.js';
import {
  type DocMetric,
  doc,
  docMetric,
  metricsVersion,
  newTeamOrg,
  planOf,
  postValidations,
  putRegistry,
  type RegistryDoc,
  type Res,
  storedKeys,
  type TeamOrg,
  totals,
  toYaml,
  uuidV5,
} from './support.js';

// A registry that existed before registry documents: hand-made metrics with
// facts around them (validations, threads), which an apply keeps untouched
// unless it prunes.
const r = registry();
const loaded = r.org();
const handMade = loaded.metric({ key: 'hand_made', name: 'Hand Made' });
loaded.validation(handMade, { ran_at: '2026-01-05T00:00:00Z' });
loaded.message(loaded.thread(handMade, { intent: 'objection' }), { body: 'Does not reconcile.' });
const alsoHandMade = loaded.metric({ key: 'also_hand_made', name: 'Also Hand Made' });
// The same organization (same id, slug and owner) loaded into two databases.
const twin = r.org();
twin.user({ email: 'approver@twin.example', role: 'admin' });

const loadedKey = loaded.key().secret;

let t: TestApp;
let loadedToken: string;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
  const scopes = ['registry:write'];
  loadedToken = (await createServiceToken(t.database.prisma, { org: loaded.slug, name: 'CI', scopes })).secret;
});
afterAll(() => t.close());

const prisma = () => t.database.prisma;

const apply = (org: { token: string }, body: RegistryDoc | string, query?: string) =>
  putRegistry(t, body, { token: org.token, query });

async function applied(org: { token: string }, body: RegistryDoc | string, query?: string) {
  return planOf(await apply(org, body, query));
}

const idOf = (org: { id: string }, key: string) => uuidV5(org.id, key);

function ok(res: Res) {
  expect(res.statusCode, res.body).toBe(200);
  return res;
}

async function detail(org: TeamOrg, key: string) {
  return ok(await t.get(`/api/v1/metrics/${idOf(org, key)}`, org.key)).json().data;
}

async function contract(org: TeamOrg, key: string) {
  return ok(await t.get(`/api/v1/metrics/${idOf(org, key)}/contract`, org.key)).json().data;
}

async function etag(url: string, key: string): Promise<string> {
  const res = ok(await t.get(url, key));
  const tag = res.headers.etag;
  expect(tag, url).toMatch(/^"[A-Za-z0-9_-]+"$/);
  return String(tag);
}

async function searchIds(org: TeamOrg, q: string): Promise<string[]> {
  const res = ok(await t.get(`/api/v1/metrics?q=${encodeURIComponent(q)}&pageSize=100`, org.key));
  return res.json().data.map((item: { id: string }) => item.id);
}

async function listTotal(org: TeamOrg): Promise<number> {
  return ok(await t.get('/api/v1/metrics?pageSize=100', org.key)).json().pagination.total;
}

describe('derived ids', () => {
  it('the UUIDv5 of these tests is the standard one (RFC 9562; Python uuid5(NAMESPACE_DNS, "python.org"))', () => {
    expect(uuidV5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'python.org')).toBe('886313e1-3b8a-5372-9b90-0c9aee199e5d');
  });

  it('a created metric’s id is the UUIDv5 of the organization id and its key, and re-applying keeps it', async () => {
    const org = await newTeamOrg(prisma());
    await applied(org, doc(org.slug, [docMetric('net_revenue'), docMetric('churn.rate-v2')]));
    expect(await prisma().metric.findMany({ where: { orgId: org.id }, select: { id: true, key: true } })).toEqual(
      expect.arrayContaining([
        { id: uuidV5(org.id, 'net_revenue'), key: 'net_revenue' },
        { id: uuidV5(org.id, 'churn.rate-v2'), key: 'churn.rate-v2' },
      ]),
    );
    await applied(org, doc(org.slug, [docMetric('net_revenue', { name: 'Renamed' }), docMetric('churn.rate-v2')]));
    expect((await detail(org, 'net_revenue')).metric).toMatchObject({ id: idOf(org, 'net_revenue'), name: 'Renamed' });
  });

  it('the same key in two organizations gets two ids', async () => {
    const [a, b] = [await newTeamOrg(prisma()), await newTeamOrg(prisma())];
    await applied(a, doc(a.slug, [docMetric('net_revenue')]));
    await applied(b, doc(b.slug, [docMetric('net_revenue')]));
    expect(idOf(a, 'net_revenue')).not.toBe(idOf(b, 'net_revenue'));
    expect((await detail(a, 'net_revenue')).metric.org_id).toBe(a.id);
    expect((await detail(b, 'net_revenue')).metric.org_id).toBe(b.id);
  });

  it('the same document applied to the same organization in two databases gives every record the same id', async () => {
    const other = await createTestDatabase();
    try {
      await loadFixture(other.prisma, structuredClone({ organizations: [twin.json] }));
      const otherApp = await buildTestInstance(other);
      try {
        const document = doc(
          twin.slug,
          [
            docMetric('nrr', {
              domain: 'Revenue',
              versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-02-15T00:00:00Z' }],
              approvals: [
                {
                  definition_version: '1.0.0',
                  approver_role: 'finance_controller',
                  approver: 'approver@twin.example',
                  decision: 'approved',
                  decided_at: '2026-02-14T10:00:00Z',
                },
              ],
              relationships: [{ kind: 'related_to', target: 'grr' }],
            }),
            docMetric('grr'),
          ],
          { project: 'Twin Project' },
        );
        const records = async (app: { inject: TestApp['inject'] }, db: typeof other.prisma) => {
          const token = await createServiceToken(db, { org: twin.slug, name: 'CI', scopes: ['registry:write'] });
          expect(planOf(await putRegistry(app, document, { token: token.secret })).totals).toEqual(
            totals({ created: 2 }),
          );
          const metrics = await db.metric.findMany({
            where: { orgId: twin.id },
            select: {
              id: true,
              key: true,
              projectId: true,
              domainId: true,
              versions: { select: { id: true } },
              approvals: { select: { id: true, versionId: true } },
              relationships: { select: { targetMetricId: true } },
            },
            orderBy: { key: 'asc' },
          });
          const projects = await db.project.findMany({ where: { orgId: twin.id }, orderBy: { name: 'asc' } });
          const domains = await db.domain.findMany({ where: { orgId: twin.id }, orderBy: { name: 'asc' } });
          return { metrics, projects, domains };
        };
        const here = await records(t, prisma());
        const there = await records(otherApp, other.prisma);
        expect(there).toEqual(here);
        expect(here.metrics.map((metric) => metric.id)).toEqual([uuidV5(twin.id, 'grr'), uuidV5(twin.id, 'nrr')]);
      } finally {
        await otherApp.close();
      }
    } finally {
      await other.drop();
    }
  });
});

describe('created', () => {
  it('creates every listed metric with the document’s defaults, then each field’s own', async () => {
    const org = await newTeamOrg(prisma());
    const res = ok(
      await apply(
        org,
        doc(org.slug, [
          docMetric('bare'),
          docMetric('grained', { grains: ['month', 'quarter'], domain: 'Finance', metric_type: 'derived' }),
        ]),
      ),
    );
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    expect(res.json()).toMatchObject({
      data: {
        plan: [
          { key: 'bare', result: 'created', changed_fields: [] },
          { key: 'grained', result: 'created', changed_fields: [] },
        ],
        totals: totals({ created: 2 }),
      },
    });
    const bare = await detail(org, 'bare');
    const [project] = await prisma().project.findMany({ where: { orgId: org.id } });
    const finance = await prisma().domain.findFirstOrThrow({ where: { orgId: org.id, name: 'Finance' } });
    expect(project?.name).toBe('Core Analytics');
    expect(bare.metric).toEqual({
      id: idOf(org, 'bare'),
      org_id: org.id,
      project_id: project?.id,
      metric_type: 'base',
      key: 'bare',
      name: 'Metric bare',
      description: 'About bare.',
      definition_version: '1.0.0',
      status: 'draft',
      policy_tier: 'tier_3',
      owner_team: 'Finance Analytics',
      owner_display_name: null,
      tags: [],
      aliases: [],
      concept_name: 'bare',
      template_name: 'base',
      sql_expression: 'SUM(amount)',
      grains: [],
      default_grain: '',
      dimensions: [],
      filters: [],
      source_refs: [],
      expression: null,
      dependencies: null,
      lifecycle_status: 'DRAFT',
      scope: 'exploratory',
      domain_id: null,
      created_at: bare.metric.updated_at,
      updated_at: expect.stringMatching(/Z$/),
    });
    expect(bare).toMatchObject({ relationships: [], approvals: [], versionHistory: [] });
    expect((await detail(org, 'grained')).metric).toMatchObject({
      metric_type: 'derived',
      template_name: 'derived',
      grains: ['month', 'quarter'],
      default_grain: 'month',
      domain_id: finance.id,
      project_id: project?.id,
    });
    expect(await prisma().project.count({ where: { orgId: org.id } })).toBe(1);
  });

  it('a field a metric gives wins over `defaults`', async () => {
    const org = await newTeamOrg(prisma());
    await applied(
      org,
      doc(
        org.slug,
        [docMetric('own', { owner_team: 'Growth', project: 'Growth Project', lifecycle_status: 'RELEASED' })],
        {
          lifecycle_status: 'CANDIDATE',
          policy_tier: 'tier_2',
        },
      ),
    );
    const { metric } = await detail(org, 'own');
    expect(metric).toMatchObject({ owner_team: 'Growth', lifecycle_status: 'RELEASED', policy_tier: 'tier_2' });
    const project = await prisma().project.findUniqueOrThrow({ where: { id: metric.project_id } });
    expect(project.name).toBe('Growth Project');
  });

  it('an empty document creates nothing and says so', async () => {
    const org = await newTeamOrg(prisma());
    expect(await applied(org, { organization: org.slug, metrics: [] })).toEqual({ plan: [], totals: totals({}) });
  });

  it('YAML as a team writes it: unquoted timestamps and versions, the spec’s example', async () => {
    const org = await newTeamOrg(prisma());
    const yaml = `organization: ${org.slug}
defaults:
  project: Core Analytics
  domain: Finance
  owner_team: Finance Analytics
metrics:
  - key: net_revenue_retention
    name: Net Revenue Retention
    description: Revenue kept from last year's customers, expansion included.
    sql_expression: SUM(arr_end_of_period) / NULLIF(SUM(arr_start_of_period), 0)
    lifecycle_status: RELEASED
    definition_version: 3.0.0
    policy_tier: tier_1
    scope: enterprise_canonical
    aliases: [NRR, net dollar retention]
    grains: [month, quarter, year]
    default_grain: month
    business_definition:
      included: Subscription revenue of customers active twelve months ago.
      excluded: One-off services and refunds issued after period close.
      time_window: trailing twelve months, at month end
    versions:
      - definition_version: 3.0.0
        status: released
        released_at: 2026-02-15T00:00:00Z
    approvals:
      - definition_version: 3.0.0
        approver_role: finance_controller
        approver: ${org.ownerEmail}
        decision: approved
        decided_at: 2026-02-14T10:00:00Z
    relationships:
      - kind: supersedes
        target: net_revenue_retention_legacy
  - key: net_revenue_retention_legacy
    name: Net Revenue Retention (legacy)
    description: The old definition.
    sql_expression: SUM(arr_end) / SUM(arr_start)
    lifecycle_status: DEPRECATED
`;
    expect(await applied(org, yaml)).toEqual({
      plan: [
        { key: 'net_revenue_retention', result: 'created', changed_fields: [] },
        { key: 'net_revenue_retention_legacy', result: 'created', changed_fields: [] },
      ],
      totals: totals({ created: 2 }),
    });
    const nrr = await detail(org, 'net_revenue_retention');
    const versionId = uuidV5(idOf(org, 'net_revenue_retention'), 'version:3.0.0');
    expect(nrr.versionHistory).toEqual([
      {
        id: expect.any(String),
        definition_version: '3.0.0',
        status: 'released',
        released_at: '2026-02-15T00:00:00.000Z',
        change_summary: '',
      },
    ]);
    expect(nrr.approvals).toEqual([
      {
        id: expect.any(String),
        version_id: nrr.versionHistory[0].id,
        approver_user_id: org.ownerId,
        approver_role: 'finance_controller',
        decision: 'approved',
        decided_at: '2026-02-14T10:00:00.000Z',
        comment: '',
      },
    ]);
    expect(nrr.versionHistory[0].id).toBe(versionId);
    expect(nrr.relationships).toEqual([
      {
        kind: 'supersedes',
        target_metric_id: idOf(org, 'net_revenue_retention_legacy'),
        target: {
          key: 'net_revenue_retention_legacy',
          name: 'Net Revenue Retention (legacy)',
          lifecycle_status: 'DEPRECATED',
        },
      },
    ]);
    const nrrContract = await contract(org, 'net_revenue_retention');
    expect(nrrContract).toMatchObject({
      business_definition: {
        included: 'Subscription revenue of customers active twelve months ago.',
        excluded: 'One-off services and refunds issued after period close.',
        time_window: 'trailing twelve months, at month end',
        caveats: '',
        legacy_description: '',
      },
      current_approved_version: { id: versionId, definition_version: '3.0.0', released_at: '2026-02-15T00:00:00.000Z' },
      last_validated_at: null,
    });
    expect((await contract(org, 'net_revenue_retention_legacy')).trust).toEqual({
      verdict: 'do_not_use',
      reasons: ['deprecated', 'superseded'],
      preferred_metric_id: idOf(org, 'net_revenue_retention'),
      untrusted_inputs: [],
    });
  });
});

describe('updated and unchanged', () => {
  it('updates exactly the metrics that differ and names their changed fields; a field left out takes its default', async () => {
    const org = await newTeamOrg(prisma());
    await applied(
      org,
      doc(org.slug, [
        docMetric('nrr', {
          name: 'NRR',
          policy_tier: 'tier_1',
          aliases: ['NRR'],
          business_definition: { included: 'a' },
        }),
        docMetric('steady'),
      ]),
    );
    const before = { nrr: await detail(org, 'nrr'), steady: await detail(org, 'steady') };
    const plan = await applied(
      org,
      doc(org.slug, [
        docMetric('nrr', {
          name: 'Net Revenue Retention',
          lifecycle_status: 'RELEASED',
          aliases: ['NRR', 'net dollar retention'],
          business_definition: { included: 'a', excluded: 'b' },
        }),
        docMetric('steady'),
      ]),
    );
    expect(plan).toEqual({
      plan: [
        {
          key: 'nrr',
          result: 'updated',
          changed_fields: ['name', 'lifecycle_status', 'policy_tier', 'aliases', 'business_definition'],
          changes: expect.any(Array),
        },
        { key: 'steady', result: 'unchanged', changed_fields: [] },
      ],
      totals: totals({ updated: 1, unchanged: 1 }),
    });
    const after = { nrr: await detail(org, 'nrr'), steady: await detail(org, 'steady') };
    expect(after.nrr.metric).toMatchObject({
      name: 'Net Revenue Retention',
      lifecycle_status: 'RELEASED',
      policy_tier: 'tier_3',
      aliases: ['NRR', 'net dollar retention'],
      created_at: before.nrr.metric.created_at,
    });
    expect(Date.parse(after.nrr.metric.updated_at)).toBeGreaterThan(Date.parse(before.nrr.metric.updated_at));
    expect(after.steady).toEqual(before.steady);
  });

  it('a change of `defaults` updates every metric it fills, and a new project name creates the project', async () => {
    const org = await newTeamOrg(prisma());
    await applied(org, doc(org.slug, [docMetric('a'), docMetric('b'), docMetric('c', { owner_team: 'Own Team' })]));
    const plan = await applied(
      org,
      doc(org.slug, [docMetric('a'), docMetric('b'), docMetric('c', { owner_team: 'Own Team' })], {
        project: 'Renamed Project',
        owner_team: 'Revenue Analytics',
      }),
    );
    expect(plan).toEqual({
      plan: [
        { key: 'a', result: 'updated', changed_fields: ['project', 'owner_team'], changes: expect.any(Array) },
        { key: 'b', result: 'updated', changed_fields: ['project', 'owner_team'], changes: expect.any(Array) },
        { key: 'c', result: 'updated', changed_fields: ['project'], changes: expect.any(Array) },
      ],
      totals: totals({ updated: 3 }),
    });
    const projects = await prisma().project.findMany({ where: { orgId: org.id }, orderBy: { name: 'asc' } });
    expect(projects.map((project) => project.name)).toEqual(['Core Analytics', 'Renamed Project']);
    expect((await detail(org, 'a')).metric).toMatchObject({
      project_id: projects[1]?.id,
      owner_team: 'Revenue Analytics',
    });
  });

  it('names each kind of changed field, JSON-valued ones included', async () => {
    const org = await newTeamOrg(prisma());
    const first = docMetric('m', {
      tags: ['x'],
      dimensions: ['region'],
      time_semantics: { calendar: 'fiscal' },
      execution_context: { resolved_parameters: { a: 1 } },
      governance: { approver_role: 'cfo' },
      domain: 'Finance',
    });
    await applied(org, doc(org.slug, [first]));
    const second = {
      ...first,
      tags: ['x', 'y'],
      dimensions: ['region', { name: 'segment' }],
      time_semantics: { calendar: 'fiscal', week_start: 'monday' },
      execution_context: { resolved_parameters: { a: 2 } },
      governance: { approver_role: 'cfo', next_review_date: '2026-12-31' },
      domain: null,
      sql_expression: 'SUM(amount) - SUM(refunds)',
    };
    expect((await applied(org, doc(org.slug, [second]))).plan).toEqual([
      {
        key: 'm',
        result: 'updated',
        changed_fields: [
          'domain',
          'tags',
          'sql_expression',
          'dimensions',
          'time_semantics',
          'execution_context',
          'governance',
        ],
        changes: expect.any(Array),
      },
    ]);
    expect((await applied(org, doc(org.slug, [second]))).plan).toEqual([
      { key: 'm', result: 'unchanged', changed_fields: [] },
    ]);
  });
});

describe('versions, approvals and relationships', () => {
  it('are made to match the document’s lists exactly', async () => {
    const org = await newTeamOrg(prisma());
    const version = (definition_version: string, status: string, released_at: string | null) => ({
      definition_version,
      status,
      released_at,
    });
    const approval = (definition_version: string | null, decided_at: string, approver: string | null = null) => ({
      definition_version,
      approver_role: 'finance_controller',
      approver,
      decision: 'approved',
      decided_at,
    });
    await applied(
      org,
      doc(org.slug, [
        docMetric('main', {
          versions: [version('1.0.0', 'released', '2026-01-01T00:00:00Z'), version('2.0.0', 'draft', null)],
          approvals: [
            approval('1.0.0', '2026-01-01T00:00:00Z', org.ownerEmail),
            approval(null, '2026-01-02T00:00:00Z'),
          ],
          relationships: [
            { kind: 'related_to', target: 'other' },
            { kind: 'variant_of', target: 'third' },
          ],
        }),
        docMetric('other'),
        docMetric('third'),
      ]),
    );
    const before = await detail(org, 'main');
    expect(before.versionHistory).toHaveLength(2);
    expect(before.approvals).toHaveLength(2);
    expect(before.relationships).toHaveLength(2);

    const plan = await applied(
      org,
      doc(org.slug, [
        docMetric('main', {
          versions: [{ ...version('2.0.0', 'released', '2026-03-01T00:00:00Z'), change_summary: 'Refunds netted.' }],
          approvals: [],
          relationships: [{ kind: 'related_to', target: 'third' }],
        }),
        docMetric('other'),
        docMetric('third'),
      ]),
    );
    expect(plan.plan).toEqual([
      {
        key: 'main',
        result: 'updated',
        changed_fields: ['versions', 'approvals', 'relationships'],
        changes: expect.any(Array),
      },
      { key: 'other', result: 'unchanged', changed_fields: [] },
      { key: 'third', result: 'unchanged', changed_fields: [] },
    ]);
    const after = await detail(org, 'main');
    expect(after.versionHistory).toEqual([
      {
        id: uuidV5(idOf(org, 'main'), 'version:2.0.0'),
        definition_version: '2.0.0',
        status: 'released',
        released_at: '2026-03-01T00:00:00.000Z',
        change_summary: 'Refunds netted.',
      },
    ]);
    expect(after.approvals).toEqual([]);
    expect(after.relationships).toEqual([
      {
        kind: 'related_to',
        target_metric_id: idOf(org, 'third'),
        target: { key: 'third', name: 'Metric third', lifecycle_status: 'DRAFT' },
      },
    ]);
    const mainId = idOf(org, 'main');
    expect(await prisma().metricVersion.count({ where: { metricId: mainId } })).toBe(1);
    expect(await prisma().approval.count({ where: { metricId: mainId } })).toBe(0);
    expect(await prisma().metricRelationship.count({ where: { metricId: mainId } })).toBe(1);
    expect((await contract(org, 'main')).current_approved_version).toEqual({
      id: uuidV5(mainId, 'version:2.0.0'),
      definition_version: '2.0.0',
      released_at: '2026-03-01T00:00:00.000Z',
    });
  });

  it('only a change of its approvals updates a metric, and names only `approvals`', async () => {
    const org = await newTeamOrg(prisma());
    const versions = [{ definition_version: '1.0.0', status: 'released', released_at: '2026-01-01T00:00:00Z' }];
    const approval = {
      definition_version: '1.0.0',
      approver_role: 'cfo',
      approver: org.ownerEmail,
      decision: 'approved',
      decided_at: '2026-01-01T00:00:00Z',
    };
    await applied(org, doc(org.slug, [docMetric('m', { versions, approvals: [approval] })]));
    const rejected = { ...approval, decision: 'rejected', comment: 'Does not reconcile.' };
    expect((await applied(org, doc(org.slug, [docMetric('m', { versions, approvals: [rejected] })]))).plan).toEqual([
      { key: 'm', result: 'updated', changed_fields: ['approvals'], changes: expect.any(Array) },
    ]);
    expect((await detail(org, 'm')).approvals).toEqual([
      expect.objectContaining({ decision: 'rejected', comment: 'Does not reconcile.', approver_user_id: org.ownerId }),
    ]);
  });

  it('an approver must be a member of the organization: 400 naming the place, nothing written', async () => {
    const org = await newTeamOrg(prisma());
    const stranger = await newTeamOrg(prisma());
    const res = await apply(
      org,
      doc(org.slug, [
        docMetric('m', {
          versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-01-01T00:00:00Z' }],
          approvals: [
            {
              definition_version: '1.0.0',
              approver_role: 'cfo',
              approver: stranger.ownerEmail,
              decision: 'approved',
              decided_at: '2026-01-01T00:00:00Z',
            },
          ],
        }),
      ]),
    );
    expectError(res, 400, {
      error: `metrics[0].approvals[0].approver: ${stranger.ownerEmail} is not a member of this organization`,
    });
    expect(await storedKeys(prisma(), org.id)).toEqual([]);
  });

  it('a relationship may target a metric of the registry that the document does not list', async () => {
    const org = await newTeamOrg(prisma());
    await applied(org, doc(org.slug, [docMetric('legacy', { lifecycle_status: 'RELEASED' })]));
    const plan = await applied(
      org,
      doc(org.slug, [docMetric('successor', { relationships: [{ kind: 'supersedes', target: 'legacy' }] })]),
    );
    expect(plan).toEqual({
      plan: [
        { key: 'successor', result: 'created', changed_fields: [] },
        { key: 'legacy', result: 'absent', changed_fields: [] },
      ],
      totals: totals({ created: 1, absent: 1 }),
    });
    expect((await contract(org, 'legacy')).trust).toEqual({
      verdict: 'do_not_use',
      reasons: ['superseded'],
      preferred_metric_id: idOf(org, 'successor'),
      untrusted_inputs: [],
    });
  });

  it('prune refuses a relationship to a metric it would remove: 400 naming the place, nothing written', async () => {
    const org = await newTeamOrg(prisma());
    await applied(org, doc(org.slug, [docMetric('legacy')]));
    const version = await metricsVersion(prisma(), org.id);
    const res = await apply(
      org,
      doc(org.slug, [docMetric('successor', { relationships: [{ kind: 'supersedes', target: 'legacy' }] })]),
      'prune=true',
    );
    expectError(res, 400, {
      error: 'metrics[0].relationships[0].target: metric "legacy" is not in the document, so prune would remove it',
    });
    expect(await storedKeys(prisma(), org.id)).toEqual(['legacy']);
    expect(await metricsVersion(prisma(), org.id)).toBe(version);
  });

  it('a relationship to a key in neither the document nor the registry: 400 naming the place (YAML: line and column)', async () => {
    const org = await newTeamOrg(prisma());
    const yaml = toYaml(
      doc(org.slug, [docMetric('a'), docMetric('b', { relationships: [{ kind: 'related_to', target: 'nowhere' }] })]),
    );
    const res = await apply(org, yaml);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: expect.stringMatching(
        /^metrics\[1\]\.relationships\[0\]\.target \(line \d+, column \d+\): no metric with key "nowhere" in the document or the registry$/,
      ),
    });
    const { error } = res.json() as { error: string };
    const [, line, column] = /line (\d+), column (\d+)/.exec(error) ?? [];
    const lines = yaml.split('\n');
    expect(lines[Number(line) - 1]?.slice(Number(column) - 1)).toMatch(/^nowhere/);
    expect(await storedKeys(prisma(), org.id)).toEqual([]);
  });
});

describe('absent and removed', () => {
  it('a metric the document does not list is kept untouched and reported absent', async () => {
    const org = await newTeamOrg(prisma());
    await applied(org, doc(org.slug, [docMetric('kept'), docMetric('left_out'), docMetric('also_left_out')]));
    const before = await detail(org, 'left_out');
    const tag = await etag(`/api/v1/metrics/${idOf(org, 'left_out')}`, org.key);
    expect(await applied(org, doc(org.slug, [docMetric('kept')]))).toEqual({
      plan: [
        { key: 'kept', result: 'unchanged', changed_fields: [] },
        { key: 'also_left_out', result: 'absent', changed_fields: [] },
        { key: 'left_out', result: 'absent', changed_fields: [] },
      ],
      totals: totals({ unchanged: 1, absent: 2 }),
    });
    expect(await detail(org, 'left_out')).toEqual(before);
    expect(await etag(`/api/v1/metrics/${idOf(org, 'left_out')}`, org.key)).toBe(tag);
  });

  it('hand-made metrics of a loaded registry are absent, then removed with what hangs off them by prune', async () => {
    const caller = { token: loadedToken };
    const document = doc(loaded.slug, [docMetric('from_git')]);
    const tag = await etag(`/api/v1/metrics/${handMade.id}/contract`, loadedKey);
    expect(await applied(caller, document)).toEqual({
      plan: [
        { key: 'from_git', result: 'created', changed_fields: [] },
        { key: 'also_hand_made', result: 'absent', changed_fields: [] },
        { key: 'hand_made', result: 'absent', changed_fields: [] },
      ],
      totals: totals({ created: 1, absent: 2 }),
    });
    expect(await etag(`/api/v1/metrics/${handMade.id}/contract`, loadedKey)).toBe(tag);
    expect(await prisma().validation.count({ where: { metricId: handMade.id } })).toBe(1);

    expect(await applied(caller, document, 'prune=true')).toEqual({
      plan: [
        { key: 'from_git', result: 'unchanged', changed_fields: [] },
        { key: 'also_hand_made', result: 'removed', changed_fields: [] },
        { key: 'hand_made', result: 'removed', changed_fields: [] },
      ],
      totals: totals({ unchanged: 1, removed: 2 }),
    });
    expect(await storedKeys(prisma(), loaded.id)).toEqual(['from_git']);
    for (const id of [handMade.id, alsoHandMade.id]) {
      expectError(await t.get(`/api/v1/metrics/${id}`, loadedKey), 404, { error: 'Metric not found' });
    }
    expect(await prisma().validation.count({ where: { metricId: handMade.id } })).toBe(0);
    expect(await prisma().thread.count({ where: { metricId: handMade.id } })).toBe(0);
  });

  it('prune removes validations, versions and relationships of the metrics it removes', async () => {
    const org = await newTeamOrg(prisma());
    await applied(
      org,
      doc(org.slug, [
        docMetric('kept', { relationships: [{ kind: 'related_to', target: 'gone' }] }),
        docMetric('gone', {
          versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-01-01T00:00:00Z' }],
          relationships: [{ kind: 'variant_of', target: 'kept' }],
        }),
      ]),
    );
    const recorded = await postValidations(
      t,
      { results: [{ metric_key: 'gone', ran_at: '2026-03-01T00:00:00Z', status: 'passed' }] },
      { token: org.token },
    );
    expect(recorded.statusCode, recorded.body).toBe(200);
    // The kept metric drops its relationship to the removed one in the same apply.
    expect(await applied(org, doc(org.slug, [docMetric('kept')]), 'prune=true')).toEqual({
      plan: [
        { key: 'kept', result: 'updated', changed_fields: ['relationships'], changes: expect.any(Array) },
        { key: 'gone', result: 'removed', changed_fields: [] },
      ],
      totals: totals({ updated: 1, removed: 1 }),
    });
    const gone = idOf(org, 'gone');
    expect(await prisma().metricVersion.count({ where: { metricId: gone } })).toBe(0);
    expect(await prisma().validation.count({ where: { metricId: gone } })).toBe(0);
    expect(
      await prisma().metricRelationship.count({ where: { OR: [{ metricId: gone }, { targetMetricId: gone }] } }),
    ).toBe(0);
    expect((await detail(org, 'kept')).relationships).toEqual([]);
    expect(await listTotal(org)).toBe(1);
  });
});

describe('dry run', () => {
  it('returns the plan the apply would make and writes nothing', async () => {
    const org = await newTeamOrg(prisma());
    const first = doc(org.slug, [docMetric('a'), docMetric('b', { domain: 'New Domain' })], { project: 'New Project' });
    const version = await metricsVersion(prisma(), org.id);
    const dry = ok(await apply(org, first, 'dry_run=true'));
    expect(dry.json()).toMatchObject({
      data: {
        plan: [
          { key: 'a', result: 'created', changed_fields: [] },
          { key: 'b', result: 'created', changed_fields: [] },
        ],
        totals: totals({ created: 2 }),
      },
    });
    expect(await storedKeys(prisma(), org.id)).toEqual([]);
    expect(await prisma().project.count({ where: { orgId: org.id } })).toBe(0);
    expect(await prisma().domain.count({ where: { orgId: org.id } })).toBe(0);
    expect(await metricsVersion(prisma(), org.id)).toBe(version);
    expect(await listTotal(org)).toBe(0);
    expect(await applied(org, first)).toEqual(planOf(dry));

    const second = doc(org.slug, [docMetric('a', { name: 'Renamed' })], { project: 'New Project' });
    const versionAfterApply = await metricsVersion(prisma(), org.id);
    const tag = await etag(`/api/v1/metrics/${idOf(org, 'a')}`, org.key);
    const dryPrune = planOf(await apply(org, second, 'dry_run=true&prune=true'));
    expect(dryPrune).toEqual({
      plan: [
        { key: 'a', result: 'updated', changed_fields: ['name'], changes: expect.any(Array) },
        { key: 'b', result: 'removed', changed_fields: [] },
      ],
      totals: totals({ updated: 1, removed: 1 }),
    });
    expect(await storedKeys(prisma(), org.id)).toEqual(['a', 'b']);
    expect((await detail(org, 'a')).metric.name).toBe('Metric a');
    expect(await etag(`/api/v1/metrics/${idOf(org, 'a')}`, org.key)).toBe(tag);
    expect(await metricsVersion(prisma(), org.id)).toBe(versionAfterApply);
    expect(await applied(org, second, 'prune=true')).toEqual(dryPrune);
  });

  it.each(['yes', 'TRUE', ''])('dry_run=%s is not a boolean: 400, nothing written', async (value) => {
    const org = await newTeamOrg(prisma());
    const res = await apply(org, doc(org.slug, [docMetric('a')]), `dry_run=${value}`);
    expectError(res, 400, { error: 'dry_run must be true or false' });
    expect(await storedKeys(prisma(), org.id)).toEqual([]);
  });
});

/** Every field of a metric the document can carry, with values that stress the comparison. */
function richMetric(key: string, approver: string): DocMetric {
  return docMetric(key, {
    name: 'Net Revenue Retention',
    description: 'Revenue kept from last year’s customers — expansion included. ✓',
    metric_type: 'ratio',
    lifecycle_status: 'RELEASED',
    definition_version: '3.0.0',
    policy_tier: 'tier_1',
    owner_display_name: 'Ada Lovelace',
    scope: 'enterprise_canonical',
    tags: ['finance', 'board'],
    aliases: ['NRR', 'net dollar retention'],
    concept_name: 'retention',
    template_name: 'ratio_template',
    grains: ['month', 'quarter'],
    default_grain: 'quarter',
    dimensions: ['region', { name: 'segment', values: ['smb', 'enterprise'] }],
    filters: ['is_active = true'],
    source_refs: [{ table: 'finance.arr', freshness: { hours: 24 } }],
    expression: { op: 'divide', args: [{ ref: 'arr_end' }, { ref: 'arr_start' }], scale: 1.5 },
    dependencies: ['arr_end', 'arr_start'],
    domain: 'Finance',
    business_definition: { included: 'Subscriptions.', excluded: 'Services.', time_window: 'TTM', caveats: 'None.' },
    // members out of order: stored as jsonb, which keeps its own order
    time_semantics: { zone: 'UTC', calendar: 'fiscal', anchor: { month: 2, day: 1 } },
    deprecated_framing_rules: [{ avoid: 'net retention', reason: 'ambiguous' }],
    dimension_map: { segment: 'customer_segment', region: 'sales_region' },
    column_aliases: { arr: 'annual_recurring_revenue' },
    consumer_contexts: { board: { rounding: 1 }, agents: { caution: true } },
    policy_examples: [{ question: 'NRR last quarter?', answer: 'Use the quarter grain.' }],
    execution_context: {
      resolved_parameters: { currency: 'USD', fx: { source: 'ecb' } },
      rendered_sql_examples: ['SELECT 1'],
      latest_closed_period: { month: '2026-01' },
    },
    governance: {
      approver_role: 'cfo',
      approver_user: 'ada@example.com',
      approved_at: '2026-02-14T10:00:00Z',
      effective_from: '2026-02-15',
      effective_to: null,
      next_review_date: '2026-08-15',
    },
    approval_state: { state: 'approved', by: ['cfo'] },
    versions: [
      { definition_version: '2.0.0', status: 'superseded', released_at: '2025-06-01T00:00:00+02:00' },
      { definition_version: '3.0.0', status: 'released', released_at: '2026-02-15T00:00:00Z', change_summary: 'TTM.' },
    ],
    approvals: [
      {
        definition_version: '3.0.0',
        approver_role: 'finance_controller',
        approver,
        decision: 'approved',
        decided_at: '2026-02-14T11:00:00+01:00',
        comment: 'Reconciles.',
      },
      {
        definition_version: null,
        approver_role: 'data_steward',
        approver: null,
        decision: 'rejected',
        decided_at: '2026-02-01T00:00:00Z',
      },
    ],
    relationships: [
      { kind: 'supersedes', target: `${key}_legacy` },
      { kind: 'related_to', target: `${key}_legacy` },
    ],
  });
}

describe('idempotence', () => {
  it('a second apply of the same document writes nothing: same updated_at, ETags and metrics_version', async () => {
    const org = await newTeamOrg(prisma());
    const document = doc(org.slug, [
      richMetric('nrr', org.ownerEmail.toUpperCase()),
      docMetric('nrr_legacy', { lifecycle_status: 'DEPRECATED' }),
      docMetric('plain'),
    ]);
    expect((await applied(org, toYaml(document))).totals).toEqual(totals({ created: 3 }));
    const id = idOf(org, 'nrr');
    const urls = [
      `/api/v1/metrics/${id}`,
      `/api/v1/metrics/${id}/contract`,
      `/api/v1/metrics/${idOf(org, 'nrr_legacy')}/contract`,
      '/api/v1/metrics?pageSize=100',
      '/api/v1/metrics?q=retention',
    ];
    const tags = async () => Promise.all(urls.map((url) => etag(url, org.key)));
    const state = async () => ({
      tags: await tags(),
      version: await metricsVersion(prisma(), org.id),
      rows: await prisma().metric.findMany({
        where: { orgId: org.id },
        select: { id: true, updatedAt: true, createdAt: true },
        orderBy: { id: 'asc' },
      }),
      detail: await detail(org, 'nrr'),
    });
    const before = await state();
    const unchanged = {
      plan: [
        { key: 'nrr', result: 'unchanged', changed_fields: [] },
        { key: 'nrr_legacy', result: 'unchanged', changed_fields: [] },
        { key: 'plain', result: 'unchanged', changed_fields: [] },
      ],
      totals: totals({ unchanged: 3 }),
    };
    // The same document again, as YAML, as JSON, and as YAML with its keys in another order.
    expect(await applied(org, toYaml(document))).toEqual(unchanged);
    expect(await applied(org, document)).toEqual(unchanged);
    const reordered = { metrics: [...document.metrics].reverse(), defaults: document.defaults, organization: org.slug };
    expect((await applied(org, toYaml(reordered))).totals).toEqual(unchanged.totals);
    expect(await state()).toEqual(before);
    for (const [i, url] of urls.entries()) {
      const res = await t.get(url, org.key, { 'if-none-match': before.tags[i] ?? '' });
      expect(res.statusCode, url).toBe(304);
    }
  });

  it('a change to one metric changes its ETags and the list’s, and no other metric’s', async () => {
    const org = await newTeamOrg(prisma());
    const metrics = [docMetric('changing'), docMetric('quiet'), docMetric('also_quiet')];
    await applied(org, doc(org.slug, metrics));
    const urls = (key: string) => [`/api/v1/metrics/${idOf(org, key)}`, `/api/v1/metrics/${idOf(org, key)}/contract`];
    const read = async () => ({
      changing: await Promise.all(urls('changing').map((url) => etag(url, org.key))),
      quiet: await Promise.all([...urls('quiet'), ...urls('also_quiet')].map((url) => etag(url, org.key))),
      list: await etag('/api/v1/metrics?pageSize=100', org.key),
      version: await metricsVersion(prisma(), org.id),
    });
    const before = await read();
    const changed = [docMetric('changing', { description: 'A sharper description.' }), ...metrics.slice(1)];
    expect((await applied(org, doc(org.slug, changed))).totals).toEqual(totals({ updated: 1, unchanged: 2 }));
    const after = await read();
    expect(after.quiet).toEqual(before.quiet);
    expect(after.changing[0]).not.toBe(before.changing[0]);
    expect(after.list).not.toBe(before.list);
    expect(after.version).toBeGreaterThan(before.version);
    const quietDetail = await t.get(`/api/v1/metrics/${idOf(org, 'quiet')}`, org.key, {
      'if-none-match': before.quiet[0] ?? '',
    });
    expect(quietDetail.statusCode).toBe(304);
  });

  it('a version released with another offset for the same instant is unchanged', async () => {
    const org = await newTeamOrg(prisma());
    const versions = (released_at: string) => [{ definition_version: '1.0.0', status: 'released', released_at }];
    await applied(org, doc(org.slug, [docMetric('m', { versions: versions('2026-02-15T00:00:00Z') })]));
    expect(
      (await applied(org, doc(org.slug, [docMetric('m', { versions: versions('2026-02-15T01:00:00+01:00') })]))).plan,
    ).toEqual([{ key: 'm', result: 'unchanged', changed_fields: [] }]);
  });
});

describe('search and lists follow at once', () => {
  it('finds a created metric by its name and by its aliases right after the apply, and forgets an old alias', async () => {
    const org = await newTeamOrg(prisma());
    await applied(org, doc(org.slug, [docMetric('filler')]));
    // Kept search pages and totals of the state before the apply.
    expect(await searchIds(org, 'quarterly churn')).toEqual([]);
    expect(await searchIds(org, 'QCR')).toEqual([]);
    expect(await listTotal(org)).toBe(1);
    const id = idOf(org, 'qcr');
    await applied(
      org,
      doc(org.slug, [
        docMetric('filler'),
        docMetric('qcr', { name: 'Quarterly Churn Ratio', aliases: ['QCR', 'logo attrition'] }),
      ]),
    );
    expect(await searchIds(org, 'quarterly churn')).toContain(id);
    expect(await searchIds(org, 'QCR')).toContain(id);
    expect(await searchIds(org, 'logo attrition')).toContain(id);
    expect(await listTotal(org)).toBe(2);

    await applied(
      org,
      doc(org.slug, [
        docMetric('filler'),
        docMetric('qcr', { name: 'Quarterly Churn Ratio', aliases: ['QCR', 'customer defection'] }),
      ]),
    );
    expect(await searchIds(org, 'customer defection')).toContain(id);
    expect(await searchIds(org, 'logo attrition')).not.toContain(id);
  });
});

// An operator's SQL, a restore or another tool can change the registry behind the apply's back, as
// test/rest/conditional-get.test.ts does to the read routes: the document is still the truth, and
// a dry run (the HTTP form of --check) must see the drift, and an apply must repair it.
describe('drift made behind the service’s back', () => {
  async function appliedWithGovernance(org: TeamOrg) {
    const document = doc(org.slug, [
      docMetric('m', {
        versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-01-01T00:00:00Z' }],
        relationships: [{ kind: 'related_to', target: 'other' }],
      }),
      docMetric('other'),
    ]);
    await applied(org, document);
    return document;
  }

  it('a column changed with SQL: the dry run reports it, the apply restores it', async () => {
    const org = await newTeamOrg(prisma());
    const document = await appliedWithGovernance(org);
    await prisma().$executeRaw`UPDATE metric SET description = 'Edited by hand.' WHERE id = ${idOf(org, 'm')}::uuid`;
    expect((await applied(org, document, 'dry_run=true')).plan).toContainEqual({
      key: 'm',
      result: 'updated',
      changed_fields: ['description'],
      changes: expect.any(Array),
    });
    await applied(org, document);
    expect((await detail(org, 'm')).metric.description).toBe('About m.');
  });

  it('a version deleted with SQL: reported and put back', async () => {
    const org = await newTeamOrg(prisma());
    const document = await appliedWithGovernance(org);
    await prisma().$executeRaw`DELETE FROM metric_version WHERE metric_id = ${idOf(org, 'm')}::uuid`;
    expect((await applied(org, document, 'dry_run=true')).plan).toContainEqual({
      key: 'm',
      result: 'updated',
      changed_fields: ['versions'],
      changes: expect.any(Array),
    });
    await applied(org, document);
    expect((await detail(org, 'm')).versionHistory).toHaveLength(1);
  });

  it('a relationship deleted with SQL: reported and put back', async () => {
    const org = await newTeamOrg(prisma());
    const document = await appliedWithGovernance(org);
    await prisma().$executeRaw`DELETE FROM metric_relationship WHERE metric_id = ${idOf(org, 'm')}::uuid`;
    expect((await applied(org, document, 'dry_run=true')).plan).toContainEqual({
      key: 'm',
      result: 'updated',
      changed_fields: ['relationships'],
      changes: expect.any(Array),
    });
    await applied(org, document);
    expect((await detail(org, 'm')).relationships).toHaveLength(1);
  });
});

describe('what a relationship change shows on its target', () => {
  it('adding `supersedes` changes the target’s contract (trust) and its ETag', async () => {
    const org = await newTeamOrg(prisma());
    const metrics = [
      docMetric('new_nrr', { lifecycle_status: 'RELEASED' }),
      docMetric('old_nrr', { lifecycle_status: 'RELEASED' }),
    ];
    await applied(org, doc(org.slug, metrics));
    const url = `/api/v1/metrics/${idOf(org, 'old_nrr')}/contract`;
    const before = await etag(url, org.key);
    const plan = await applied(
      org,
      doc(org.slug, [
        { ...metrics[0], relationships: [{ kind: 'supersedes', target: 'old_nrr' }] } as DocMetric,
        metrics[1] as DocMetric,
      ]),
    );
    expect(plan.plan).toEqual([
      { key: 'new_nrr', result: 'updated', changed_fields: ['relationships'], changes: expect.any(Array) },
      { key: 'old_nrr', result: 'unchanged', changed_fields: [] },
    ]);
    expect(await etag(url, org.key)).not.toBe(before);
    expect((await contract(org, 'old_nrr')).trust).toEqual({
      verdict: 'do_not_use',
      reasons: ['superseded'],
      preferred_metric_id: idOf(org, 'new_nrr'),
      untrusted_inputs: [],
    });
  });
});
