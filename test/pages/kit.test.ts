/**
 * What every page shares: escaping, Markdown with raw HTML shown as text,
 * the `next` a sign-in may return to, the CSRF token, the pages' files and
 * sign-out, through a listening socket.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession } from '../../src/admin/sessions.js';
import { csrfMatches, csrfTokenOf } from '../../src/http/pages/csrf.js';
import { safeNext } from '../../src/http/pages/page-kit.js';
import { PAGE_SCRIPT, PAGE_STYLESHEET } from '../../src/pages/assets.js';
import { escapeHtml, html } from '../../src/pages/html.js';
import { renderMarkdown } from '../../src/pages/markdown.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { newTeamOrg, type TeamOrg } from '../registry/support.js';

describe('html', () => {
  it('escapes every interpolated text and keeps fragments built by the tag', () => {
    const name = `<script>alert("x")</script> & 'q'`;
    const inner = html`<b>${name}</b>`;
    expect(html`<p title="${name}">${inner}${[1, null, false, 'a<']}</p>`.value).toBe(
      `<p title="${escapeHtml(name)}"><b>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;</b>1a&lt;</p>`,
    );
  });
});

describe('markdown', () => {
  it('renders formatting and shows raw HTML as text', () => {
    const out = renderMarkdown('*a* **b** `c`\n\n- one\n- two\n\n<img src=x onerror=alert(1)><script>x</script>').value;
    expect(out).toContain('<em>a</em>');
    expect(out).toContain('<strong>b</strong>');
    expect(out).toContain('<code>c</code>');
    expect(out).toContain('<li>one</li>');
    expect(out).toContain('&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;');
    expect(out).not.toMatch(/<img|<script/);
  });

  it('links only to http(s) and mailto, without the page as opener', () => {
    const out = renderMarkdown('[a](javascript:alert(1)) [b](https://example.com/x) [c](data:text/html,x)').value;
    expect(out).toContain('<a href="https://example.com/x" rel="nofollow noopener noreferrer">b</a>');
    expect(out).not.toContain('href="javascript');
    expect(out).not.toContain('href="data');
  });
});

describe('safeNext', () => {
  it('keeps paths of this service and refuses everything that leaves it', () => {
    expect(safeNext('/acme/metrics/1?x=1')).toBe('/acme/metrics/1?x=1');
    for (const bad of [
      '//evil.example/',
      'https://evil.example/',
      '/\\evil.example',
      'acme',
      '/a\nb',
      42,
      '/'.repeat(2001),
    ]) {
      expect(safeNext(bad)).toBeNull();
    }
  });
});

describe('csrf', () => {
  it('matches the session it was made of and nothing else', () => {
    const token = csrfTokenOf('session-a');
    expect(csrfMatches('session-a', token)).toBe(true);
    expect(csrfMatches('session-b', token)).toBe(false);
    expect(csrfMatches('session-a', `${token}x`)).toBe(false);
    expect(csrfMatches('session-a', undefined)).toBe(false);
  });
});

describe('over a socket', () => {
  let t: TestApp;
  let base: string;
  let org: TeamOrg;
  const email = () => `owner-${org.slug}@example.com`;

  beforeAll(async () => {
    t = await startTestApp();
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    org = await newTeamOrg(t.database.prisma, 'kit');
  });
  afterAll(async () => {
    await t?.close();
  });

  const post = (path: string, token: string, body: string, headers: Record<string, string> = {}) =>
    fetch(new URL(path, base), {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: `session=${token}`, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
    });

  it('serves the stylesheet and the script as versioned files a browser keeps', async () => {
    for (const file of [PAGE_STYLESHEET, PAGE_SCRIPT]) {
      const response = await fetch(new URL(file.path, base));
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toContain('immutable');
      expect(await response.text()).toBe(file.content);
    }
    const missing = await fetch(new URL('/assets/catalog.0000.css', base));
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('text/html');
  });

  it('signs out with the session CSRF token: the session is gone and the cookie cleared', async () => {
    const session = await createSession(t.database.prisma, { user: email(), org: org.slug });
    const response = await post('/sign-out', session.token, `csrf=${csrfTokenOf(session.token)}`);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/sign-in');
    expect(response.headers.get('set-cookie')).toMatch(/^session=;.*Expires=Thu, 01 Jan 1970.*HttpOnly.*SameSite=Lax/i);
    expect(await t.database.prisma.session.count({ where: { id: session.id } })).toBe(0);
  });

  it('refuses a sign-out without the token or from another origin, as a page, keeping the session', async () => {
    const session = await createSession(t.database.prisma, { user: email(), org: org.slug });
    const forged = await post('/sign-out', session.token, 'csrf=nope');
    expect(forged.status).toBe(403);
    expect(forged.headers.get('content-type')).toContain('text/html');
    expect(forged.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    const elsewhere = await post('/sign-out', session.token, `csrf=${csrfTokenOf(session.token)}`, {
      origin: 'https://evil.example',
    });
    expect(elsewhere.status).toBe(403);
    expect(await t.database.prisma.session.count({ where: { id: session.id } })).toBe(1);
  });

  it('answers a form body past its limit with a page, not a crash', async () => {
    const session = await createSession(t.database.prisma, { user: email(), org: org.slug });
    const response = await post('/sign-out', session.token, `csrf=${'x'.repeat(300 * 1024)}`);
    expect(response.status).toBe(413);
    expect(response.headers.get('content-type')).toContain('text/html');
  });
});
