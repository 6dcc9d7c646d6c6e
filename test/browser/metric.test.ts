/**
 * The metric page in headless Chromium, as a signed-in person opens it: no
 * serious or critical accessibility violation (axe-core), no sideways
 * scrolling on a 360 px phone with long SQL and wide tables, the table of
 * contents reachable with the keyboard, and nothing refused by the page's
 * Content-Security-Policy (in a browser that does not bypass it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../discussions/support.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type Browser, hasChromium, openBrowser, scrollsSideways, seriousAxeViolations } from '../helpers/chromium.js';
import { doc, docMetric, newTeamOrg, postValidations, putRegistry, type TeamOrg, uuidV5 } from '../registry/support.js';

const LONG = 'a_rather_long_column_name_without_any_break_'.repeat(12);

describe.skipIf(!hasChromium)('the metric page in a browser (headless chromium)', () => {
  let t: TestApp;
  let baseUrl: string;
  let org: TeamOrg;
  let path: string;
  const browsers: Browser[] = [];

  /** A browser signed in as the organization's owner. */
  async function signedIn(options: Parameters<typeof openBrowser>[1]): Promise<Browser> {
    const browser = await openBrowser(baseUrl, options);
    browsers.push(browser);
    await browser.context.addCookies([{ name: 'session', value: org.ownerSession, url: baseUrl }]);
    return browser;
  }

  beforeAll(async () => {
    t = await startTestApp();
    baseUrl = await t.app.listen({ port: 0, host: '127.0.0.1' });
    org = await newTeamOrg(t.database.prisma, 'metricbrowser');
    const applied = await putRegistry(
      t,
      doc(org.slug, [
        docMetric('upstream', { lifecycle_status: 'RELEASED' }),
        docMetric('net_revenue', {
          name: 'Net revenue',
          aliases: ['NRR'],
          sql_expression: `SELECT sum(${LONG})\nFROM analytics.${LONG}`,
          business_definition: { included: 'Invoiced revenue', excluded: 'Refunds' },
          grains: ['day', 'month'],
          dimensions: [{ name: 'region', column: LONG }],
          filters: [`${LONG} = false`],
          source_refs: [{ table: `analytics.${LONG}` }],
          lifecycle_status: 'RELEASED',
          versions: [
            {
              definition_version: '1',
              status: 'superseded',
              released_at: '2026-01-01T00:00:00Z',
              change_summary: 'First',
            },
            { definition_version: '2', status: 'released', released_at: '2026-02-01T00:00:00Z', change_summary: LONG },
          ],
          approvals: [
            {
              definition_version: '2',
              approver_role: 'finance_lead',
              approver: null,
              decision: 'approved',
              decided_at: '2026-02-01T00:00:00Z',
              comment: LONG,
            },
          ],
          relationships: [{ kind: 'related_to', target: 'upstream' }],
          inputs: ['upstream'],
        }),
      ]),
      { token: org.token },
    );
    if (applied.statusCode !== 200) throw new Error(applied.body);
    const id = uuidV5(org.id, 'net_revenue');
    const validated = await postValidations(
      t,
      {
        results: [
          { metric_key: 'net_revenue', ran_at: new Date().toISOString(), status: 'passed', details: LONG },
          { metric_key: 'upstream', ran_at: new Date().toISOString(), status: 'failed' },
        ],
      },
      { token: org.token },
    );
    if (validated.statusCode !== 200) throw new Error(validated.body);
    const opened = await client(baseUrl).rest(
      'POST',
      `/api/metrics/${id}/threads`,
      { session: org.ownerSession },
      { intent: 'question', title: 'Does it include tax?', body: `It should not: *${LONG}*` },
    );
    if (opened.status !== 201) throw new Error(opened.text);
    await client(baseUrl).rest(
      'POST',
      `/api/messages/${opened.json.data.messages.items[0].id}/pin`,
      { session: org.ownerSession },
      {},
    );
    path = `/${org.slug}/metrics/${id}`;
  });

  afterAll(async () => {
    for (const browser of browsers) await browser.close();
    await t?.close();
  });

  it('has no serious accessibility violation, fits 360 px, and its contents are reachable by Tab', async () => {
    const browser = await signedIn({ bypassCSP: true, viewport: { width: 360, height: 800 } });
    const page = await browser.context.newPage();
    const response = await page.goto(`${baseUrl}${path}`);
    expect(response?.status()).toBe(200);
    expect(await scrollsSideways(page)).toBe(false);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    const tocLinks = await page.locator('nav.toc a').evaluateAll((links) => links.map((a) => a.getAttribute('href')));
    expect(tocLinks).toHaveLength(11);
    const reached = new Set<string | null>();
    for (let i = 0; i < 40 && reached.size < tocLinks.length; i += 1) {
      await page.keyboard.press('Tab');
      const href = await page.evaluate(() =>
        document.activeElement?.closest('nav.toc') ? document.activeElement.getAttribute('href') : null,
      );
      if (href) reached.add(href);
    }
    expect([...reached].sort()).toEqual([...tocLinks].sort());
    // Following one moves to its section.
    await page.keyboard.press('Enter');
    expect(page.url()).toContain('#use-title');
    expect(await seriousAxeViolations(page)).toEqual([]);
    expect(browser.foreignRequests).toEqual([]);
    await page.close();
  }, 120_000);

  it('loads with nothing refused by its Content-Security-Policy', async () => {
    const browser = await signedIn({ viewport: { width: 360, height: 800 } });
    const page = await browser.context.newPage();
    const response = await page.goto(`${baseUrl}${path}`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    // The stylesheet applied: the table of contents has its border.
    expect(await page.locator('nav.toc').evaluate((nav) => getComputedStyle(nav).borderTopStyle)).toBe('solid');
    const diff = await page.goto(`${baseUrl}${path}/versions?from=1&to=2`, { waitUntil: 'load' });
    expect(diff?.status()).toBe(200);
    expect(await scrollsSideways(page)).toBe(false);
    expect(browser.cspViolations).toEqual([]);
    expect(browser.foreignRequests).toEqual([]);
    await page.close();
  }, 120_000);
});
