/**
 * Issue 34, "Done when" 3, end to end: the plan of a deprecation names the
 * metrics built on the metric (through their inputs, however far down) and
 * the keys that read it lately; `registry:apply --dry-run --fail-on-impact`
 * exits 1 for it and 0 for a change without impact (docs/impact.md). The
 * reads are made over a listening socket (REST, MCP) with API keys; the HTTP
 * dry run on the same instance writes the counts it holds before it plans,
 * and the CLI, run in process as CI runs it, reads what was written.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/admin/api-keys.js';
import { runCli } from '../../src/cli-commands.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type DocMetric, doc, docMetric, newTeamOrg, type TeamOrg, toYaml, uuidV5 } from '../registry/support.js';
import { type FinanceGovernance, financeManifest } from './finance-manifest.js';
import { SocketClient, toolResult } from './over-socket.js';

let t: TestApp;
let http: SocketClient;
let scratch: string;

beforeAll(async () => {
  t = await startTestApp();
  http = new SocketClient(await t.app.listen({ port: 0, host: '127.0.0.1' }));
  scratch = mkdtempSync(join(tmpdir(), 'issue-34-impact-'));
});
afterAll(async () => {
  await t?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

let files = 0;
/** `content` in a file of its own; its path. */
function file(content: string, extension: string): string {
  const path = join(scratch, `${++files}.${extension}`);
  writeFileSync(path, content);
  return path;
}

/** The CLI as CI runs it, in process, against the app's database. */
async function cli(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, {
    prisma: t.database.prisma,
    out: (line) => out.push(line),
    err: (line) => err.push(line),
  });
  return { code, out, text: [...out, ...err].join('\n') };
}

const released = (key: string, fields: Record<string, unknown> = {}) =>
  docMetric(key, { lifecycle_status: 'RELEASED', ...fields });

describe('issue 34: the plan of a deprecation names its dependents and recent readers', () => {
  let org: TeamOrg;
  /** revenue and expense; profit over both; margin over profit and revenue; an unrelated metric */
  const metrics = (changes: Record<string, Record<string, unknown>> = {}): DocMetric[] => [
    released('total_revenue', changes.total_revenue),
    released('total_expense', changes.total_expense),
    released('total_profit', { inputs: ['total_revenue', 'total_expense'], ...changes.total_profit }),
    released('profit_margin', { inputs: ['total_profit', 'total_revenue'], ...changes.profit_margin }),
    released('headcount', changes.headcount),
  ];

  beforeAll(async () => {
    org = await newTeamOrg(t.database.prisma, 'impact');
    await http.apply(org, doc(org.slug, metrics()));
  });

  it('HTTP dry run: dependents (directly and through other inputs) and the key that read it; nothing written', async () => {
    const looker = await createApiKey(t.database.prisma, { org: org.slug, name: 'Looker production' });
    const revenue = uuidV5(org.id, 'total_revenue');
    // A dashboard reads the metric (twice: one reader), and the headcount; org.key reads nothing.
    for (const path of [`/api/v1/metrics/${revenue}/contract`, `/api/v1/metrics/${revenue}`]) {
      expect((await http.get(path, looker.secret)).status).toBe(200);
    }
    expect((await http.get(`/api/v1/metrics/${uuidV5(org.id, 'headcount')}`, looker.secret)).status).toBe(200);

    const deprecation = doc(org.slug, metrics({ total_revenue: { lifecycle_status: 'DEPRECATED' } }));
    const planned = await http.apply(org, deprecation, 'dry_run=true');
    expect(planned).toMatchObject({ dry_run: true, applied: false });
    expect(planned.impact).toEqual([
      {
        key: 'total_revenue',
        change: 'deprecated',
        dependents: { count: 2, keys: ['profit_margin', 'total_profit'] },
        readers: { count: 1, keys: ['Looker production'] },
      },
    ]);
    const contract = await http.get(`/api/v1/metrics/${revenue}/contract`, org.key);
    expect(contract.body.data.lifecycle_status).toBe('RELEASED');
  });

  it('registry:apply --dry-run --fail-on-impact exits 1 for the deprecation, naming dependents and readers', async () => {
    const deprecation = file(
      toYaml(doc(org.slug, metrics({ total_revenue: { lifecycle_status: 'DEPRECATED' } }))),
      'yaml',
    );
    const result = await cli(['registry:apply', '--org', org.slug, deprecation, '--dry-run', '--fail-on-impact']);
    expect(result.code, result.text).toBe(1);
    expect(result.out).toContain(
      '  deprecated  total_revenue: 2 dependents (profit_margin, total_profit), 1 reader (Looker production)',
    );
    expect(result.out.at(-1)).toBe('Impact: 1 changed metric has dependents or recent readers.');
  });

  it('exits 0 for changes without impact: a deprecation of what nothing is built on or reads, a description', async () => {
    const leaf = file(toYaml(doc(org.slug, metrics({ profit_margin: { lifecycle_status: 'DEPRECATED' } }))), 'yaml');
    const quiet = await cli(['registry:apply', '--org', org.slug, leaf, '--dry-run', '--fail-on-impact']);
    expect(quiet.code, quiet.text).toBe(0);
    expect(quiet.out).toContain('  deprecated  profit_margin: 0 dependents, 0 readers');

    const words = file(toYaml(doc(org.slug, metrics({ total_revenue: { description: 'Better words.' } }))), 'yaml');
    const described = await cli(['registry:apply', '--org', org.slug, words, '--dry-run', '--fail-on-impact']);
    expect(described.code, described.text).toBe(0);
    expect(described.text).not.toContain('Impact');
  });
});

describe('issue 34: the deprecation of the scenario, from a dbt manifest', () => {
  let org: TeamOrg;
  const manifest = (revenue: string): FinanceGovernance => ({
    total_revenue: { owner_team: 'Finance Analytics', lifecycle_status: revenue },
  });

  beforeAll(async () => {
    org = await newTeamOrg(t.database.prisma, 'impact-dbt');
    await http.apply(org, financeManifest(manifest('RELEASED')), 'format=dbt&default_lifecycle=RELEASED');
  });

  it('an agent reads total_revenue over MCP; deprecating it names total_profit and that key, over HTTP and in the CLI', async () => {
    const agent = await http.mcp(org);
    try {
      const contract = await toolResult(agent, 'get_metric_contract', { key: 'total_revenue' });
      expect(contract.metric_id).toBe(uuidV5(org.id, 'total_revenue'));
    } finally {
      await agent.close();
    }
    const deprecating = financeManifest(manifest('DEPRECATED'));
    const planned = await http.apply(org, deprecating, 'format=dbt&default_lifecycle=RELEASED&dry_run=true');
    expect(planned.impact).toEqual([
      {
        key: 'total_revenue',
        change: 'deprecated',
        dependents: { count: 1, keys: ['total_profit'] },
        readers: { count: 1, keys: ['reader'] },
      },
    ]);

    const path = file(JSON.stringify(deprecating), 'json');
    const imported = await cli([
      'registry:import',
      '--from',
      'dbt',
      '--org',
      org.slug,
      path,
      '--default-lifecycle',
      'RELEASED',
      '--apply',
      '--dry-run',
      '--fail-on-impact',
    ]);
    expect(imported.code, imported.text).toBe(1);
    expect(imported.out).toContain('  deprecated  total_revenue: 1 dependent (total_profit), 1 reader (reader)');

    // The same manifest as applied: nothing changes, nothing is impacted.
    const same = file(JSON.stringify(financeManifest(manifest('RELEASED'))), 'json');
    const none = await cli([
      'registry:import',
      '--from',
      'dbt',
      '--org',
      org.slug,
      same,
      '--default-lifecycle',
      'RELEASED',
      '--apply',
      '--dry-run',
      '--fail-on-impact',
    ]);
    expect(none.code, none.text).toBe(0);
  });
});
