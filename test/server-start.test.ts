/**
 * Start-up failures of the built server (`node dist/server.js`, built by
 * `npm run build`): one line naming the setting and the cause, exit 1, no stack.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const server = new URL('../dist/server.js', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'server-start-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function start(env: Record<string, string>) {
  const run = spawnSync(process.execPath, [server], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'error', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  const lines = run.stderr.trim().split('\n');
  return { status: run.status, last: lines.at(-1), stderr: run.stderr };
}

describe.skipIf(!existsSync(server))('start-up failures (built server)', () => {
  it('a database that refuses connections', () => {
    const run = start({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/postgres' });
    expect(run.status).toBe(1);
    expect(run.last).toBe(
      'Cannot start: DATABASE_URL (postgresql://***@127.0.0.1:1/postgres): connect ECONNREFUSED 127.0.0.1:1',
    );
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('a DATABASE_URL that is not a PostgreSQL URL', () => {
    const run = start({ DATABASE_URL: 'mysql://localhost/x' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('DATABASE_URL: must be a postgresql:// URL');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('a configured Redis that does not answer', () => {
    const run = start({ REDIS_URL: 'redis://127.0.0.1:1' });
    expect(run.status).toBe(1);
    expect(run.last).toBe('Cannot start: REDIS_URL (redis://127.0.0.1:1): Redis not ready after 5000 ms');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('a configured Redis Cluster that does not answer', () => {
    const run = start({ REDIS_CLUSTER_NODES: '127.0.0.1:1,127.0.0.1:2' });
    expect(run.status).toBe(1);
    expect(run.last).toBe('Cannot start: REDIS_CLUSTER_NODES (127.0.0.1:1,127.0.0.1:2): Redis not ready after 5000 ms');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('a port in use', () => {
    const run = start({ PORT: '5432', HOST: '127.0.0.1' });
    expect(run.status).toBe(1);
    expect(run.last).toBe('Cannot start: PORT (5432): port 5432 is already in use on 127.0.0.1');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});
