/** Shutdown begins by draining: /readyz answers 503 while requests are still served. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ slug: 'draining' });
const key = org.key();
org.metric({ name: 'Revenue' });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build() });
});
afterAll(() => t.close());

describe('draining', () => {
  it('turns /readyz to 503 and keeps serving the API', async () => {
    expect((await t.get('/readyz')).statusCode).toBe(200);
    t.app.drain();
    const ready = await t.get('/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toEqual({ status: 'draining' });
    expect((await t.get('/healthz')).statusCode).toBe(200);
    expect((await t.get('/api/v1/metrics', key.secret)).statusCode).toBe(200);
  });
});

describe('the real server process', () => {
  it('starts on the embedded database with demo data, then on SIGTERM drains and exits 0', async () => {
    const { spawn } = await import('node:child_process');
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { createServer } = await import('node:net');
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const dataDir = mkdtempSync(join(tmpdir(), 'mg-start-'));
    const { DATABASE_URL: _db, REDIS_URL: _redis, ...inherited } = process.env;
    // node itself (not npx) so that the signal reaches the server.
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: { ...inherited, DATA_DIR: dataDir, PORT: String(port), SHUTDOWN_GRACE_MS: '1500', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let errors = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      errors += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const base = `http://127.0.0.1:${port}`;
      for (let i = 0; i < 240 && !output.includes('/readyz'); i++) await new Promise((r) => setTimeout(r, 250));
      const demoKey = /Demo API key[^\n]*\n\s+(cl_[0-9a-f]{40})/.exec(output)?.[1];
      expect(demoKey, output).toMatch(/^cl_[0-9a-f]{40}$/);
      const list = await fetch(`${base}/api/v1/metrics`, { headers: { authorization: `Bearer ${demoKey}` } });
      expect(list.status).toBe(200);
      const page = await list.json();
      expect(page.pagination.total).toBeGreaterThan(0);
      // The demo says it is one, and its links point at this instance's PORT.
      expect(errors).toContain(
        'WARNING: demo registry in use. Its API keys and sessions are public in the repository: anyone who can ' +
          'reach this port can read its data. Keep the instance private to this machine (DEMO=0 turns the demo off).',
      );
      const contract = await fetch(`${base}/api/v1/metrics/${page.data[0].id}/contract`, {
        headers: { authorization: `Bearer ${demoKey}` },
      });
      expect((await contract.json()).data.canonical_url).toBe(
        `http://localhost:${port}/acme/metrics/${page.data[0].id}`,
      );
      // The banner's one-time link signs the demo's owner in: its page, then its button, then home.
      for (let i = 0; i < 40 && !output.includes('/sign-in/link?token='); i++)
        await new Promise((r) => setTimeout(r, 250));
      expect(output).toContain('Sign in to the catalog as ada@acme.example');
      const link = /^\s+(http:\/\/localhost:\d+\/sign-in\/link\?token=[A-Za-z0-9_-]{43})$/m.exec(output)?.[1] ?? '';
      const linkUrl = new URL(link);
      expect(linkUrl.port).toBe(String(port));
      expect((await fetch(`${base}${linkUrl.pathname}${linkUrl.search}`)).status).toBe(200);
      const signedIn = await fetch(`${base}/sign-in/link`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: linkUrl.searchParams.get('token') ?? '' }),
        redirect: 'manual',
      });
      expect(signedIn.status).toBe(303);
      expect(signedIn.headers.get('location')).toBe('/acme');
      expect(signedIn.headers.get('set-cookie')).toMatch(/^session=[A-Za-z0-9_-]{43};/);

      child.kill('SIGTERM');
      let ready = await fetch(`${base}/readyz`);
      for (let i = 0; i < 20 && ready.status !== 503; i++) {
        await new Promise((r) => setTimeout(r, 50));
        ready = await fetch(`${base}/readyz`);
      }
      expect(ready.status).toBe(503);
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
