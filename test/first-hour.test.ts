/**
 * A new user's first hour, as found from outside:
 *  1. a fresh clone has no ./.data: `npm start` and every CLI command on the embedded database
 *     create it (the owner lock is the first thing written into it);
 *  2. a data directory that already holds the demo (public keys and owner session) is refused at
 *     start when the instance is reachable from elsewhere (TRUST_PROXY, a non-loopback HOST);
 *  3. the OpenAPI request examples are data, not YAML text (Redocly's
 *     no-invalid-media-type-examples).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { claimEmbeddedDatabase } from '../src/db/owner-lock.js';
import { openApiDocument } from '../src/openapi/document.js';

const server = new URL('../dist/server.js', import.meta.url).pathname;
const DEMO_KEY = 'cl_e2c054bba210a48947b4e81d7a176fccf426940b';
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});
function tempRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'qa2-'));
  roots.push(root);
  return root;
}

/** Starts the built server; resolves with its base URL once it listens, or rejects with its output. */
function startServer(
  env: Record<string, string>,
): Promise<{ base: string; child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, [server], {
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 60 s:\n${output}`)), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code}:\n${output}`));
    });
    const poll = setInterval(() => {
      const listening = /Server listening at (http:\/\/[^"\s]+)/.exec(output);
      if (listening?.[1]) {
        clearInterval(poll);
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve({ base: listening[1], child, output: () => output });
      }
    }, 100);
    child.on('exit', () => clearInterval(poll));
  });
}
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

describe('embedded database in a DATA_DIR that does not exist yet (a fresh clone has no ./.data)', () => {
  it('the lock is taken (its directory is created), not ENOENT', () => {
    const dataDir = join(tempRoot(), 'not-yet', 'pglite');
    const release = claimEmbeddedDatabase(dataDir, 'qa');
    release();
  });

  it.skipIf(!existsSync(server))(
    'the built server starts',
    async () => {
      const { child } = await startServer({ DATA_DIR: join(tempRoot(), '.data'), DEMO: '0' });
      await stop(child);
    },
    90_000,
  );
});

describe.skipIf(!existsSync(server))('a data directory that already holds the demo', () => {
  it.each([
    ['TRUST_PROXY set', { TRUST_PROXY: '127.0.0.1' }],
    ['HOST not loopback', { HOST: '0.0.0.0' }],
  ])(
    'refuses to start when restarted with %s',
    async (_name, env) => {
      // an existing directory, so that this case does not depend on the ENOENT above
      const dataDir = tempRoot();
      const first = await startServer({ DATA_DIR: dataDir });
      const loaded = await fetch(`${first.base}/api/v1/metrics`, { headers: { authorization: `Bearer ${DEMO_KEY}` } });
      expect(loaded.status).toBe(200);
      await stop(first.child);

      // Refused at start, with one line naming the setting: the public keys are never served here.
      await expect(startServer({ DATA_DIR: dataDir, ...env })).rejects.toThrow(
        /exited 1:[\s\S]*Cannot start: DATA_DIR \(.*\): it holds the demo registry/,
      );
    },
    180_000,
  );
});

describe('OpenAPI examples fit their schemas (Redocly no-invalid-media-type-examples)', () => {
  it('no YAML request example is a bare string under an object schema', () => {
    const doc = openApiDocument() as unknown as {
      paths: Record<
        string,
        Record<
          string,
          { requestBody?: { content?: Record<string, { examples?: Record<string, { value?: unknown }> }> } }
        >
      >;
    };
    const strings: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
          for (const [name, example] of Object.entries(media.examples ?? {})) {
            if (typeof example.value === 'string') strings.push(`${method.toUpperCase()} ${path} ${type} ${name}`);
          }
        }
      }
    }
    expect(strings).toEqual([]);
  });
});
