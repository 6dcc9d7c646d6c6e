/**
 * Debian's headless Chromium through playwright-core, for the tests of the
 * pages a person opens: a persistent context in a temporary profile, with
 * requests to any host but the app's blocked and recorded, what the CSP
 * refused recorded, and axe-core's accessibility check. Absent Chromium:
 * `hasChromium` is false and the suites skip, saying why.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axe from 'axe-core';
import { type BrowserContext, type BrowserContextOptions, chromium, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`[test] ${CHROMIUM} is missing: browser tests skipped (apt-get install chromium)`);

export interface Browser {
  context: BrowserContext;
  /** requests the pages tried to send anywhere but the app (blocked) */
  foreignRequests: string[];
  /** what the pages' Content-Security-Policy refused: `directive blocked-uri` */
  cspViolations: string[];
  close(): Promise<void>;
}

/** A browser whose pages may reach `baseUrl` only. */
export async function openBrowser(baseUrl: string, options: BrowserContextOptions = {}): Promise<Browser> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
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
    ...options,
  });
  const foreignRequests: string[] = [];
  const cspViolations: string[] = [];
  await context.exposeBinding('reportViolation', (_source, uri: string) => {
    cspViolations.push(uri);
  });
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      (window as unknown as { reportViolation(uri: string): void }).reportViolation(
        `${event.violatedDirective} ${event.blockedURI}`,
      );
    });
  });
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(baseUrl) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    foreignRequests.push(url);
    return route.abort();
  });
  return {
    context,
    foreignRequests,
    cspViolations,
    async close() {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * axe-core's violations of impact serious or critical on the page as it is.
 * axe's script is added to the page, which its CSP refuses unless the page
 * is opened in a browser made with `bypassCSP: true`: check the CSP itself
 * in another browser.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.addScriptTag({ content: axe.source });
  const violations = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: typeof axe }).axe.run(document, {
      resultTypes: ['violations'],
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? null,
      help: v.help,
      targets: v.nodes.map((n) => n.target.join(' ')),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** Whether the page scrolls sideways at its viewport's width (a 360 px phone, say). */
export async function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
}
