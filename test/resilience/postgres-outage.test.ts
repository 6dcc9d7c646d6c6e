/**
 * PostgreSQL stopped under load: requests fail fast with the documented 500
 * JSON, /readyz says 503, the process neither crashes nor hangs, and it
 * serves again by itself once PostgreSQL is back. The test runs a PostgreSQL
 * server of its own on a spare port (never the shared one).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/client.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance } from '../helpers/app.js';
import { freePort } from '../helpers/ports.js';

const bin = '/usr/lib/postgresql/15/bin';
const runnable = existsSync(join(bin, 'pg_ctl')) && process.getuid?.() === 0;

function asPostgres(command: string, args: string[]) {
  return execFileSync('runuser', ['-u', 'postgres', '--', join(bin, command), ...args], { stdio: 'pipe' });
}

const fixture = registry();
const org = fixture.org({ slug: 'outage' });
const key = org.key();
const metric = org.metric({ name: 'Revenue' });

describe.skipIf(!runnable)('a PostgreSQL outage', () => {
  let dir: string;
  let port: number;
  let database: Database;
  const pgCtl = (...args: string[]) => asPostgres('pg_ctl', ['-D', join(dir, 'data'), '-w', ...args]);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mg-pg-'));
    execFileSync('chown', ['postgres', dir]);
    port = await freePort();
    asPostgres('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust']);
    pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, '-l', join(dir, 'log'), 'start');
    const url = `postgresql://postgres@127.0.0.1:${port}/postgres`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.end();
    database = await openDatabase({ kind: 'postgres', url }, { migrate: true, poolSize: 4 });
    await loadFixture(database.prisma, fixture.build());
  }, 120_000);

  afterAll(async () => {
    await database?.close().catch(() => {});
    try {
      pgCtl('-m', 'immediate', 'stop');
    } catch {
      // already stopped
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails fast with documented JSON while it is down, and recovers by itself', async () => {
    const app = await buildTestInstance(database);
    const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key.secret}` } });
    try {
      expect((await get(`/api/v1/metrics/${metric.id}`)).statusCode).toBe(200);

      // Under load: requests are in flight when the server goes away.
      const inFlight = Array.from({ length: 20 }, (_, i) =>
        get(i % 2 ? '/api/v1/metrics' : `/api/v1/metrics/${metric.id}`),
      );
      pgCtl('-m', 'immediate', 'stop');
      for (const res of await Promise.all(inFlight)) {
        expect([200, 500]).toContain(res.statusCode);
        if (res.statusCode === 500) expect(res.json()).toEqual({ error: 'Failed to fetch metric' });
      }

      const started = performance.now();
      const down = await get(`/api/v1/metrics/${metric.id}/contract`);
      expect(performance.now() - started).toBeLessThan(10_000);
      expect(down.statusCode).toBe(500);
      expect(down.json()).toEqual({ error: 'Failed to fetch metric' });
      expect(down.body).not.toMatch(/\n\s+at /);
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);

      pgCtl('-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, '-l', join(dir, 'log'), 'start');
      let back = await get(`/api/v1/metrics/${metric.id}`);
      for (let i = 0; i < 20 && back.statusCode !== 200; i++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        back = await get(`/api/v1/metrics/${metric.id}`);
      }
      expect(back.statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  }, 120_000);
});
