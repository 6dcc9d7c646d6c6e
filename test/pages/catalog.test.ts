/**
 * The organization's home, the catalog and the settings page over a
 * listening socket with real sessions: search with its corrections, each
 * facet, pages, roles, another organization, signed out, and markup in
 * every text shown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession } from '../../src/admin/sessions.js';
import { addUser } from '../../src/admin/users.js';
import { escapeHtml } from '../../src/pages/html.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, postValidations, putRegistry, type TeamOrg } from '../registry/support.js';

const SCRIPT = '<script>alert(1)</script>';
const IMG = '"><img src=x onerror=alert(1)>';
const FILLERS = 24;

let t: TestApp;
let base: string;
let org: TeamOrg;
let other: TeamOrg;
const sessions: Record<'viewer' | 'member', string> = { viewer: '', member: '' };
const ids: Record<string, string> = {};

beforeAll(async () => {
  // Webhooks to this machine: the settings list one (no delivery is awaited).
  t = await startTestApp({ webhooks: { allowHttp: true, allowPrivateNetworks: true, timeoutMs: 1000 } });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  org = await newTeamOrg(t.database.prisma, 'catalog');
  other = await newTeamOrg(t.database.prisma, 'elsewhere');
  const metrics = [
    docMetric('net_revenue', {
      name: 'Net Revenue',
      lifecycle_status: 'RELEASED',
      scope: 'enterprise_canonical',
      domain: 'Finance',
      owner_team: 'Revenue Ops',
    }),
    docMetric('old_revenue', { name: 'Old Revenue', lifecycle_status: 'DEPRECATED', domain: 'Finance' }),
    docMetric('marked_up', {
      name: `Marked ${SCRIPT}`,
      description: `Described ${IMG}`,
      domain: `Domain ${SCRIPT}`,
      owner_team: `Team ${IMG}`,
      scope: 'domain_canonical',
    }),
    ...Array.from({ length: FILLERS }, (_, i) =>
      docMetric(`filler_${String(i).padStart(2, '0')}`, { name: `Filler ${String(i).padStart(2, '0')}` }),
    ),
  ];
  const applied = await putRegistry(t.app, doc(org.slug, metrics), { token: org.token });
  expect(applied.statusCode).toBe(200);
  const validated = await postValidations(
    t.app,
    {
      results: ['marked_up', 'net_revenue'].map((key) => ({
        metric_key: key,
        ran_at: new Date().toISOString(),
        status: 'failed',
        source: 'ci',
      })),
    },
    { token: org.token },
  );
  expect(validated.statusCode).toBe(200);
  for (const row of await t.database.prisma.metric.findMany({ where: { orgId: org.id } })) ids[row.key] = row.id;
  for (const role of ['viewer', 'member'] as const) {
    const email = `${role}-${org.slug}@example.com`;
    await addUser(t.database.prisma, { org: org.slug, email, name: `A ${role}`, role });
    sessions[role] = (await createSession(t.database.prisma, { user: email, org: org.slug })).token;
  }
});
afterAll(async () => {
  await t?.close();
});

const get = (path: string, session: string | null = org.ownerSession) =>
  fetch(new URL(path, base), { redirect: 'manual', headers: session ? { cookie: `session=${session}` } : {} });

async function page(path: string, session?: string | null): Promise<string> {
  const response = await get(path, session);
  expect(response.status, path).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/html');
  return response.text();
}

/** The names of the metrics listed in the catalog's table, in order. */
const listed = (body: string) =>
  [...body.matchAll(/<td><a href="\/[^"]+\/metrics\/[0-9a-f-]{36}">([^<]*)<\/a><\/td>/g)].map((m) => m[1]);

describe('catalog', () => {
  it('lists by name, a page at a time, with page links and rel prev/next', async () => {
    const first = await page(`/${org.slug}/metrics?pageSize=10`);
    expect(listed(first)).toEqual([
      'Filler 00',
      'Filler 01',
      'Filler 02',
      'Filler 03',
      'Filler 04',
      'Filler 05',
      'Filler 06',
      'Filler 07',
      'Filler 08',
      'Filler 09',
    ]);
    expect(first).toContain(`${FILLERS + 3} metrics, 1 to 10 shown, sorted by name`);
    expect(first).toContain(`<a rel="next" href="/${org.slug}/metrics?page=2&amp;pageSize=10">Next</a>`);
    expect(first).not.toContain('rel="prev"');
    expect(first).toContain(`href="/${org.slug}/metrics/${ids.filler_00}"`);
    const last = await page(`/${org.slug}/metrics?pageSize=10&page=3`);
    expect(listed(last)).toEqual([
      'Filler 20',
      'Filler 21',
      'Filler 22',
      'Filler 23',
      escapeHtml(`Marked ${SCRIPT}`),
      'Net Revenue',
      'Old Revenue',
    ]);
    expect(last).toContain(`<a rel="prev" href="/${org.slug}/metrics?page=2&amp;pageSize=10">Previous</a>`);
    expect(last).not.toContain('rel="next"');
    const beyond = await page(`/${org.slug}/metrics?pageSize=10&page=9`);
    expect(listed(beyond)).toEqual([]);
    expect(beyond).toContain('There are only 3 pages of results');
  });

  it('searches with the API ranking and says which words it corrected', async () => {
    const found = await page(`/${org.slug}/metrics?q=revenue`);
    expect(listed(found).sort()).toEqual(['Net Revenue', 'Old Revenue']);
    expect(found).toContain('sorted by relevance');
    expect(found).not.toContain('Showing results for');
    const corrected = await page(`/${org.slug}/metrics?q=revnue`);
    expect(listed(corrected).sort()).toEqual(['Net Revenue', 'Old Revenue']);
    expect(corrected).toContain('Showing results for <strong>revenue</strong> (you searched for revnue)');
    // The API answers the same search with the same correction.
    const api = await fetch(new URL('/api/v1/metrics?q=revnue', base), {
      headers: { authorization: `Bearer ${org.key}` },
    });
    expect(((await api.json()) as { meta: { corrected: unknown } }).meta.corrected).toEqual([
      { from: 'revnue', to: 'revenue' },
    ]);
    const none = await page(`/${org.slug}/metrics?q=zzzzqqq`);
    expect(listed(none)).toEqual([]);
    expect(none).toContain('No metric matches <strong>zzzzqqq</strong>');
  });

  it('filters by each facet, with counts per value', async () => {
    const finance = (await t.database.prisma.domain.findFirst({ where: { orgId: org.id, name: 'Finance' } }))?.id;
    const cases: [string, string[]][] = [
      ['lifecycle=DEPRECATED', ['Old Revenue']],
      ['scope=domain_canonical', [escapeHtml(`Marked ${SCRIPT}`)]],
      [`domain=${finance}`, ['Net Revenue', 'Old Revenue']],
      ['owner=Revenue+Ops', ['Net Revenue']],
      ['trust=do_not_use', ['Old Revenue']],
      ['q=revenue&lifecycle=RELEASED', ['Net Revenue']],
      ['lifecycle=NOT_A_STATUS', []],
    ];
    for (const [query, names] of cases)
      expect(listed(await page(`/${org.slug}/metrics?${query}`)), query).toEqual(names);
    const body = await page(`/${org.slug}/metrics`);
    expect(body).toContain('<option value="DEPRECATED">DEPRECATED (1)</option>');
    expect(body).toContain(`<option value="${finance}">Finance (2)</option>`);
    expect(body).toContain('<option value="do_not_use">do_not_use (1)</option>');
    expect(body).toContain('<option value="Revenue Ops">Revenue Ops (1)</option>');
    const selected = await page(`/${org.slug}/metrics?scope=domain_canonical`);
    expect(selected).toContain('<option value="domain_canonical" selected>');
    expect(selected).toContain('<form class="catalog-filters" method="get"');
  });

  it('shows each row with its key, lifecycle, scope, domain, owner team and verdict badge', async () => {
    const body = await page(`/${org.slug}/metrics?q=net+revenue`);
    expect(body).toMatch(
      /<td><code>net_revenue<\/code><\/td>\s*<td>RELEASED<\/td>\s*<td>enterprise_canonical<\/td>\s*<td>Finance<\/td>\s*<td>Revenue Ops<\/td>\s*<td><span class="badge verdict-use_with_caution">/,
    );
  });

  it('answers bad values with a 400 page or their default, never a 500', async () => {
    for (const query of [
      `q=${'a'.repeat(300)}`,
      'trust=maybe',
      'domain=not-a-uuid',
      `owner=${'x'.repeat(65)}`,
      'q=%00',
    ]) {
      const response = await get(`/${org.slug}/metrics?${query}`);
      expect(response.status, query).toBe(400);
      expect(response.headers.get('content-type')).toContain('text/html');
    }
    for (const query of ['page=-1', 'pageSize=10000', 'page=abc', 'scope=galactic']) {
      expect((await get(`/${org.slug}/metrics?${query}`)).status, query).toBe(200);
    }
    expect(listed(await page(`/${org.slug}/metrics?pageSize=10000`)).length).toBe(FILLERS + 3);
    const huge = await get(`/${org.slug}/metrics?q=${'a'.repeat(1024 * 1024)}`);
    expect(huge.status).toBeGreaterThanOrEqual(400);
    expect(huge.status).toBeLessThan(500);
  });
});

describe('home', () => {
  it('counts per verdict and lifecycle, lists the latest changes and what needs attention', async () => {
    const body = await page(`/${org.slug}`);
    expect(body).toContain(`<h1>Team ${org.slug}</h1>`);
    expect(body).toMatch(new RegExp(`href="/${org.slug}/metrics\\?trust=do_not_use"><strong>1</strong>`));
    expect(body).toMatch(new RegExp(`href="/${org.slug}/metrics\\?lifecycle=DEPRECATED"><strong>1</strong>`));
    const changes = body.slice(body.indexOf('<ol class="changes">'), body.indexOf('</ol>'));
    expect(changes.match(/<li>/g)).toHaveLength(10);
    expect(changes).toContain(
      `<a href="/${org.slug}/metrics/${ids.net_revenue}">Net Revenue</a>: validation failed (ci)`,
    );
    const attention = body.slice(body.indexOf('Needs attention'));
    expect(attention).toContain('Failing or stale validation evidence (2)');
    expect(attention).toContain(`<a href="/${org.slug}/metrics/${ids.net_revenue}">Net Revenue</a>`);
    expect(attention).toContain('Verdict do_not_use (1)');
    expect(attention).toContain(`<a href="/${org.slug}/metrics/${ids.old_revenue}">Old Revenue</a>`);
  });

  it('counts again once the metrics change (the kept counts are of the version before)', async () => {
    const before = await page(`/${org.slug}`);
    expect(before).toContain('Verdict do_not_use (1)');
    const applied = await putRegistry(
      t.app,
      doc(org.slug, [docMetric('older_revenue', { name: 'Older Revenue', lifecycle_status: 'DEPRECATED' })]),
      { token: org.token },
    );
    expect(applied.statusCode).toBe(200);
    const after = await page(`/${org.slug}`);
    expect(after).toContain('Verdict do_not_use (2)');
    expect(after).toMatch(new RegExp(`href="/${org.slug}/metrics\\?lifecycle=DEPRECATED"><strong>2</strong>`));
    expect(await page(`/${org.slug}/metrics`)).toContain('<option value="do_not_use">do_not_use (2)</option>');
  });
});

describe('roles and organizations', () => {
  it('lets a viewer and a member read the home and the catalog, without the settings', async () => {
    for (const session of [sessions.viewer, sessions.member]) {
      for (const path of [`/${org.slug}`, `/${org.slug}/metrics`]) {
        expect(await page(path, session)).not.toContain(`href="/${org.slug}/settings"`);
      }
      const refused = await get(`/${org.slug}/settings`, session);
      expect(refused.status).toBe(403);
      expect(refused.headers.get('content-type')).toContain('text/html');
    }
  });

  it('shows an admin the settings: keys, tokens and webhooks, never a secret', async () => {
    const home = await page(`/${org.slug}`);
    expect(home).toContain(`href="/${org.slug}/settings"`);
    const hook = await fetch(new URL('/api/webhooks', base), {
      method: 'POST',
      headers: { cookie: `session=${org.ownerSession}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/in', description: `Hook ${SCRIPT}` }),
    });
    expect(hook.status).toBe(201);
    const body = await page(`/${org.slug}/settings`);
    expect(body).toContain('<td>reader</td>');
    expect(body).toContain('<td>CI</td>');
    expect(body).toContain(org.key.slice(0, 8));
    expect(body).not.toContain(org.key);
    expect(body).not.toContain(org.token);
    expect(body).toContain('http://127.0.0.1:9/in');
    expect(body).toContain(escapeHtml(`Hook ${SCRIPT}`));
    expect(body).toContain('POST /api/api-keys');
  });

  it('answers 404 to a member of another organization and sends a signed-out visit to sign in', async () => {
    for (const path of [`/${org.slug}`, `/${org.slug}/metrics`, `/${org.slug}/settings`]) {
      expect((await get(path, other.ownerSession)).status, path).toBe(404);
      const signedOut = await get(`${path}?q=x`, null);
      expect(signedOut.status).toBe(303);
      expect(signedOut.headers.get('location')).toBe(`/sign-in?next=${encodeURIComponent(`${path}?q=x`)}`);
    }
  });

  it("answers 404 to a browser's own requests (/favicon.ico), signed in or not: no organization has such a name", async () => {
    for (const path of ['/favicon.ico', '/robots.txt', '/apple-touch-icon.png', '/Catalog', '/favicon.ico/metrics']) {
      for (const session of [null, org.ownerSession]) {
        const response = await get(path, session);
        expect(response.status, path).toBe(404);
        expect(response.headers.get('location')).toBeNull();
      }
    }
  });
});

describe('markup in the data', () => {
  it('is shown escaped on every page', async () => {
    await fetch(new URL('/api/webhooks', base), {
      method: 'POST',
      headers: { cookie: `session=${org.ownerSession}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/two', description: IMG }),
    });
    const bodies = [
      await page(`/${org.slug}/metrics?scope=domain_canonical`),
      await page(`/${org.slug}`),
      await page(`/${org.slug}/settings`),
      await page(`/${org.slug}/metrics?q=${encodeURIComponent(SCRIPT)}`),
    ];
    const [catalog, home, settings, searched] = bodies as [string, string, string, string];
    for (const text of [`Marked ${SCRIPT}`, `Domain ${SCRIPT}`, `Team ${IMG}`])
      expect(catalog).toContain(escapeHtml(text));
    expect(home).toContain(escapeHtml(`Marked ${SCRIPT}`));
    expect(settings).toContain(escapeHtml(IMG));
    expect(searched).toContain(escapeHtml(SCRIPT));
    for (const body of bodies) {
      expect(body).not.toContain('<script>alert');
      expect(body).not.toContain('<img src=x');
    }
  });
});
