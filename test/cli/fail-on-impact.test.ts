/**
 * `registry:apply --dry-run --fail-on-impact` (docs/impact.md): the plan's
 * impact printed, exit 1 when a metric it deprecates, removes, supersedes or
 * redefines has dependents (metric_input, written here by SQL) or recent
 * readers, 0 otherwise; with --check, drift keeps exit 1; a refused document
 * is 2; without --dry-run or --check it is a usage error. Run in process
 * against PostgreSQL, as the other CLI tests.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../../src/cli-commands.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { type DocMetric, doc, docMetric, newTeamOrg, type TeamOrg } from '../registry/support.js';

let db: TestDatabase;
let scratch: string;
let org: TeamOrg;
const ids: Record<string, string> = {};

const released = (key: string, fields: Record<string, unknown> = {}) =>
  docMetric(key, { lifecycle_status: 'RELEASED', ...fields });
const METRICS = ['base', 'derived', 'read', 'quiet'].map((key) => released(key));

let sequence = 0;
function file(metrics: DocMetric[]): string {
  const path = join(scratch, `${++sequence}.yaml`);
  writeFileSync(path, stringify(doc(org.slug, metrics)));
  return path;
}

async function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { prisma: db.prisma, out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out, err, text: [...out, ...err].join('\n') };
}

const withChange = (key: string, fields: Record<string, unknown>) =>
  METRICS.map((metric) => (metric.key === key ? released(key, fields) : metric));

beforeAll(async () => {
  db = await createTestDatabase();
  scratch = mkdtempSync(join(tmpdir(), 'fail-on-impact-'));
  org = await newTeamOrg(db.prisma, 'cli-impact');
  const applied = await run(['registry:apply', '--org', org.slug, file(METRICS)]);
  expect(applied.code, applied.text).toBe(0);
  for (const row of await db.prisma.metric.findMany({ where: { orgId: org.id } })) ids[row.key] = row.id;
  // derived is built on base; read was read by the organization's key yesterday.
  await db.prisma.$executeRaw`
    INSERT INTO metric_input (metric_id, input_metric_id, position) VALUES (${ids.derived}::uuid, ${ids.base}::uuid, 0)`;
  const key = await db.prisma.apiKey.findFirstOrThrow({ where: { orgId: org.id } });
  await db.prisma.$executeRaw`
    INSERT INTO metric_usage (metric_id, day, key_id, org_id, reads)
    VALUES (${ids.read}::uuid, (now() AT TIME ZONE 'UTC')::date - 1, ${key.id}::uuid, ${org.id}::uuid, 3)`;
});
afterAll(async () => {
  await db?.drop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const dryRun = (metrics: DocMetric[], ...flags: string[]) =>
  run(['registry:apply', '--org', org.slug, file(metrics), '--dry-run', '--fail-on-impact', ...flags]);

describe('registry:apply --fail-on-impact', () => {
  it('exits 1 for a deprecation with a dependent, naming it', async () => {
    const result = await dryRun(withChange('base', { lifecycle_status: 'DEPRECATED' }));
    expect(result.code, result.text).toBe(1);
    expect(result.out).toContain('Impact (dependents; readers in the last 30 days):');
    expect(result.out).toContain('  deprecated  base: 1 dependent (derived), 0 readers');
    expect(result.out.at(-1)).toBe('Impact: 1 changed metric has dependents or recent readers.');
  });

  it('exits 1 for a definition change of a metric read lately, naming the key', async () => {
    const result = await dryRun(withChange('read', { sql_expression: 'SUM(net_amount)' }));
    expect(result.code, result.text).toBe(1);
    expect(result.out).toContain('  definition_changed  read: 0 dependents, 1 reader (reader)');
  });

  it('exits 1 for a removal (prune) of a metric with a dependent', async () => {
    const result = await dryRun(
      METRICS.filter((metric) => metric.key !== 'base'),
      '--prune',
    );
    expect(result.code, result.text).toBe(1);
    expect(result.out).toContain('  removed  base: 1 dependent (derived), 0 readers');
  });

  it('exits 0 for a change without impact: a deprecation of what nothing uses, a description', async () => {
    const quiet = await dryRun(withChange('quiet', { lifecycle_status: 'DEPRECATED' }));
    expect(quiet.code, quiet.text).toBe(0);
    expect(quiet.out).toContain('  deprecated  quiet: 0 dependents, 0 readers');
    const described = await dryRun(withChange('base', { description: 'Better words.' }));
    expect(described.code, described.text).toBe(0);
    expect(described.text).not.toContain('Impact');
  });

  it('with --check: drift is 1 with or without impact, no drift is 0', async () => {
    const drift = await dryRun(withChange('base', { description: 'Better words.' }), '--check');
    expect([drift.code, drift.out.at(-1)]).toEqual([1, 'Drift: the registry differs from the document.']);
    const both = await dryRun(withChange('base', { lifecycle_status: 'DEPRECATED' }), '--check');
    expect(both.code, both.text).toBe(1);
    expect(both.out).toContain('Impact: 1 changed metric has dependents or recent readers.');
    const same = await dryRun(METRICS, '--check');
    expect([same.code, same.out.at(-1)]).toEqual([0, 'No drift.']);
  });

  it('a refused document is 2; without --dry-run or --check a usage error (2), nothing written', async () => {
    const refused = await dryRun([released('base', { lifecycle_status: 'SHIPPED' })]);
    expect(refused.code, refused.text).toBe(2);
    expect(refused.out[0] ?? refused.err[0]).toMatch(/^(Error: )?Document rejected, nothing was written:/);
    const applying = await run([
      'registry:apply',
      '--org',
      org.slug,
      file(withChange('base', { lifecycle_status: 'DEPRECATED' })),
      '--fail-on-impact',
    ]);
    expect(applying.code).toBe(2);
    expect(applying.err[0]).toBe('Error: --fail-on-impact goes with --dry-run or --check');
    expect((await db.prisma.metric.findUniqueOrThrow({ where: { id: ids.base } })).lifecycleStatus).toBe('RELEASED');
    const imported = await run(['registry:import', '--from', 'dbt', '--org', org.slug, 'x.json', '--fail-on-impact']);
    expect([imported.code, imported.err[0]]).toEqual([2, 'Error: --fail-on-impact goes with --apply']);
  });
});
