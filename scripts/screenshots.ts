/**
 * The screenshots of the catalog's main pages in docs/screenshots/: starts
 * the service as `npm start` does (the embedded database and the demo
 * registry, on a free port), signs in with the one-time link its banner
 * prints, and captures the pages in Debian's Chromium.
 *
 *   npx tsx scripts/screenshots.ts
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';

const root = join(import.meta.dirname, '..');
const out = join(root, 'docs', 'screenshots');

const port = await new Promise<number>((resolve) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const address = server.address();
    server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
  });
});
const dataDir = await mkdtemp(join(tmpdir(), 'screenshots-'));
const service = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
  cwd: root,
  env: { ...process.env, PORT: String(port), DATA_DIR: join(dataDir, '.data'), LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const link = await new Promise<string>((resolve, reject) => {
  let printed = '';
  service.stdout.on('data', (chunk: Buffer) => {
    printed += chunk.toString();
    const found = /^\s+(http\S+\/sign-in\/link\?\S+)$/m.exec(printed);
    if (found?.[1]) resolve(found[1]);
  });
  service.once('exit', (code) => reject(new Error(`the service stopped (${code}) before printing a sign-in link`)));
});

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(link);
  await Promise.all([page.waitForURL(/\/acme$/), page.getByRole('button', { name: /sign in/i }).click()]);
  const base = new URL(page.url()).origin;
  const shot = async (target: Page, name: string) => {
    await target.screenshot({ path: join(out, `${name}.png`), fullPage: true });
    console.log(`docs/screenshots/${name}.png`);
  };
  await shot(page, 'home');
  await page.goto(`${base}/acme/metrics`);
  await shot(page, 'catalog');
  await page.goto(`${base}/acme/metrics?q=revnue`);
  await shot(page, 'search');
  const metric = await page.locator('main a[href^="/acme/metrics/"]').first().getAttribute('href');
  await page.goto(`${base}${metric}`);
  await shot(page, 'metric');
  const thread = await page.locator('main a[href^="/acme/threads/"]').first().getAttribute('href');
  if (thread) {
    await page.goto(`${base}${thread}`);
    await shot(page, 'thread');
  }
  const phone = await context.newPage();
  await phone.setViewportSize({ width: 360, height: 780 });
  await phone.goto(`${base}${metric}`);
  await phone.screenshot({ path: join(out, 'metric-360.png') });
  console.log('docs/screenshots/metric-360.png');
} finally {
  await browser.close();
  service.kill('SIGTERM');
  await new Promise((resolve) => service.once('exit', resolve));
  await rm(dataDir, { recursive: true, force: true });
}
