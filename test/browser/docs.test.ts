/**
 * The pages a person opens in a browser: /docs (Scalar, rendered from
 * /api/v1/openapi.json, with its JavaScript served by the app itself) and
 * /graphql (GraphiQL). Headless Debian chromium through playwright-core
 * against the app on a real ephemeral port; requests to any other host are
 * blocked and reported, so the pages are known to work offline.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`[test] ${CHROMIUM} is missing: browser tests skipped (apt-get install chromium)`);

const r = registry();
const acme = r.org();
const key = acme.key();
const metric = acme.metric({ name: 'Net Revenue' });

describe.skipIf(!hasChromium)('browser pages (headless chromium)', () => {
  let t: TestApp;
  let baseUrl: string;
  let userDataDir: string;
  let context: BrowserContext;
  /** Requests the pages tried to send anywhere but the app (blocked). */
  const foreignRequests: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ fixture: r.build() });
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
    userDataDir = await mkdtemp(join(tmpdir(), 'chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(baseUrl) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      foreignRequests.push(url);
      return route.abort();
    });
  });

  afterAll(async () => {
    await context?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
    await t?.close();
  });

  it('/docs renders the API reference from the OpenAPI document, without a CDN', async () => {
    foreignRequests.length = 0;
    const page = await context.newPage();
    const documentLoaded = page.waitForResponse((res) => res.url() === `${baseUrl}/api/v1/openapi.json`);
    const response = await page.goto(`${baseUrl}/docs`);
    expect(response?.status()).toBe(200);
    expect((await documentLoaded).status()).toBe(200);
    await expect(page.title()).resolves.toBe('Metric Governance API reference');
    await page.getByRole('heading', { name: 'Metric Governance API' }).first().waitFor({ timeout: 20_000 });
    await page.getByText('List or search metrics').first().waitFor({ timeout: 20_000 });
    await page.getByText('Agent contract of a metric').first().waitFor();
    expect(foreignRequests).toEqual([]);
    await page.close();
  });

  it('/graphql serves GraphiQL without a CDN, and a query with a bearer key from the page returns data', async () => {
    foreignRequests.length = 0;
    const page = await context.newPage();
    const response = await page.goto(`${baseUrl}/graphql`, { waitUntil: 'domcontentloaded' });
    expect(response?.status()).toBe(200);
    await expect(page.title()).resolves.toBe('Metric Governance GraphQL');
    // GraphiQL's page sends what its headers editor holds; this is that request, from the page.
    const result = await page.evaluate(
      async ({ authorization, id }) => {
        const res = await fetch('/graphql', {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ query: 'query ($id: ID!) { metric(id: $id) { id name } }', variables: { id } }),
        });
        return { status: res.status, body: await res.json() };
      },
      { authorization: `Bearer ${key.secret}`, id: metric.id },
    );
    expect(result).toEqual({ status: 200, body: { data: { metric: { id: metric.id, name: 'Net Revenue' } } } });
    // The GraphiQL editor itself renders from the bundle the service serves.
    await page.locator('.graphiql-container').first().waitFor({ timeout: 30_000 });
    expect(foreignRequests).toEqual([]);
    await page.close();
  });

  it('GraphiQL runs a query typed with a bearer key in its headers editor', async () => {
    foreignRequests.length = 0;
    const page = await context.newPage();
    const query = `{ metric(id: "${metric.id}") { name lifecycleStatus } }`;
    await page.goto(`${baseUrl}/graphql?query=${encodeURIComponent(query)}`);
    await page.locator('.graphiql-container').first().waitFor({ timeout: 30_000 });
    // The headers editor is open (defaultEditorToolsVisibility: 'headers').
    const headersEditor = page.locator('.graphiql-editor-tool .graphiql-editor').last();
    await headersEditor.click();
    await page.keyboard.type(`{"Authorization": "Bearer ${key.secret}"`);
    const answered = page.waitForResponse(
      (res) => res.url().startsWith(`${baseUrl}/graphql`) && res.request().method() === 'POST',
    );
    await page.locator('.graphiql-execute-button').first().click();
    expect((await answered).status()).toBe(200);
    await page.getByText('Net Revenue').last().waitFor({ timeout: 20_000 });
    expect(foreignRequests).toEqual([]);
    await page.close();
  });
});
