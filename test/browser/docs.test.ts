/**
 * The pages a person opens in a browser: /docs (Scalar, rendered from
 * /api/v1/openapi.json, with its JavaScript served by the app itself) and
 * /graphql (GraphiQL). Headless Debian chromium through playwright-core
 * against the app on a real ephemeral port; requests to any other host are
 * blocked and reported, so the pages are known to work offline.
 */
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { GRAPHIQL_KEY_HINT } from '../../src/graphiql-page.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type Browser, hasChromium, openBrowser } from '../helpers/chromium.js';

const r = registry();
const acme = r.org();
const key = acme.key();
const metric = acme.metric({ name: 'Net Revenue' });

describe.skipIf(!hasChromium)('browser pages (headless chromium)', () => {
  let t: TestApp;
  let baseUrl: string;
  let browser: Browser;
  let context: BrowserContext;
  let foreignRequests: string[];
  /**
   * Scalar's script tries `eval` once on load; the CSP refuses it ('unsafe-eval' is not granted)
   * and the page works without it (the tests below use it). Anything else refused is a failure.
   */
  const refused = () => browser.cspViolations.filter((violation) => violation !== 'script-src eval');

  beforeAll(async () => {
    t = await startTestApp({ fixture: r.build() });
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
    browser = await openBrowser(baseUrl);
    context = browser.context;
    foreignRequests = browser.foreignRequests;
  });

  afterAll(async () => {
    await browser?.close();
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

  it('/docs offers no outside service, and no button on it reaches another host', async () => {
    foreignRequests.length = 0;
    browser.cspViolations.length = 0;
    const hosts = new Set<string>();
    const onRequest = (request: { url(): string }) => {
      const url = new URL(request.url());
      if (url.protocol.startsWith('http')) hosts.add(url.host);
    };
    context.on('request', onRequest);
    const page = await context.newPage();
    await page.goto(`${baseUrl}/docs`);
    await page.getByText('List or search metrics').first().waitFor({ timeout: 20_000 });
    for (const upsell of [/Ask AI/i, /Generate SDK/i, /Join Waitlist/i, /Deploy/i, /Share/i, /MCP/]) {
      expect(await page.getByText(upsell).count()).toBe(0);
    }
    // Every button of the page, one after the other (a dialog it opens is closed again).
    const buttons = page.locator('button:visible');
    const count = await buttons.count();
    expect(count).toBeGreaterThan(20);
    let clicked = 0;
    for (let i = 0; i < count; i++) {
      const button = buttons.nth(i);
      const label = (await button.textContent().catch(() => '')) ?? '';
      if (/Test Request/.test(label)) continue; // the next test sends one
      const ok = await button.click({ timeout: 2_000 }).then(
        () => true,
        () => false,
      );
      if (ok) clicked += 1;
      await page.keyboard.press('Escape');
    }
    expect(clicked).toBeGreaterThan(20);
    await page.waitForTimeout(1_000);
    context.off('request', onRequest);
    expect([...hosts]).toEqual([new URL(baseUrl).host]);
    expect(foreignRequests).toEqual([]);
    expect(refused()).toEqual([]);
    await page.close();
    // Clicking every button, each with its own wait, takes long on a busy machine.
  }, 120_000);

  it('/docs "Test request" starts with no optional parameter set, and Send with a key lists metrics', async () => {
    foreignRequests.length = 0;
    browser.cspViolations.length = 0;
    const page = await context.newPage();
    await page.goto(`${baseUrl}/docs`);
    await page.getByText('List or search metrics').first().waitFor({ timeout: 20_000 });
    await page
      .getByRole('button', { name: /Test Request/ })
      .first()
      .click();
    await page.getByPlaceholder('Token').first().fill(key.secret);
    const answered = page.waitForResponse((res) => new URL(res.url()).pathname === '/api/v1/metrics');
    await page.getByRole('button', { name: /^Send/ }).first().click();
    const response = await answered;
    expect(response.url()).toBe(`${baseUrl}/api/v1/metrics`);
    expect(response.status()).toBe(200);
    const headers = await response.request().allHeaders();
    expect(headers.authorization).toBe(`Bearer ${key.secret}`);
    expect(headers['if-none-match']).toBeUndefined();
    const body = (await response.json()) as { data: { id: string; name: string }[] };
    expect(body.data.map((m) => [m.id, m.name])).toEqual([[metric.id, 'Net Revenue']]);
    expect(foreignRequests).toEqual([]);
    expect(refused()).toEqual([]);
    await page.close();
  });

  it('GraphiQL opens on the example query with the header to fill in, says how to send a key, and runs with one', async () => {
    // A first visit, in a browser of its own: GraphiQL keeps its tabs in the profile's storage, and
    // an earlier page of the shared browser (closed before its editor was up, or still writing after
    // the storage was cleared) could leave a tab whose query is empty.
    const fresh = await openBrowser(baseUrl);
    onTestFinished(() => fresh.close());
    const page = await fresh.context.newPage();
    await page.goto(`${baseUrl}/graphql`);
    await page.locator('.graphiql-container').first().waitFor({ timeout: 30_000 });
    const text = async (selector: string) =>
      ((await page.locator(selector).first().innerText()) ?? '').replace(/\s+/g, ' ');
    // The editor draws its gutter first and its text once its model and workers are up: under a full
    // suite's load that has taken past 20 s.
    await expect.poll(() => text('.graphiql-query-editor'), { timeout: 60_000 }).toContain('query Dashboard {');
    // The schema request went out with the placeholder key: one line says what to do.
    const hint = page.locator('#key-hint');
    await hint.waitFor({ state: 'visible', timeout: 20_000 });
    expect(await hint.textContent()).toBe(GRAPHIQL_KEY_HINT);
    expect(await text('.graphiql-editor-tool .graphiql-editor >> nth=-1')).toContain(
      '{"Authorization": "Bearer <your API key>"}',
    );

    const headersEditor = page.locator('.graphiql-editor-tool .graphiql-editor').last();
    await headersEditor.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.type(`{"Authorization": "Bearer ${key.secret}"`);
    const answered = page.waitForResponse(
      (res) => res.url().startsWith(`${baseUrl}/graphql`) && res.request().method() === 'POST',
    );
    await page.locator('.graphiql-execute-button').first().click();
    const response = await answered;
    expect(response.status()).toBe(200);
    const body = (await response.json()) as {
      data: { metrics: { pagination: { total: number }; items: { name: string; trust: { verdict: string } }[] } };
    };
    expect(body.data.metrics.pagination.total).toBe(1);
    expect(body.data.metrics.items.map((m) => m.name)).toEqual(['Net Revenue']);
    expect(typeof body.data.metrics.items[0]?.trust.verdict).toBe('string');
    await hint.waitFor({ state: 'hidden', timeout: 5_000 });
    expect(fresh.foreignRequests).toEqual([]);
    expect(fresh.cspViolations).toEqual([]);
  }, 150_000);
});
