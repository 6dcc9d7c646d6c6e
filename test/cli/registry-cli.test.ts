/**
 * The registry as code from the command line (issue 24, items 1 to 4), run
 * in process against an empty PostgreSQL database: bootstrap (org:create,
 * user:add), service tokens, registry:apply (a YAML or JSON file, or `-` for
 * standard input; --dry-run, --prune, --check), validation:record, and then
 * the metric served over HTTP to a read key made with keys:create. Bad input
 * is a clear message, the place named, a non-zero exit, and nothing written.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../../src/cli-commands.js';
import { buildTestInstance } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
let scratch: string;
let app: FastifyInstance;
beforeAll(async () => {
  db = await createTestDatabase();
  scratch = mkdtempSync(join(tmpdir(), 'registry-cli-'));
  app = await buildTestInstance(db);
});
afterAll(async () => {
  await app?.close();
  await db?.drop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const TOKEN_LINE = /^cls_[0-9a-f]{40}$/;
const KEY_LINE = /^cl_[0-9a-f]{40}$/;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

async function run(argv: string[], stdin?: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, {
    prisma: db.prisma,
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    ...(stdin === undefined ? {} : { stdin: async () => stdin }),
  });
  return { code, out, err, text: [...out, ...err].join('\n') };
}

async function ok(argv: string[], stdin?: string) {
  const result = await run(argv, stdin);
  expect(result.code, result.text).toBe(0);
  return result;
}

let sequence = 0;
/** A new organization with an owner, made through the CLI. */
async function newOrg(): Promise<{ slug: string; owner: string }> {
  const slug = `cli-${process.pid}-${++sequence}`;
  await ok(['org:create', '--slug', slug, '--name', `CLI ${sequence}`]);
  const owner = `owner-${slug}@example.com`;
  await ok(['user:add', '--org', slug, '--email', owner, '--name', 'Olivia Owner', '--role', 'owner']);
  return { slug, owner };
}

function file(name: string, text: string): string {
  const path = join(scratch, `${++sequence}-${name}`);
  writeFileSync(path, text);
  return path;
}

const metric = (key: string, fields: Record<string, unknown> = {}) => ({
  key,
  name: `Metric ${key}`,
  description: `About ${key}.`,
  sql_expression: 'SUM(amount)',
  ...fields,
});

const document = (slug: string, metrics: Record<string, unknown>[]) => ({
  organization: slug,
  defaults: { project: 'Core Analytics', owner_team: 'Finance Analytics' },
  metrics,
});

const planLine = (result: string, key: string, fields = '') =>
  new RegExp(`^\\s+${result}\\s+${key.replace(/\./g, '\\.')}${fields ? `\\s+\\(${fields}\\)` : ''}$`);

async function keysOf(slug: string): Promise<string[]> {
  const rows = await db.prisma.metric.findMany({
    where: { organization: { slug } },
    select: { key: true },
    orderBy: { key: 'asc' },
  });
  return rows.map((row) => row.key);
}

describe('from an empty database to a served metric', () => {
  it('org:create, user:add, tokens:create, registry:apply, validation:record, keys:create, then HTTP', async () => {
    expect(await db.prisma.organization.count()).toBe(0);

    const created = await ok(['org:create', '--slug', 'acme-analytics', '--name', 'Acme Analytics']);
    expect(created.out).toEqual([
      expect.stringMatching(
        new RegExp(`^Created organization acme-analytics "Acme Analytics" \\(${UUID}\\), plan team$`),
      ),
    ]);
    const org = await db.prisma.organization.findUniqueOrThrow({ where: { slug: 'acme-analytics' } });
    expect(org).toMatchObject({ name: 'Acme Analytics', plan: 'team' });

    const added = await ok([
      'user:add',
      '--org',
      'acme-analytics',
      '--email',
      'ada@acme.example',
      '--name',
      'Ada Lovelace',
      '--role',
      'owner',
    ]);
    expect(added.out).toEqual(['Added ada@acme.example as owner in organization acme-analytics (new user)']);

    const tokens = await ok([
      'tokens:create',
      '--org',
      'acme-analytics',
      '--name',
      'GitHub Actions',
      '--scopes',
      'registry:write,validations:write',
    ]);
    const token = tokens.out.find((line) => TOKEN_LINE.test(line)) ?? '';
    expect(token).toMatch(TOKEN_LINE);
    expect(tokens.text.split(token)).toHaveLength(2);
    expect(tokens.text).toContain('will not be shown again');
    const stored = await db.prisma.serviceToken.findUniqueOrThrow({ where: { tokenHash: sha256(token) } });
    expect(stored).toMatchObject({
      orgId: org.id,
      name: 'GitHub Actions',
      scopes: ['registry:write', 'validations:write'],
    });
    expect(Object.values(stored)).not.toContain(token);

    const registryFile = file(
      'registry.yaml',
      `organization: acme-analytics
defaults:
  project: Core Analytics
  owner_team: Finance Analytics
metrics:
  - key: net_revenue_retention
    name: Net Revenue Retention
    description: Revenue kept from last year's customers, expansion included.
    sql_expression: SUM(arr_end_of_period) / NULLIF(SUM(arr_start_of_period), 0)
    lifecycle_status: RELEASED
    definition_version: 3.0.0
    aliases: [NRR]
    versions:
      - definition_version: 3.0.0
        status: released
        released_at: 2026-02-15T00:00:00Z
    approvals:
      - definition_version: 3.0.0
        approver_role: finance_controller
        approver: ada@acme.example
        decision: approved
        decided_at: 2026-02-14T10:00:00Z
`,
    );
    const applied = await ok(['registry:apply', '--org', 'acme-analytics', registryFile]);
    expect(applied.out).toEqual([
      'Plan for organization acme-analytics:',
      expect.stringMatching(planLine('created', 'net_revenue_retention')),
      'Totals: 1 created, 0 restored, 0 updated, 0 unchanged, 0 absent, 0 removed',
      'Applied.',
    ]);
    const check = await ok(['registry:apply', '--org', 'acme-analytics', '--check', registryFile]);
    expect(check.out.at(-1)).toBe('No drift.');

    const recorded = await ok([
      'validation:record',
      '--org',
      'acme-analytics',
      '--metric',
      'net_revenue_retention',
      '--status',
      'passed',
      '--details',
      'Matches the finance close.',
    ]);
    expect(recorded.out).toEqual([
      expect.stringMatching(/^Recorded passed validation of net_revenue_retention at \d{4}-\d\d-\d\dT/),
    ]);

    const keys = await ok(['keys:create', '--org', 'acme-analytics', '--name', 'Agent']);
    const key = keys.out.find((line) => KEY_LINE.test(line)) ?? '';
    const listRes = await app.inject({
      method: 'GET',
      url: '/api/v1/metrics',
      headers: { authorization: `Bearer ${key}` },
    });
    expect(listRes.statusCode, listRes.body).toBe(200);
    const [item] = listRes.json().data;
    expect(listRes.json().pagination.total).toBe(1);
    expect(item).toMatchObject({
      name: 'Net Revenue Retention',
      lifecycle_status: 'RELEASED',
      definition_version: '3.0.0',
    });
    const contract = await app.inject({
      method: 'GET',
      url: `/api/v1/metrics/${item.id}/contract`,
      headers: { authorization: `Bearer ${key}` },
    });
    expect(contract.json().data).toMatchObject({
      current_approved_version: { definition_version: '3.0.0' },
      last_validated_at: expect.any(String),
      trust: { verdict: 'use', reasons: [], preferred_metric_id: null, untrusted_inputs: [] },
    });

    // CI applies the same file with the token: nothing to do.
    const put = await app.inject({
      method: 'PUT',
      url: '/api/registry',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/yaml' },
      payload: readFileSync(registryFile, 'utf8'),
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().data.totals).toEqual({
      created: 0,
      restored: 0,
      updated: 0,
      unchanged: 1,
      absent: 0,
      removed: 0,
    });

    // The owner can sign in (session:create) and sees the token, never its secret.
    const session = await ok(['session:create', '--user', 'ada@acme.example', '--org', 'acme-analytics']);
    const cookie = session.out.find((line) => line.startsWith('session=')) ?? '';
    const listed = await app.inject({ method: 'GET', url: '/api/service-tokens', headers: { cookie } });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json().data.map((row: { name: string }) => row.name)).toEqual(['GitHub Actions']);
    expect(listed.body).not.toContain(token);
  });
});

describe('registry:apply', () => {
  it('reads standard input with `-`, YAML or JSON by its content', async () => {
    const { slug } = await newOrg();
    const yaml = stringify(document(slug, [metric('from_yaml')]));
    const viaYaml = await ok(['registry:apply', '--org', slug, '-'], yaml);
    expect(viaYaml.out).toContainEqual(expect.stringMatching(planLine('created', 'from_yaml')));
    const json = JSON.stringify(document(slug, [metric('from_yaml'), metric('from_json')]));
    const viaJson = await ok(['registry:apply', '--org', slug, '-'], json);
    expect(viaJson.out).toEqual([
      `Plan for organization ${slug}:`,
      expect.stringMatching(planLine('unchanged', 'from_yaml')),
      expect.stringMatching(planLine('created', 'from_json')),
      'Totals: 1 created, 0 restored, 0 updated, 1 unchanged, 0 absent, 0 removed',
      'Applied.',
    ]);
    expect(await keysOf(slug)).toEqual(['from_json', 'from_yaml']);
  });

  it('reads a .json, a .yml and a file without an extension', async () => {
    const { slug } = await newOrg();
    await ok(['registry:apply', '--org', slug, file('registry.json', JSON.stringify(document(slug, [metric('a')])))]);
    await ok([
      'registry:apply',
      '--org',
      slug,
      file('registry.yml', stringify(document(slug, [metric('a'), metric('b')]))),
    ]);
    await ok([
      'registry:apply',
      '--org',
      slug,
      file('registry', JSON.stringify(document(slug, [metric('a'), metric('b'), metric('c')]))),
    ]);
    expect(await keysOf(slug)).toEqual(['a', 'b', 'c']);
  });

  it('prints updated metrics with their changed fields, absent ones, and a second run says nothing to apply', async () => {
    const { slug } = await newOrg();
    await ok(['registry:apply', '--org', slug, file('v1.yaml', stringify(document(slug, [metric('a'), metric('b')])))]);
    const v2 = file('v2.yaml', stringify(document(slug, [metric('a', { name: 'Renamed', tags: ['x'] })])));
    const applied = await ok(['registry:apply', '--org', slug, v2]);
    expect(applied.out).toEqual([
      `Plan for organization ${slug}:`,
      expect.stringMatching(planLine('updated', 'a', 'name, tags')),
      '      name: "Metric a" -> "Renamed"',
      '      tags: [] -> ["x"]',
      expect.stringMatching(planLine('absent', 'b')),
      'Totals: 0 created, 0 restored, 1 updated, 0 unchanged, 1 absent, 0 removed',
      'Applied.',
    ]);
    const again = await ok(['registry:apply', '--org', slug, v2]);
    expect(again.out.at(-1)).toBe('Nothing to apply: the registry matches the document.');
    const pruned = await ok(['registry:apply', '--org', slug, '--prune', v2]);
    expect(pruned.out).toContainEqual(expect.stringMatching(planLine('removed', 'b')));
    expect(await keysOf(slug)).toEqual(['a']);
  });

  it('--dry-run prints the plan and writes nothing', async () => {
    const { slug } = await newOrg();
    const path = file('dry.yaml', stringify(document(slug, [metric('a')])));
    const dry = await ok(['registry:apply', '--org', slug, '--dry-run', path]);
    expect(dry.out).toEqual([
      `Plan for organization ${slug} (nothing written):`,
      expect.stringMatching(planLine('created', 'a')),
      'Totals: 1 created, 0 restored, 0 updated, 0 unchanged, 0 absent, 0 removed',
    ]);
    expect(await keysOf(slug)).toEqual([]);
    expect(await db.prisma.project.count({ where: { organization: { slug } } })).toBe(0);
  });

  it('a trust policy change is said after the totals and is drift for --check; an unchanged one is not said', async () => {
    const { slug } = await newOrg();
    const withPolicy = { ...document(slug, [metric('a')]), trust_policy: { tier_1: { stale_after_days: 7 } } };
    const path = file('policy.yaml', stringify(withPolicy));
    const check = await run(['registry:apply', '--org', slug, '--check', path]);
    expect(check.code, check.text).toBe(1);
    expect(check.out.slice(-2)).toEqual(['Trust policy: changed', 'Drift: the registry differs from the document.']);
    const applied = await ok(['registry:apply', '--org', slug, path]);
    expect(applied.out.slice(-3)).toEqual([
      'Totals: 1 created, 0 restored, 0 updated, 0 unchanged, 0 absent, 0 removed',
      "Trust policy: changed (every metric's verdict evaluated again)",
      'Applied.',
    ]);
    const again = await run(['registry:apply', '--org', slug, '--check', path]);
    expect([again.code, again.out.at(-1)]).toEqual([0, 'No drift.']);
    expect(again.out.some((line) => line.startsWith('Trust policy'))).toBe(false);
    const organization = await db.prisma.organization.findUniqueOrThrow({ where: { slug } });
    expect(organization.trustPolicy).toEqual({ tier_1: { stale_after_days: 7 } });
  });

  it('--check exits 0 when the registry matches, 1 on drift, and writes nothing', async () => {
    const { slug } = await newOrg();
    const path = file('check.yaml', stringify(document(slug, [metric('a'), metric('b')])));
    const before = await run(['registry:apply', '--org', slug, '--check', path]);
    expect(before.code, before.text).toBe(1);
    expect(before.out.at(-1)).toBe('Drift: the registry differs from the document.');
    expect(await keysOf(slug)).toEqual([]);

    await ok(['registry:apply', '--org', slug, path]);
    const matching = await run(['registry:apply', '--org', slug, '--check', path]);
    expect(matching.code, matching.text).toBe(0);
    expect(matching.out.at(-1)).toBe('No drift.');

    // Someone changes the file (or the registry): drift, with what differs.
    const edited = file(
      'edited.yaml',
      stringify(document(slug, [metric('a', { description: 'Edited.' }), metric('b')])),
    );
    const drift = await run(['registry:apply', '--org', slug, '--check', edited]);
    expect(drift.code, drift.text).toBe(1);
    expect(drift.out).toContainEqual(expect.stringMatching(planLine('updated', 'a', 'description')));
    const row = await db.prisma.metric.findFirstOrThrow({ where: { organization: { slug }, key: 'a' } });
    expect(row.description).toBe('About a.');

    // With --prune, a metric the file no longer lists is drift too.
    const fewer = file('fewer.yaml', stringify(document(slug, [metric('a')])));
    const pruneDrift = await run(['registry:apply', '--org', slug, '--check', '--prune', fewer]);
    expect(pruneDrift.code, pruneDrift.text).toBe(1);
    expect(pruneDrift.out).toContainEqual(expect.stringMatching(planLine('removed', 'b')));
    expect(await keysOf(slug)).toEqual(['a', 'b']);
  });
});

describe('registry:apply of several files, applied as one document', () => {
  it('files that name each other: planned, applied, then the same again plans nothing; no upload is left', async () => {
    const { slug } = await newOrg();
    const first = file('first.yaml', stringify(document(slug, [metric('margin', { inputs: ['revenue', 'cost'] })])));
    const second = file('second.json', JSON.stringify(document(slug, [metric('revenue'), metric('cost')])));
    const dry = await ok(['registry:apply', '--org', slug, first, second, '--dry-run']);
    expect(dry.out).toEqual([
      `Plan for organization ${slug} (nothing written):`,
      expect.stringMatching(planLine('created', 'margin')),
      expect.stringMatching(planLine('created', 'revenue')),
      expect.stringMatching(planLine('created', 'cost')),
      'Totals: 3 created, 0 restored, 0 updated, 0 unchanged, 0 absent, 0 removed',
    ]);
    expect(await keysOf(slug)).toEqual([]);
    const applied = await ok(['registry:apply', '--org', slug, first, second]);
    expect(applied.out.at(-1)).toBe('Applied.');
    expect(await keysOf(slug)).toEqual(['cost', 'margin', 'revenue']);
    const again = await run(['registry:apply', '--org', slug, first, second, '--check']);
    expect([again.code, again.out.at(-1)]).toEqual([0, 'No drift.']);
    expect(await db.prisma.registryUpload.count({ where: { organization: { slug } } })).toBe(0);
  });

  it('a problem is said at its file, and nothing is written or kept', async () => {
    const { slug } = await newOrg();
    const first = file('a.yaml', stringify(document(slug, [metric('a', { inputs: ['nowhere'] })])));
    const second = file('b.yaml', stringify(document(slug, [metric('b'), metric('a')])));
    const duplicate = await run(['registry:apply', '--org', slug, first, second]);
    expect(duplicate.code).toBe(1);
    expect(duplicate.err).toContainEqual(
      expect.stringMatching(
        /b\.yaml: metrics\[1\]\.key \(line \d+, column \d+\): duplicate key "a": also parts\[1\]\.metrics\[0\]$/,
      ),
    );
    const third = file('c.yaml', stringify(document(slug, [metric('c')])));
    const missing = await run(['registry:apply', '--org', slug, first, third]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContainEqual(
      `  ${first}: metrics[0].inputs[0]: no metric with key "nowhere" in the document or the registry`,
    );
    expect(await keysOf(slug)).toEqual([]);
    expect(await db.prisma.registryUpload.count({ where: { organization: { slug } } })).toBe(0);
  });
});

describe('registry:apply --prune of many or every metric', () => {
  const everyOfTwo =
    'this prune would remove every metric of the organization (2); nothing was written. Review the plan (a dry run) and confirm with --allow-removals 2';

  /** A new organization whose registry holds metrics a and b. */
  async function orgOfTwo(): Promise<string> {
    const { slug } = await newOrg();
    await ok([
      'registry:apply',
      '--org',
      slug,
      file('two.yaml', stringify(document(slug, [metric('a'), metric('b')]))),
    ]);
    return slug;
  }

  it('needs --allow-removals with at least its count; --dry-run says so and writes nothing', async () => {
    const slug = await orgOfTwo();
    const empty = file('empty.yaml', stringify(document(slug, [])));
    const dry = await ok(['registry:apply', '--org', slug, '--dry-run', '--prune', empty]);
    expect(dry.out.slice(-2)).toEqual([
      'Totals: 0 created, 0 restored, 0 updated, 0 unchanged, 0 absent, 2 removed',
      'Applying this plan needs --allow-removals 2.',
    ]);
    const refused = await run(['registry:apply', '--org', slug, '--prune', empty]);
    expect([refused.code, refused.err]).toEqual([1, [everyOfTwo, '  would remove: a', '  would remove: b']]);
    const fewer = await run(['registry:apply', '--org', slug, '--prune', '--allow-removals', '1', empty]);
    expect(fewer.code).toBe(1);
    expect(fewer.err[0]).toMatch(/^--allow-removals 1 is fewer than the 2 metrics this prune would remove;/);
    const malformed = await run(['registry:apply', '--org', slug, '--prune', '--allow-removals', 'all', empty]);
    expect([malformed.code, malformed.err[0]]).toEqual([
      2,
      'Error: --allow-removals must be a whole number of metrics (got: all)',
    ]);
    expect(await keysOf(slug)).toEqual(['a', 'b']);
    const pruned = await ok(['registry:apply', '--org', slug, '--prune', '--allow-removals', '2', empty]);
    expect(pruned.out.at(-1)).toBe('Applied.');
    expect(await keysOf(slug)).toEqual([]);
  });

  it('registry:import --apply --prune of an empty dbt manifest is refused the same way', async () => {
    const slug = await orgOfTwo();
    const manifest = file('semantic_manifest.json', JSON.stringify({ semantic_models: [], metrics: [] }));
    // The import prunes as the source that made a and b (its own, dbt, has none to remove).
    const asRegistry = ['--source', 'registry'];
    const refused = await run([
      'registry:import',
      '--from',
      'dbt',
      '--org',
      slug,
      '--apply',
      '--prune',
      ...asRegistry,
      manifest,
    ]);
    expect([refused.code, refused.err[0]]).toEqual([1, everyOfTwo]);
    const alone = await run(['registry:import', '--from', 'dbt', '--org', slug, '--allow-removals', '2', manifest]);
    expect([alone.code, alone.err[0]]).toEqual([2, 'Error: --allow-removals goes with --apply']);
    expect(await keysOf(slug)).toEqual(['a', 'b']);
    const args = [
      'registry:import',
      '--from',
      'dbt',
      '--org',
      slug,
      '--apply',
      '--prune',
      '--allow-removals',
      '2',
      ...asRegistry,
    ];
    await ok([...args, manifest]);
    expect(await keysOf(slug)).toEqual([]);
  });
});

describe('registry:apply --check and drift made outside the file', () => {
  it('a change made with SQL (an operator, a restore, another tool) is drift: exit 1, and an apply repairs it', async () => {
    const { slug } = await newOrg();
    const path = file('sql-drift.yaml', stringify(document(slug, [metric('a')])));
    await ok(['registry:apply', '--org', slug, path]);
    expect((await run(['registry:apply', '--org', slug, '--check', path])).code).toBe(0);
    await db.prisma.$executeRaw`UPDATE metric SET name = 'Renamed by hand'
      WHERE key = 'a' AND org_id = (SELECT id FROM organization WHERE slug = ${slug})`;
    const drift = await run(['registry:apply', '--org', slug, '--check', path]);
    expect(drift.code, drift.text).toBe(1);
    expect(drift.out).toContainEqual(expect.stringMatching(planLine('updated', 'a', 'name')));
    await ok(['registry:apply', '--org', slug, path]);
    const row = await db.prisma.metric.findFirstOrThrow({ where: { organization: { slug }, key: 'a' } });
    expect(row.name).toBe('Metric a');
  });
});

describe('registry:apply with bad input: exit 1, the place named, nothing written', () => {
  it('a document that breaks a rule: every problem with its path, line and column', async () => {
    const { slug } = await newOrg();
    const text = `organization: ${slug}
defaults:
  project: Core
  owner_team: Finance
metrics:
  - key: good
    name: Good
    description: d
    sql_expression: x
  - key: bad
    name: Bad
    description: d
    sql_expression: x
    lifecycle_status: SHIPPED
    colour: blue
`;
    const result = await run(['registry:apply', '--org', slug, file('bad.yaml', text)]);
    expect(result.code).toBe(1);
    expect(result.out).toEqual([]);
    expect(result.err).toEqual([
      'Document rejected, nothing was written:',
      '  metrics[1].lifecycle_status (line 14, column 23): Invalid option: expected one of "DRAFT"|"VALIDATED"|"CANDIDATE"|"APPROVED"|"RELEASED"|"DEPRECATED"',
      '  metrics[1].colour (line 15, column 13): unknown field "colour"',
    ]);
    expect(await keysOf(slug)).toEqual([]);
  });

  it('YAML that is more than data', async () => {
    const { slug } = await newOrg();
    const text = `organization: ${slug}\nmetrics: &m []\nagain: *m\n`;
    const result = await run(['registry:apply', '--org', slug, file('anchors.yaml', text)]);
    expect(result.code).toBe(1);
    expect(result.err[0]).toBe('Document rejected, nothing was written:');
    expect(result.err.slice(1)).toEqual([
      expect.stringMatching(/^ {2}line 2, column \d+: anchors \(&m\) are not allowed$/),
      '  line 3, column 8: aliases (*m) are not allowed',
    ]);
  });

  it('a relationship to a metric that prune would remove', async () => {
    const { slug } = await newOrg();
    await ok(['registry:apply', '--org', slug, file('one.yaml', stringify(document(slug, [metric('old')])))]);
    const text = stringify(document(slug, [metric('new', { relationships: [{ kind: 'supersedes', target: 'old' }] })]));
    const result = await run(['registry:apply', '--org', slug, '--prune', file('prune.yaml', text)]);
    expect(result.code).toBe(1);
    expect(result.err).toEqual([
      'Document rejected, nothing was written:',
      expect.stringMatching(
        /^ {2}metrics\[0\]\.relationships\[0\]\.target \(line \d+, column \d+\): metric "old" is not in the document, so prune would remove it$/,
      ),
    ]);
    expect(await keysOf(slug)).toEqual(['old']);
  });

  it('a JSON \\u0000 escape in a value (PostgreSQL cannot store it): exit 1 naming the field, nothing written', async () => {
    const { slug } = await newOrg();
    const path = file('nul.json', JSON.stringify(document(slug, [metric('a', { name: 'Net\u0000Revenue' })])));
    const result = await run(['registry:apply', '--org', slug, path]);
    expect(result.code).toBe(1);
    expect(result.err[0]).toBe('Document rejected, nothing was written:');
    expect(result.err.join('\n')).toContain('metrics[0].name');
    expect(await keysOf(slug)).toEqual([]);
  });

  it('a file that is not there', async () => {
    const { slug } = await newOrg();
    const missing = join(scratch, 'missing.yaml');
    const result = await run(['registry:apply', '--org', slug, missing]);
    expect(result.code).toBe(1);
    expect(result.err.join('\n')).toContain(`cannot read ${missing}`);
  });

  it('an organization that does not exist', async () => {
    const path = file('nowhere.yaml', stringify(document('no-such-org', [metric('a')])));
    const result = await run(['registry:apply', '--org', 'no-such-org', path]);
    expect(result.code).toBe(1);
    expect(result.err).toEqual(['Error: organization not found: no-such-org']);
  });

  it('a document for another organization than --org', async () => {
    const { slug } = await newOrg();
    const other = await newOrg();
    const path = file('other.yaml', stringify(document(other.slug, [metric('a')])));
    const result = await run(['registry:apply', '--org', slug, path]);
    expect(result.code).not.toBe(0);
    expect(result.err[0]).toBe(`Error: the document is for organization "${other.slug}", not ${slug}`);
    expect(await keysOf(slug)).toEqual([]);
    expect(await keysOf(other.slug)).toEqual([]);
  });

  it('no --org: usage, exit 2, nothing written', async () => {
    const path = file('no-org.yaml', stringify(document('acme-analytics', [metric('no_org')])));
    const result = await run(['registry:apply', path]);
    expect(result.code).toBe(2);
    expect(result.err).toEqual([
      'Error: --org is required',
      'Usage: npm run cli -- registry:apply --org ORG FILE [FILE ...] [--dry-run] [--prune [--allow-removals N]] [--check] [--fail-on-impact]',
    ]);
    expect(await db.prisma.metric.count({ where: { key: 'no_org' } })).toBe(0);
  });

  it.each([
    ['no FILE', ['registry:apply', '--org', 'x'], 'expected 1 to 100 argument(s), got 0'],
    [
      '101 FILEs',
      ['registry:apply', '--org', 'x', ...Array.from({ length: 101 }, (_, i) => `${i}.yaml`)],
      'expected 1 to 100 argument(s), got 101',
    ],
    [
      '--url with two FILEs',
      ['registry:apply', '--org', 'x', '--check', '--url', 'http://x', 'a.yaml', 'b.yaml'],
      '--url takes one file',
    ],
    ['an unknown option', ['registry:apply', '--org', 'x', '--force', 'a.yaml'], "Unknown option '--force'"],
  ])('%s: usage, exit 2', async (_name, argv, message) => {
    const result = await run(argv);
    expect(result.code).toBe(2);
    expect(result.err[0]).toContain(message);
    expect(result.err[1]).toBe(
      'Usage: npm run cli -- registry:apply --org ORG FILE [FILE ...] [--dry-run] [--prune [--allow-removals N]] [--check] [--fail-on-impact]',
    );
  });
});

describe('org:create and user:add', () => {
  it('org:create takes a plan, and refuses a slug taken, malformed or shaped like a UUID', async () => {
    const created = await ok([
      'org:create',
      '--slug',
      'enterprise-co',
      '--name',
      'Enterprise Co',
      '--plan',
      'enterprise',
    ]);
    expect(created.out[0]).toMatch(/, plan enterprise$/);
    const taken = await run(['org:create', '--slug', 'enterprise-co', '--name', 'Again']);
    expect([taken.code, taken.err]).toEqual([1, ['Error: organization enterprise-co already exists']]);
    for (const slug of ['Upper-Case', 'with space', '0b6f1d9e-9a5c-4a53-9a8e-2f4a8c2e1b11', 'x'.repeat(64)]) {
      const bad = await run(['org:create', '--slug', slug, '--name', 'Bad']);
      expect(bad.code, slug).toBe(1);
      expect(bad.err[0]).toMatch(/^Error: a slug is /);
    }
    // An organization's pages live at /{slug}: the service's own first path segments are not slugs.
    for (const slug of ['api', 'docs', 'sign-in']) {
      const reserved = await run(['org:create', '--slug', slug, '--name', 'Reserved']);
      expect([reserved.code, reserved.err]).toEqual([
        1,
        [`Error: ${slug} is a path of the service itself: choose another slug`],
      ]);
    }
    const plan = await run(['org:create', '--slug', 'free-co', '--name', 'Free', '--plan', 'free']);
    expect(plan.code).toBe(1);
    expect(plan.err[0]).toBe(
      'Error: plan must be one of developer, starter, team, enterprise, design_partner (got: free)',
    );
    expect(await db.prisma.organization.count({ where: { slug: { in: ['free-co', 'Upper-Case'] } } })).toBe(0);
    expect((await run(['org:create', '--slug', 'no-name'])).code).toBe(2);
  });

  it('user:add creates the user once, changes a member’s role, and refuses bad input', async () => {
    const { slug } = await newOrg();
    const email = `dana-${slug}@example.com`;
    const add = (role: string) => run(['user:add', '--org', slug, '--email', email, '--name', 'Dana', '--role', role]);
    expect((await add('member')).out).toEqual([`Added ${email} as member in organization ${slug} (new user)`]);
    expect((await add('member')).out).toEqual([`${email} is already member in organization ${slug}`]);
    expect((await add('admin')).out).toEqual([`Changed ${email} from member to admin in organization ${slug}`]);
    expect(await db.prisma.user.count({ where: { email } })).toBe(1);
    // The same person in a second organization is the same user.
    const other = await newOrg();
    const second = await run(['user:add', '--org', other.slug, '--email', email, '--name', 'Dana', '--role', 'viewer']);
    expect(second.out).toEqual([`Added ${email} as viewer in organization ${other.slug}`]);
    expect(await db.prisma.user.count({ where: { email } })).toBe(1);

    const badRole = await add('superuser');
    expect([badRole.code, badRole.err]).toEqual([
      1,
      ['Error: role must be one of owner, admin, member, viewer (got: superuser)'],
    ]);
    const badEmail = await run([
      'user:add',
      '--org',
      slug,
      '--email',
      'not an email',
      '--name',
      'X',
      '--role',
      'member',
    ]);
    expect(badEmail.code).toBe(1);
    expect(badEmail.err[0]).toMatch(/^Error: not an email address/);
    const noOrg = await run([
      'user:add',
      '--org',
      'no-such-org',
      '--email',
      'x@example.com',
      '--name',
      'X',
      '--role',
      'member',
    ]);
    expect([noOrg.code, noOrg.err]).toEqual([1, ['Error: organization not found: no-such-org']]);
    expect(await db.prisma.user.count({ where: { email: 'x@example.com' } })).toBe(0);
  });
});

describe('tokens:create, tokens:list, tokens:revoke', () => {
  it('a token for CI: created once, listed without its secret, revoked (then refused over HTTP)', async () => {
    const { slug } = await newOrg();
    const created = await ok(['tokens:create', '--org', slug, '--name', 'CI', '--scopes', 'registry:write']);
    const token = created.out.find((line) => TOKEN_LINE.test(line)) ?? '';
    const row = await db.prisma.serviceToken.findUniqueOrThrow({ where: { tokenHash: sha256(token) } });
    expect(created.out[0]).toBe(`Created service token ${row.id} "CI" for organization ${slug}`);
    expect(created.out).toContain('  scopes: registry:write');

    const listed = await ok(['tokens:list', '--org', slug]);
    expect(listed.out[0]).toMatch(/^id\s+name\s+token_prefix\s+scopes\s+created\s+revoked\s+last used$/);
    const line = listed.out.find((text) => text.startsWith(row.id)) ?? '';
    expect(line).toContain(token.slice(0, 12));
    expect(listed.text).not.toContain(token);
    expect(listed.text).not.toMatch(/cls_[0-9a-f]{13}/);

    const put = () =>
      app.inject({
        method: 'PUT',
        url: '/api/registry?dry_run=true',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: JSON.stringify(document(slug, [])),
      });
    expect((await put()).statusCode).toBe(200);
    const revoked = await ok(['tokens:revoke', '--org', slug, '--id', row.id]);
    expect(revoked.out[0]).toMatch(new RegExp(`^Revoked service token ${row.id} at \\d{4}-`));
    const refused = await put();
    expect([refused.statusCode, refused.json()]).toEqual([401, { error: 'API key has been revoked' }]);
    const again = await ok(['tokens:revoke', '--org', slug, '--id', row.id]);
    expect(again.out[0]).toMatch(new RegExp(`^Service token ${row.id} was already revoked at `));
    const audits = await db.prisma.serviceTokenAudit.findMany({ where: { serviceTokenId: row.id } });
    expect(audits.map((audit) => audit.action).sort()).toEqual(['created', 'revoked']);
  });

  it.each([
    ['a read scope', 'canonical-metric-api:read'],
    ['an unknown scope', 'registry:write,registry:admin'],
    ['no scope', ','],
  ])('%s: exit 1, nothing created, no secret printed', async (_name, scopes) => {
    const { slug } = await newOrg();
    const result = await run(['tokens:create', '--org', slug, '--name', 'Bad', '--scopes', scopes]);
    expect(result.code).toBe(1);
    expect(result.err[0]).toMatch(/^Error: scopes must be one or more of registry:write, validations:write/);
    expect(result.text).not.toMatch(/cls_[0-9a-f]{40}/);
    expect(await db.prisma.serviceToken.count({ where: { organization: { slug } } })).toBe(0);
  });

  it('no tokens yet; an unknown id to revoke', async () => {
    const { slug } = await newOrg();
    expect((await ok(['tokens:list', '--org', slug])).out).toEqual([`No service tokens in organization ${slug}.`]);
    const unknown = await run(['tokens:revoke', '--org', slug, '--id', '0b6f1d9e-9a5c-4a53-9a8e-2f4a8c2e1b11']);
    expect(unknown.code).toBe(1);
    expect(unknown.err[0]).toMatch(/^Error: service token not found in organization /);
  });
});

describe('validation:record', () => {
  it('records evidence at --ran-at once; the same again is already recorded', async () => {
    const { slug } = await newOrg();
    await ok(['registry:apply', '--org', slug, '-'], stringify(document(slug, [metric('m')])));
    const argv = [
      'validation:record',
      '--org',
      slug,
      '--metric',
      'm',
      '--status',
      'failed',
      '--ran-at',
      '2026-03-01T10:00:00Z',
    ];
    expect((await ok(argv)).out).toEqual(['Recorded failed validation of m at 2026-03-01T10:00:00.000Z']);
    expect((await ok(argv)).out).toEqual(['Already recorded: failed validation of m at 2026-03-01T10:00:00.000Z']);
    const rows = await db.prisma.validation.findMany({ where: { metric: { organization: { slug }, key: 'm' } } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'failed' });
  });

  it('an unknown metric: exit 1, nothing recorded', async () => {
    const { slug } = await newOrg();
    const result = await run(['validation:record', '--org', slug, '--metric', 'ghost', '--status', 'passed']);
    expect([result.code, result.err]).toEqual([1, ['Error: no metric with key "ghost" in this organization']]);
  });

  it.each([
    ['a status that is not passed or failed', ['--status', 'green'], /^Error: --status: /],
    [
      'a ran-at that is not a timestamp',
      ['--status', 'passed', '--ran-at', 'yesterday'],
      /^Error: --ran_at: |^Error: --ran-at: /,
    ],
    ['no --status', [], /^Error: --status is required$/],
  ])('%s: usage, exit 2', async (_name, extra, message) => {
    const { slug } = await newOrg();
    await ok(['registry:apply', '--org', slug, '-'], stringify(document(slug, [metric('m')])));
    const result = await run(['validation:record', '--org', slug, '--metric', 'm', ...extra]);
    expect(result.code).toBe(2);
    expect(result.err[0]).toMatch(message);
    expect(await db.prisma.validation.count({ where: { metric: { organization: { slug } } } })).toBe(0);
  });
});

describe('help', () => {
  it('lists the new commands', async () => {
    const text = (await ok(['help'])).out.join('\n');
    for (const usage of [
      'org:create --slug SLUG --name NAME',
      'user:add --org ORG --email EMAIL --name NAME --role owner|admin|member|viewer',
      'tokens:create --org ORG --name NAME --scopes registry:write,validations:write',
      'tokens:list --org ORG',
      'tokens:revoke --org ORG --id TOKEN_ID',
      'registry:apply --org ORG FILE [FILE ...] [--dry-run] [--prune [--allow-removals N]] [--check]',
      'validation:record --org ORG --metric KEY --status passed|failed',
    ]) {
      expect(text).toContain(usage);
    }
  });
});
