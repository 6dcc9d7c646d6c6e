/**
 * One owner of the embedded database (issue 24, item 5): while a server has
 * the embedded database of a DATA_DIR open, a CLI command on the same
 * DATA_DIR is refused with a clear message and exit 1, or is carried out
 * through the running server; either way nothing is ever lost. The issue's
 * own report: `keys:create` while the server ran printed a secret the server
 * then rejected (401), and after a restart the key was gone.
 *
 * Real processes (the server and the CLI as `npm start` and `npm run cli`
 * run them) over a DATA_DIR of the test's own; the waits are bounds, not
 * expectations of speed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
const KEY_LINE = /^cl_[0-9a-f]{40}$/m;

let dataDir: string;
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'mg-embedded-owner-'));
});
afterAll(() => {
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** The environment of a process on the embedded database of `dataDir` (never PostgreSQL, never Redis). */
function embeddedEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { DATABASE_URL: _db, REDIS_URL: _redis, TEST_DATABASE_URL: _test, ...inherited } = process.env;
  return { ...inherited, DATA_DIR: dataDir, DEMO: '0', LOG_LEVEL: 'warn', ...extra };
}

interface Server {
  base: string;
  output: () => string;
  stop(): Promise<number | null>;
  /** as a crash or the OOM killer would: no shutdown at all */
  kill(): Promise<void>;
}

/** A server process on the embedded database of `dataDir`, once it serves. */
async function startServer(): Promise<Server> {
  const port = await freePort();
  // node itself (not npx), so that SIGTERM reaches the server and it shuts down as in production.
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: projectRoot,
    env: embeddedEnv({ PORT: String(port) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let running = true;
  void exited.then(() => {
    running = false;
  });
  for (let i = 0; i < 1200 && running && !output.includes('/readyz'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (!output.includes('/readyz')) {
    child.kill('SIGKILL');
    throw new Error(`the server did not start:\n${output}`);
  }
  return {
    base: `http://127.0.0.1:${port}`,
    output: () => output,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** `npm run cli -- ...argv` on the same DATA_DIR. */
async function cli(...argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...argv], {
    cwd: projectRoot,
    env: embeddedEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  clearTimeout(timer);
  return { code, stdout, stderr };
}

const readWith = (server: Server, key: string) =>
  fetch(`${server.base}/api/v1/metrics`, { headers: { authorization: `Bearer ${key}` } });

describe('a CLI command while a server has the embedded database open', () => {
  it('is refused with a clear message and exit 1, or carried out through the server; nothing is lost', async () => {
    // The database is made and migrated by a first server start, and an organization added while none runs.
    const first = await startServer();
    expect(await first.stop()).toBe(0);
    const created = await cli('org:create', '--slug', 'embedded-co', '--name', 'Embedded Co');
    expect(created.code, created.stderr).toBe(0);

    const server = await startServer();
    let stopped = false;
    try {
      const whileRunning = await cli('keys:create', '--org', 'embedded-co', '--name', 'while running');
      const secret = KEY_LINE.exec(whileRunning.stdout)?.[0];
      if (whileRunning.code === 0) {
        // Carried out: the running server knows the key at once ...
        expect(secret, whileRunning.stdout).toBeDefined();
        expect((await readWith(server, secret ?? '')).status).toBe(200);
        // ... and it survives the server's shutdown and a restart.
        expect(await server.stop()).toBe(0);
        stopped = true;
        const restarted = await startServer();
        try {
          expect((await readWith(restarted, secret ?? '')).status).toBe(200);
        } finally {
          await restarted.stop();
        }
      } else {
        // Refused: exit 1, a message saying why, no secret printed.
        expect(whileRunning.code).toBe(1);
        expect(whileRunning.stderr.trim().length).toBeGreaterThan(0);
        expect(whileRunning.stderr).toMatch(/server|in use|running|DATA_DIR|locked|open/i);
        expect(secret).toBeUndefined();
        // The server keeps serving, and once it is stopped the CLI works, and what it wrote is kept.
        expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
        expect(await server.stop()).toBe(0);
        stopped = true;
        const after = await cli('keys:create', '--org', 'embedded-co', '--name', 'after the server');
        expect(after.code, after.stderr).toBe(0);
        const later = KEY_LINE.exec(after.stdout)?.[0] ?? '';
        const restarted = await startServer();
        try {
          expect((await readWith(restarted, later)).status).toBe(200);
        } finally {
          await restarted.stop();
        }
      }
    } finally {
      if (!stopped) await server.stop();
    }
  }, 600_000);

  it('a second server on the same DATA_DIR is refused, and the first keeps serving', async () => {
    const server = await startServer();
    try {
      const port = await freePort();
      const second = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
        cwd: projectRoot,
        env: embeddedEnv({ PORT: String(port) }),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      second.stdout.on('data', (chunk: Buffer) => {
        output += chunk;
      });
      second.stderr.on('data', (chunk: Buffer) => {
        output += chunk;
      });
      const timer = setTimeout(() => second.kill('SIGKILL'), 120_000);
      const code = await new Promise<number | null>((resolve) => second.on('exit', resolve));
      clearTimeout(timer);
      expect(code, output).not.toBe(0);
      expect(output).toMatch(/in use/i);
      expect((await fetch(`${server.base}/healthz`)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 600_000);

  it('a lock left by a server that died (SIGKILL) does not lock the CLI out', async () => {
    const server = await startServer();
    await server.kill();
    const result = await cli('org:create', '--slug', 'after-a-crash', '--name', 'After a crash');
    expect(result.code, result.stderr).toBe(0);
    const listed = await cli('keys:create', '--org', 'after-a-crash', '--name', 'reader');
    expect(listed.code, listed.stderr).toBe(0);
  }, 600_000);
});
