/**
 * Replicas started together on one PostgreSQL database: four `npm start`
 * (build, migrations, serve) at the same moment on a database created from
 * nothing all serve; a start with nothing pending takes no migration lock.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { MIGRATION_LOCK_KEY, readMigrations } from '../../src/db/migrate.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { registry } from '../fixtures/registry.js';
import { databaseUrlFor } from '../global-setup.js';
import { lacks, POSTGRES } from '../helpers/needs.js';
import { freePort } from '../helpers/ports.js';

const fixture = registry();
const org = fixture.org({ slug: 'replicas' });
const key = org.key();
org.metric({ name: 'Revenue' });

interface Started {
  child: ChildProcess;
  port: number;
  output: () => string;
  /** ms from spawn to the first 200 of /healthz */
  healthyAfterMs: Promise<number>;
}

/** `npm start` as an operator runs it, in a process group of its own (so npm and node stop together). */
function npmStart(url: string, port: number): Started {
  const { REDIS_URL: _redis, DATABASE_URL: _db, ...inherited } = process.env;
  const startedAt = Date.now();
  const child = spawn('npm', ['start', '--silent'], {
    env: { ...inherited, DATABASE_URL: url, PORT: String(port), LOG_LEVEL: 'warn', NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  const exited = once(child, 'exit');
  const healthyAfterMs = (async () => {
    while (Date.now() - startedAt < 90_000) {
      if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}:\n${output}`);
      const healthy = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (response) => response.ok,
        () => false,
      );
      if (healthy) return Date.now() - startedAt;
      await Promise.race([new Promise((resolve) => setTimeout(resolve, 50)), exited]);
    }
    throw new Error(`no /healthz within 90 s:\n${output}`);
  })();
  return { child, port, output: () => output, healthyAfterMs };
}

async function stop(started: Started): Promise<void> {
  const { child } = started;
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = once(child, 'exit');
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return;
  }
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // gone
  }
}

describe.skipIf(lacks(POSTGRES))('replicas started together', () => {
  const name = `mg_replicas_${Date.now().toString(36)}`;
  // Set in beforeAll: a skipped suite's body still runs, where TEST_DATABASE_URL is not set.
  let url: string;
  const running: Started[] = [];
  let admin: pg.Client;

  beforeAll(async () => {
    const base = process.env.TEST_DATABASE_URL as string;
    url = databaseUrlFor(base, name);
    admin = new pg.Client({ connectionString: base });
    await admin.connect();
    // From nothing: every migration is pending.
    await admin.query(`CREATE DATABASE ${name}`);
  });

  afterAll(async () => {
    await Promise.all(running.map(stop));
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  it('four npm start at once on a new database all reach /healthz and serve an authenticated read', async () => {
    const ports = await Promise.all([1, 2, 3, 4].map(freePort));
    const started = ports.map((port) => npmStart(url, port));
    running.push(...started);
    const times = await Promise.all(started.map((s) => s.healthyAfterMs));
    console.log(`[replicas] four cold starts reached /healthz after ${times.join(', ')} ms`);

    // Exactly one of them applied the migrations; the others waited and found nothing pending.
    const lines = started.map((s) => /Migrations: (.*)/.exec(s.output())?.[1]);
    const all = `applied ${readMigrations()
      .map((m) => m.name)
      .join(', ')}`;
    expect(
      lines.filter((line) => line === all),
      lines.join('\n'),
    ).toHaveLength(1);
    expect(lines.filter((line) => line === 'no pending migrations')).toHaveLength(3);

    // Data written with the same code as `npm run db:load`, then read through every instance.
    const database = await openDatabase({ kind: 'postgres', url }, { poolSize: 1 });
    try {
      await loadFixture(database.prisma, fixture.build());
    } finally {
      await database.close();
    }
    for (const s of started) {
      const response = await fetch(`http://127.0.0.1:${s.port}/api/v1/metrics`, {
        headers: { authorization: `Bearer ${key.secret}` },
      });
      expect(response.status, s.output()).toBe(200);
      expect((await response.json()).data.map((m: { name: string }) => m.name)).toEqual(['Revenue']);
    }
  }, 180_000);

  it('a start with nothing pending takes no migration lock, while the others keep serving', async () => {
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      // Held elsewhere for the whole start: a start that wanted it (or ran prisma migrate deploy) would not get it.
      await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      const started = npmStart(url, await freePort());
      running.push(started);
      const ms = await started.healthyAfterMs;
      console.log(
        `[replicas] a start with nothing pending reached /healthz after ${ms} ms (npm start, build check included)`,
      );
      expect(started.output()).toContain('Migrations: no pending migrations');
      // A second start rebuilt nothing and broke nothing: the first four still serve.
      for (const s of running) {
        const response = await fetch(`http://127.0.0.1:${s.port}/api/v1/metrics`, {
          headers: { authorization: `Bearer ${key.secret}` },
        });
        expect(response.status).toBe(200);
      }
    } finally {
      await holder.end();
    }
  }, 120_000);
});
