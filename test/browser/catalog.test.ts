/**
 * The organization's home and the catalog in headless Chromium, signed in:
 * no serious or critical axe-core violation, no sideways scroll on a 360 px
 * phone, the facet form used with the keyboard alone, and nothing refused
 * by the pages' CSP (in a browser that does not bypass it).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type Browser, hasChromium, openBrowser, scrollsSideways, seriousAxeViolations } from '../helpers/chromium.js';
import { doc, docMetric, newTeamOrg, postValidations, putRegistry, type TeamOrg } from '../registry/support.js';

describe.skipIf(!hasChromium)('catalog pages (headless chromium)', () => {
  let t: TestApp;
  let baseUrl: string;
  let org: TeamOrg;

  beforeAll(async () => {
    t = await startTestApp();
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
    org = await newTeamOrg(t.database.prisma, 'browse');
    const metrics = [
      docMetric('net_revenue', { name: 'Net Revenue', lifecycle_status: 'RELEASED', domain: 'Finance' }),
      docMetric('old_revenue', { name: 'Old Revenue', lifecycle_status: 'DEPRECATED', domain: 'Finance' }),
      docMetric('a_very_long_metric_key_that_does_not_break_anywhere_on_a_small_phone_screen', {
        name: 'Averyveryverylongmetricnamewithoutanyspacesatallthatmustwraponasmallscreen',
        owner_team: 'Customer Success and Revenue Operations Analytics Team',
      }),
      ...Array.from({ length: 30 }, (_, i) => docMetric(`filler_${i}`, { name: `Filler ${i}` })),
    ];
    expect((await putRegistry(t.app, doc(org.slug, metrics), { token: org.token })).statusCode).toBe(200);
    const results = [{ metric_key: 'net_revenue', ran_at: new Date().toISOString(), status: 'failed', source: 'ci' }];
    expect((await postValidations(t.app, { results }, { token: org.token })).statusCode).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function signedIn(browser: Browser): Promise<Page> {
    await browser.context.addCookies([{ name: 'session', value: org.ownerSession, url: baseUrl }]);
    return browser.context.newPage();
  }

  it('has no serious accessibility violation and no sideways scroll at 360 px', { timeout: 120_000 }, async () => {
    const browser = await openBrowser(baseUrl, { bypassCSP: true, viewport: { width: 360, height: 740 } });
    try {
      const page = await signedIn(browser);
      for (const path of [`/${org.slug}`, `/${org.slug}/metrics`, `/${org.slug}/metrics?q=revnue`]) {
        expect((await page.goto(`${baseUrl}${path}`))?.status(), path).toBe(200);
        expect(await seriousAxeViolations(page), path).toEqual([]);
        expect(await scrollsSideways(page), path).toBe(false);
      }
      expect(browser.foreignRequests).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('filters with the keyboard alone, under a CSP that refuses nothing', { timeout: 120_000 }, async () => {
    const browser = await openBrowser(baseUrl);
    try {
      const page = await signedIn(browser);
      await page.goto(`${baseUrl}/${org.slug}/metrics`);
      // Tab from the search field to the trust select, choose a verdict by typing: the form applies itself.
      await page.focus('#catalog-q');
      for (let i = 0; i < 10; i += 1) {
        if (await page.evaluate(() => document.activeElement?.id === 'facet-trust')) break;
        await page.keyboard.press('Tab');
      }
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('facet-trust');
      await Promise.all([page.waitForURL(/trust=do_not_use/), page.keyboard.type('do_not')]);
      expect(await page.locator('tbody tr').count()).toBe(1);
      await expect(page.locator('tbody a').first().textContent()).resolves.toBe('Old Revenue');
      // The search field with Enter submits the same form (and keeps the chosen facet).
      await page.focus('#catalog-q');
      await page.keyboard.type('revenue');
      await Promise.all([page.waitForURL(/q=revenue/), page.keyboard.press('Enter')]);
      expect(page.url()).toContain('trust=do_not_use');
      await page.goto(`${baseUrl}/${org.slug}`);
      await page.getByRole('heading', { name: 'Latest changes' }).waitFor();
      expect(browser.cspViolations).toEqual([]);
      expect(browser.foreignRequests).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
