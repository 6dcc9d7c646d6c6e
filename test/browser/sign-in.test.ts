/**
 * Sign-in in a real browser (headless Debian chromium): a one-time link and
 * the OpenID Connect round trip through a real provider's login form both
 * end on the page asked for with the session cookie; the sign-in pages pass
 * axe-core (no serious or critical violation), fit a 360 px phone, and their
 * CSP refuses nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoginLink } from '../../src/admin/login-links.js';
import { addUser } from '../../src/admin/users.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type Browser, hasChromium, openBrowser, scrollsSideways, seriousAxeViolations } from '../helpers/chromium.js';
import { startOidcProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { freePort } from '../helpers/ports.js';
import { newTeamOrg, type TeamOrg } from '../registry/support.js';

describe.skipIf(!hasChromium)('sign-in in a browser (headless chromium)', () => {
  let t: TestApp;
  let base: string;
  let provider: TestProvider;
  let org: TeamOrg;
  const email = 'mia@example.com';

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    provider = await startOidcProvider(`${base}/sign-in/oidc/callback`, { mia: { email, email_verified: true } });
    t = await startTestApp({ publicAppUrl: base, oidc: provider.settings });
    await t.app.listen({ port, host: '127.0.0.1' });
    org = await newTeamOrg(t.database.prisma, 'browse');
    await addUser(t.database.prisma, { org: org.slug, email, name: 'Mia', role: 'member' });
  });
  afterAll(async () => {
    await t?.close();
    await provider?.close();
  });

  /** A browser that may also reach the provider (routes registered later are tried first). */
  async function browserWithProvider(options: Parameters<typeof openBrowser>[1] = {}): Promise<Browser> {
    const browser = await openBrowser(base, options);
    await browser.context.route(`${provider.settings.issuer}/**`, (route) => route.continue());
    return browser;
  }
  const sessionCookie = async (browser: Browser) =>
    (await browser.context.cookies(base)).find((cookie) => cookie.name === 'session');

  it('the sign-in pages are accessible, fit 360 px, and their CSP refuses nothing', async () => {
    const audit = await openBrowser(base, { bypassCSP: true, viewport: { width: 360, height: 740 } });
    const strict = await openBrowser(base);
    try {
      const { url } = await createLoginLink(t.database.prisma, { org: org.slug, email, publicAppUrl: base });
      for (const path of ['/sign-in?next=/x', url.slice(base.length), '/sign-in/link?token=unknown']) {
        const page = await audit.context.newPage();
        await page.goto(`${base}${path}`);
        expect(await seriousAxeViolations(page), path).toEqual([]);
        expect(await scrollsSideways(page), path).toBe(false);
        await page.close();
        const plain = await strict.context.newPage();
        await plain.goto(`${base}${path}`);
        await plain.close();
      }
      expect(strict.cspViolations).toEqual([]);
      expect(strict.foreignRequests).toEqual([]);
    } finally {
      await audit.close();
      await strict.close();
    }
  }, 120_000);

  it('a one-time link and its button end signed in at the organization home', async () => {
    const browser = await openBrowser(base);
    try {
      const { url } = await createLoginLink(t.database.prisma, { org: org.slug, email, publicAppUrl: base });
      const page = await browser.context.newPage();
      await page.goto(url);
      await page.getByRole('button', { name: 'Sign in' }).click();
      // The organization's home is another part's page: the address and the cookie are what sign-in gives.
      await page.waitForURL(`${base}/${org.slug}`);
      const cookie = await sessionCookie(browser);
      expect(cookie?.httpOnly).toBe(true);
      expect(cookie?.sameSite).toBe('Lax');
    } finally {
      await browser.close();
    }
  }, 60_000);

  it("the provider's login form ends signed in on the page asked for", async () => {
    const browser = await browserWithProvider();
    try {
      const next = `/${org.slug}/metrics/6f1c2a52-8d1e-4f0b-9a57-2f3e4b5c6d7e`;
      const page = await browser.context.newPage();
      await page.goto(`${base}/sign-in?next=${encodeURIComponent(next)}`);
      await page.getByRole('link', { name: /^Sign in with 127\.0\.0\.1:/ }).click();
      await page.locator('input[name="login"]').fill('mia');
      await page.locator('input[name="password"]').fill('any');
      await page.getByRole('button', { name: 'Sign-in' }).click();
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.waitForURL(`${base}${next}`);
      expect((await sessionCookie(browser))?.httpOnly).toBe(true);
      expect((await browser.context.cookies(base)).map((c) => c.name)).not.toContain('oidc_sign_in');
    } finally {
      await browser.close();
    }
  }, 90_000);
});
