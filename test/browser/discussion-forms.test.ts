/**
 * The discussion forms in headless Chromium with a signed-in session: a
 * thread opened and replied to with the keyboard only, its Markdown rendered
 * and raw HTML shown as text, no accessibility violation of impact serious
 * or critical (axe-core), no sideways scrolling at 360 px, and nothing the
 * pages' CSP refused (in a browser that does not bypass it).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DiscussionOrg, discussionOrg } from '../discussions/support.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type Browser, hasChromium, openBrowser, scrollsSideways, seriousAxeViolations } from '../helpers/chromium.js';

describe.skipIf(!hasChromium)('discussion forms in a browser (headless chromium)', () => {
  let t: TestApp;
  let baseUrl: string;
  let org: DiscussionOrg;
  let strict: Browser;
  let threadPath = '';

  const signIn = async (browser: Browser) =>
    browser.context.addCookies([{ name: 'session', value: org.member, url: baseUrl }]);

  beforeAll(async () => {
    t = await startTestApp();
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
    org = await discussionOrg(t, 'browser-forms');
    strict = await openBrowser(baseUrl, { viewport: { width: 360, height: 800 } });
    await signIn(strict);
  }, 60_000);

  afterAll(async () => {
    await strict?.close();
    await t?.close();
  });

  /** Focuses the field labelled `label` and types `text`, as a person at a keyboard would. */
  async function typeInto(page: Page, label: string, text: string) {
    await page.getByLabel(label, { exact: true }).focus();
    await page.keyboard.type(text);
  }

  it('opens a thread and replies with the keyboard; Markdown rendered, HTML as text; no CSP refusal, no sideways scroll at 360 px', async () => {
    const page = await strict.context.newPage();
    const newThread = `/${org.slug}/metrics/${org.metrics.revenue}/threads/new`;
    expect((await page.goto(`${baseUrl}${newThread}`))?.status()).toBe(200);
    expect(await scrollsSideways(page)).toBe(false);

    await page.getByLabel('Intent').focus();
    await page.keyboard.type('Objection');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Refund timing');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Refunds count in the month *issued*.');
    await page.keyboard.press('Tab');
    await Promise.all([page.waitForURL(/\/threads\/[0-9a-f-]{36}$/), page.keyboard.press('Enter')]);
    threadPath = new URL(page.url()).pathname;
    await expect(page.locator('h1').textContent()).resolves.toBe('Refund timing');
    await expect(page.locator('.facts').textContent()).resolves.toContain('Objection');
    await expect(page.locator('.message .body em').textContent()).resolves.toBe('issued');

    const reply = '*Agreed*:\n\n- see [the policy](https://example.com/policy)\n- run `refunds_by_month`\n\n<b>raw</b>';
    await typeInto(page, 'Your reply', reply);
    await page.keyboard.press('Tab');
    await Promise.all([page.waitForURL(/#message-/), page.keyboard.press('Enter')]);
    const last = page.locator('.message .body').last();
    await expect(last.locator('em').textContent()).resolves.toBe('Agreed');
    await expect(last.locator('li').count()).resolves.toBe(2);
    await expect(last.locator('a').getAttribute('href')).resolves.toBe('https://example.com/policy');
    await expect(last.locator('code').textContent()).resolves.toBe('refunds_by_month');
    await expect(last.locator('b').count()).resolves.toBe(0);
    await expect(last.textContent()).resolves.toContain('<b>raw</b>');
    expect(await scrollsSideways(page)).toBe(false);

    expect(strict.cspViolations).toEqual([]);
    expect(strict.foreignRequests).toEqual([]);
    await page.close();
  }, 120_000);

  it('axe-core finds nothing serious or critical on the thread page and the new-thread form', async () => {
    expect(threadPath).not.toBe('');
    const audited = await openBrowser(baseUrl, { bypassCSP: true });
    try {
      await signIn(audited);
      const page = await audited.context.newPage();
      for (const path of [threadPath, `/${org.slug}/metrics/${org.metrics.revenue}/threads/new`]) {
        expect((await page.goto(`${baseUrl}${path}`))?.status()).toBe(200);
        expect(await seriousAxeViolations(page), path).toEqual([]);
      }
      // The form as it comes back refused: its alert and the field's description.
      await page.getByLabel('Title', { exact: true }).fill('   ');
      await page.getByLabel('First message', { exact: true }).fill('kept');
      await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Open thread' }).click()]);
      await expect(page.getByRole('alert').textContent()).resolves.toBe('title must not be empty');
      expect(await seriousAxeViolations(page), 'the refused form').toEqual([]);
    } finally {
      await audited.close();
    }
  }, 120_000);
});
