/**
 * The change feed across real server processes over one PostgreSQL database:
 * a long-poll on one instance wakes for a commit made through another, a
 * cursor survives every instance restarting, and the periodic sweep of a
 * running server announces a verdict that time changed (evidence going
 * stale), within a sweep.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { createTestTarget, usingPostgres } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { doc, docMetric, newTeamOrg, type TeamOrg } from '../registry/support.js';

let databaseUrl: string;
let drop: () => Promise<void>;
let org: TeamOrg;
const servers: ServerProcess[] = [];

/** Seconds after which validation evidence is stale on these servers (TRUST_STALE_VALIDATION_DAYS). */
const STALE_AFTER_S = 6;

async function startServer(): Promise<ServerProcess> {
  const server = await startServerProcess({
    DATABASE_URL: databaseUrl,
    TRUST_SWEEP_INTERVAL_S: '1',
    TRUST_STALE_VALIDATION_DAYS: String(STALE_AFTER_S / 86_400),
  });
  servers.push(server);
  return server;
}

async function call(server: ServerProcess, path: string, init: RequestInit & { key?: string } = {}) {
  const res = await fetch(`${server.base}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${init.key ?? org.key}`, ...(init.headers as Record<string, string>) },
  });
  return { status: res.status, body: await res.json() };
}

async function apply(server: ServerProcess, metrics: ReturnType<typeof docMetric>[]) {
  const res = await call(server, '/api/registry', {
    method: 'PUT',
    key: org.token,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(doc(org.slug, metrics)),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

beforeAll(async () => {
  if (!usingPostgres) return;
  const created = await createTestTarget();
  if (created.target.kind !== 'postgres') throw new Error('PostgreSQL expected');
  databaseUrl = created.target.url;
  drop = created.drop;
  const database = await openDatabase(created.target);
  try {
    org = await newTeamOrg(database.prisma, 'procs');
  } finally {
    await database.close();
  }
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop('SIGKILL')));
  await drop?.();
});

describe.skipIf(lacks(POSTGRES))('the feed across server processes', () => {
  it('wakes a long-poll on one instance for an apply through another, long before its wait runs out', async () => {
    const [a, b] = [await startServer(), await startServer()];
    const start = await call(b, '/api/v1/changes');
    const polled = call(b, `/api/v1/changes?after=${start.body.next_cursor}&wait=25`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const committed = Date.now();
    await apply(a as ServerProcess, [docMetric('across', { lifecycle_status: 'RELEASED' })]);
    const page = await polled;
    const latency = Date.now() - committed;
    expect(page.status).toBe(200);
    expect(page.body.data.map((e: { type: string }) => e.type)).toEqual(['metric.created']);
    // The apply's own round trip is part of it: the poll answered well before its wait ran out.
    expect(latency).toBeLessThan(5000);
  }, 60_000);

  it('announces evidence that went stale, from the running sweep', async () => {
    const [a] = servers as [ServerProcess];
    const before = await call(a, '/api/v1/changes?limit=500');
    const recorded = await call(a, '/api/validations', {
      method: 'POST',
      key: org.token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        results: [{ metric_key: 'across', ran_at: new Date().toISOString(), status: 'passed', source: 'ci' }],
      }),
    });
    expect(recorded.status, JSON.stringify(recorded.body)).toBe(200);
    const events: { type: string; data: Record<string, unknown> }[] = [];
    let cursor = before.body.next_cursor;
    const deadline = Date.now() + (STALE_AFTER_S + 10) * 1000;
    while (Date.now() < deadline && !events.some((e) => JSON.stringify(e.data).includes('stale_validation'))) {
      const page = await call(a, `/api/v1/changes?after=${cursor}&wait=5`);
      events.push(...page.body.data);
      cursor = page.body.next_cursor;
    }
    const trust = events.filter((e) => e.type === 'metric.trust_changed');
    expect(trust.map((e) => e.data.to)).toEqual([
      { verdict: 'use', reasons: [] },
      { verdict: 'use_with_caution', reasons: ['stale_validation'] },
    ]);
  }, 60_000);

  it('keeps a cursor valid when every instance restarts', async () => {
    const [a] = servers as [ServerProcess];
    const cursor = (await call(a, '/api/v1/changes?limit=500')).body.next_cursor;
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    servers.length = 0;
    const c = await startServer();
    const empty = await call(c, `/api/v1/changes?after=${cursor}`);
    expect(empty).toEqual({ status: 200, body: { data: [], next_cursor: cursor, meta: { apiVersion: 'v1' } } });
    await apply(c, [
      docMetric('across', { lifecycle_status: 'RELEASED' }),
      docMetric('after_restart', { lifecycle_status: 'DRAFT' }),
    ]);
    const page = await call(c, `/api/v1/changes?after=${cursor}`);
    expect(page.body.data.map((e: { type: string; data: { key: string } }) => `${e.type} ${e.data.key}`)).toEqual([
      'metric.created after_restart',
    ]);
  }, 90_000);
});
