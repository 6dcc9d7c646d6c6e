/**
 * The audit's foreign files, sent as CI would send them: to
 * `PUT /api/registry?format=...&dry_run=true` of a server process with the
 * heap `npm start` gives it (256 MB), over a real socket. Each is answered
 * (a plan, or a 400 naming the place) and the server keeps answering
 * /healthz meanwhile; before, each ended the process or answered 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { createTestTarget, usingPostgres } from '../helpers/database.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { newTeamOrg, type TeamOrg } from '../registry/support.js';
import { deepGovernanceDocument, derivedChain, exponentialDerived, osiWithoutNames } from './hostile-documents.js';

let server: ServerProcess;
let org: TeamOrg;
let drop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  if (!usingPostgres) return;
  const created = await createTestTarget();
  if (created.target.kind !== 'postgres') throw new Error('PostgreSQL expected');
  drop = created.drop;
  const database = await openDatabase(created.target);
  try {
    org = await newTeamOrg(database.prisma, 'hostile');
  } finally {
    await database.close();
  }
  server = await startServerProcess(
    { DATABASE_URL: created.target.url },
    { nodeOptions: ['--max-semi-space-size=16', '--max-old-space-size=256'] },
  );
}, 120_000);

afterAll(async () => {
  await server?.stop('SIGKILL');
  await drop?.();
});

/** The import's answer, and how long /healthz took when asked while the import ran. */
async function importFile(format: 'dbt' | 'osi', file: unknown) {
  const answer = fetch(`${server.base}/api/registry?format=${format}&dry_run=true`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${org.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(file),
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const asked = performance.now();
  const health = await fetch(`${server.base}/healthz`);
  const healthMs = performance.now() - asked;
  const res = await answer;
  const body = (await res.json()) as { error?: string; details?: string[]; data?: { totals: { created: number } } };
  expect(health.status).toBe(200);
  expect(server.child.exitCode).toBeNull();
  return { status: res.status, body, healthMs };
}

describe.skipIf(!usingPostgres)('hostile foreign files over a socket, 256 MB of heap', () => {
  it('20 derived metrics of x + x + x + x each over the one before (2.6 KB): a plan', async () => {
    const { status, body, healthMs } = await importFile('dbt', exponentialDerived(20));
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.data?.totals.created).toBe(21);
    expect(healthMs).toBeLessThan(5000);
  }, 60_000);

  it('a chain of 20,000 derived metrics (2.3 MB): 400, refused as it is read', async () => {
    const { status, body, healthMs } = await importFile('dbt', derivedChain(20_000));
    expect(status).toBe(400);
    // 20,001 metrics pass the entries a list may hold: refused before anything is translated.
    expect(body.error).toMatch(/metrics: more than 20000 entries$/);
    expect(healthMs).toBeLessThan(5000);
  }, 60_000);

  it('a chain of 19,000 derived metrics: 400 naming the chain', async () => {
    const { status, body, healthMs } = await importFile('dbt', derivedChain(19_000));
    expect(status).toBe(400);
    expect(body.error).toBe(
      'metrics[65].type_params: metric "m65": its input metrics go 65 deep (m65 -> m64 -> m63 -> m62 -> m61 -> ...); at most 64',
    );
    expect(healthMs).toBeLessThan(5000);
  }, 60_000);

  it('OSI: 3,000 datasets and 3,000 metrics naming none: a plan', async () => {
    const { status, body, healthMs } = await importFile('osi', osiWithoutNames(3000));
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.data?.totals.created).toBe(3000);
    expect(healthMs).toBeLessThan(5000);
  }, 120_000);

  it('OSI: METRIC_GOVERNANCE data nested 100,000 deep: 400 naming the place', async () => {
    const { status, body } = await importFile('osi', deepGovernanceDocument(100_000));
    expect(status).toBe(400);
    expect(body.error).toBe(
      'semantic_model[0].metrics[0].custom_extensions[0].data: metric "k": the METRIC_GOVERNANCE data is nested deeper than 32 levels',
    );
  }, 60_000);
});
