/**
 * The write side's audit (issue 33), findings 1, 4, 10, 12 and 16, each
 * reproduced as it was found: through a real socket to a server with a
 * 256 MB heap. Before the fix the first two ended the process (heap out of
 * memory), the dates and the long description answered 500, a validation
 * from an hour ahead was recorded, and terminal escapes, invalid UTF-8 and
 * duplicate JSON member names were stored. Each is now a 400 naming its
 * place, nothing is written, and the server goes on answering.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usingPostgres } from '../helpers/database.js';
import { type HostileServer, ordersManifest, revenueMetric, startHostileServer } from './hostile-server.js';
import { doc, docMetric } from './support.js';

let h: HostileServer;
beforeAll(async () => {
  if (usingPostgres) h = await startHostileServer();
}, 120_000);
afterAll(() => h?.stop());

async function refused(path: string, body: string | Uint8Array<ArrayBuffer>, error: RegExp, contentType?: string) {
  const before = await h.written();
  const res = await h.send(path, body, contentType);
  expect(res.status, res.body.slice(0, 500)).toBe(400);
  expect(JSON.parse(res.body).error).toMatch(error);
  expect(await h.health()).toBe(200);
  expect(await h.written()).toEqual(before);
}

const registry = (metrics: ReturnType<typeof docMetric>[]) => JSON.stringify(doc(h.org.slug, metrics));
const validation = (fields: Record<string, unknown>) =>
  JSON.stringify({
    results: [{ metric_key: 'existing', status: 'passed', ran_at: new Date().toISOString(), ...fields }],
  });

describe.skipIf(!usingPostgres)('bodies that ended the process or answered 500', () => {
  beforeAll(async () => {
    const res = await h.send('/api/registry', registry([docMetric('existing')]));
    expect(res.status, res.body).toBe(200);
  }, 120_000);

  it('finding 1: 400 KB of YAML nested 200,000 levels', async () => {
    const body = `x: ${'['.repeat(200_000)}`;
    await refused(
      '/api/registry?dry_run=true',
      body,
      /^line 1, column \d+: nested deeper than 64 levels$/,
      'application/yaml',
    );
  });

  it('finding 4: 6 MB of {"results":[{},{},...]} is counted before anything is built', async () => {
    const body = `{"results":[${new Array(2_000_000).fill('{}').join(',')}]}`;
    expect(body.length).toBeGreaterThan(6_000_000);
    await refused('/api/validations', body, /^line 1, column 3013: results: more than 1000 entries$/);
  });

  it('finding 10: ran_at more than 5 minutes ahead', async () => {
    const ahead = new Date(Date.now() + 6 * 60_000).toISOString();
    await refused(
      '/api/validations',
      validation({ ran_at: ahead }),
      /^results\[0\]\.ran_at: must not be more than 5 minutes in the future$/,
    );
  });

  it('finding 12: ran_at and released_at of year 0, and a description of 2.4 MB', async () => {
    const yearZero = '0000-01-01T00:00:00Z';
    const range = /must be a time from 1900-01-01 to 2200-12-31$/;
    await refused(
      '/api/validations',
      validation({ ran_at: yearZero }),
      new RegExp(`^results\\[0\\]\\.ran_at: ${range.source}`),
    );
    await refused(
      '/api/registry',
      registry([
        docMetric('old', { versions: [{ definition_version: '1.0.0', status: 'released', released_at: yearZero }] }),
      ]),
      new RegExp(`^metrics\\[0\\]\\.versions\\[0\\]\\.released_at: ${range.source}`),
    );
    await refused(
      '/api/registry',
      registry([docMetric('long', { description: 'x'.repeat(2_400_000) })]),
      /^metrics\[0\]\.description: at most 20000 characters \(this text has 2400000\)$/,
    );
  });

  it('finding 16: terminal escapes in a dbt label, a registry name and validation details', async () => {
    const terminalEscape = '\u001b]0;owned\u0007\u001b[2J';
    const manifest = ordersManifest([revenueMetric({ label: `Revenue${terminalEscape}` })]);
    const controls = /must not contain control characters \(other than tab and line breaks\) or unpaired surrogates$/;
    await refused(
      '/api/registry?format=dbt',
      JSON.stringify(manifest),
      new RegExp(`^metrics\\[0\\]\\.name .*${controls.source}`),
    );
    await refused(
      '/api/registry',
      registry([docMetric('esc', { name: `Esc${terminalEscape}` })]),
      new RegExp(`^metrics\\[0\\]\\.name: ${controls.source}`),
    );
    await refused(
      '/api/registry',
      `organization: ${h.org.slug}\nmetrics:\n  - key: c1\n    name: "C1 \\u009b31m"\n`,
      new RegExp(`^metrics\\[0\\]\\.name \\(line 4, column 11\\): ${controls.source}`),
      'application/yaml',
    );
    await refused(
      '/api/validations',
      validation({ details: `ok${terminalEscape}` }),
      new RegExp(`^results\\[0\\]\\.details: ${controls.source}`),
    );
  });

  it('finding 16: a control character in a part of a dbt manifest that is not imported does not refuse it', async () => {
    const manifest = ordersManifest([revenueMetric()], {
      project_configuration: { compiled_sql_note: 'select 1 -- \u001b[0m' },
    });
    const res = await h.send('/api/registry?format=dbt&dry_run=true', JSON.stringify(manifest));
    expect(res.status, res.body).toBe(200);
  });

  it('finding 16: invalid UTF-8 is refused, not read as U+FFFD', async () => {
    const text = new TextEncoder().encode(registry([docMetric('bad_utf8', { name: 'NAME' })]));
    const at = Buffer.from(text).indexOf('NAME');
    const body = new Uint8Array(text);
    body[at] = 0xff;
    await refused('/api/registry', body, /^The request body is not valid UTF-8$/);
    await refused(
      '/api/validations',
      Uint8Array.from([
        ...new TextEncoder().encode('{"results":[{"x":"'),
        0xc3,
        0x28,
        ...new TextEncoder().encode('"}]}'),
      ]),
      /not valid UTF-8/,
    );
  });

  it('finding 16: duplicate member names in JSON are refused as in YAML', async () => {
    const body = `{"organization":"${h.org.slug}","metrics":[{"key":"dup","name":"A","name":"B","description":"d","sql_expression":"x"}]}`;
    await refused('/api/registry', body, /^line 1, column \d+: metrics\[0\]\.name: duplicate key$/);
    await refused(
      '/api/validations',
      '{"results":[{"metric_key":"existing","metric_key":"other","status":"passed","ran_at":"2026-01-01T00:00:00Z"}]}',
      /^line 1, column 38: results\[0\]\.metric_key: duplicate key$/,
    );
  });
});
