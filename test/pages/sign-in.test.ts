/**
 * Sign-in over a listening socket: OpenID Connect against a real provider
 * (oidc-provider, its login form walked over fetch), one-time links from the
 * CLI, GET / for a signed-in browser, and sign-out ending the session.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser } from '../../src/admin/users.js';
import { authenticatePageSession } from '../../src/auth/authenticate.js';
import { runCli } from '../../src/cli-commands.js';
import { parseEnv } from '../../src/env.js';
import { errors } from '../../src/errors.js';
import { csrfTokenOf } from '../../src/http/pages/csrf.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { signInAtProvider, startOidcProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { freePort } from '../helpers/ports.js';
import { newTeamOrg, type TeamOrg } from '../registry/support.js';

let t: TestApp;
let base: string;
let provider: TestProvider;
let alpha: TeamOrg;
let beta: TeamOrg;
const METRIC_PAGE = '/metrics/6f1c2a52-8d1e-4f0b-9a57-2f3e4b5c6d7e';
const both = 'mia@example.com';
const alphaOnly = 'al@example.com';

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  provider = await startOidcProvider(`${base}/sign-in/oidc/callback`, {
    mia: { email: both, email_verified: true },
    // The same person as the provider spells it: matched regardless of case.
    'mia-upper': { email: 'MIA@Example.com', email_verified: true },
    stranger: { email: 'stranger@example.com', email_verified: true },
    unverified: { email: both, email_verified: false },
    nomail: {},
  });
  t = await startTestApp({ publicAppUrl: base, oidc: provider.settings });
  await t.app.listen({ port, host: '127.0.0.1' });
  alpha = await newTeamOrg(t.database.prisma, 'alpha');
  beta = await newTeamOrg(t.database.prisma, 'beta');
  for (const org of [alpha, beta]) {
    await addUser(t.database.prisma, { org: org.slug, email: both, name: 'Mia <b>Member</b>', role: 'member' });
  }
  await addUser(t.database.prisma, { org: alpha.slug, email: alphaOnly, name: 'Al', role: 'viewer' });
});
afterAll(async () => {
  await t?.close();
  await provider?.close();
});

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(new URL(path, base), { redirect: 'manual', headers });
const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(new URL(path, base), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
  });
const cookieOf = (response: Response, name: string) =>
  response.headers.getSetCookie().find((line) => line.startsWith(`${name}=`)) ?? '';
const cookieValue = (setCookie: string) => setCookie.slice(setCookie.indexOf('=') + 1, setCookie.indexOf(';'));
const sessionCount = () => t.database.prisma.session.count();
/** Where GET / sends a browser with this session: its organization's home, or /docs signed out. */
const homeOf = async (session: string) =>
  (await get('/', { accept: 'text/html', cookie: `session=${session}` })).headers.get('location');

/** From /sign-in/oidc through the provider as `login`, up to its redirect back (not followed). */
async function throughProvider(login: string, next?: string) {
  const start = await get(`/sign-in/oidc${next ? `?next=${encodeURIComponent(next)}` : ''}`);
  expect(start.status).toBe(303);
  const state = cookieOf(start, 'oidc_sign_in');
  const callback = await signInAtProvider(start.headers.get('location') ?? '', login);
  expect(callback.startsWith(`${base}/sign-in/oidc/callback?`)).toBe(true);
  return { start, state, callback, cookie: `oidc_sign_in=${cookieValue(state)}` };
}

/** The same, then back to the callback with the state cookie, as the browser goes. */
async function signInWithProvider(login: string, next?: string) {
  const through = await throughProvider(login, next);
  return { ...through, back: await get(through.callback, { cookie: through.cookie }) };
}

async function loginLink(org: string, email: string, ...more: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['login:link', '--org', org, '--email', email, ...more], {
    prisma: t.database.prisma,
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    publicAppUrl: base,
  });
  return { code, out, err, url: out.find((line) => line.startsWith(`${base}/sign-in/link?token=`)) ?? '' };
}
const tokenOf = (url: string) => new URL(url).searchParams.get('token') ?? '';

describe('the sign-in page', () => {
  it('offers the provider and the one-time link, carrying a safe next (escaped)', async () => {
    const next = `/${alpha.slug}/x"><script>alert(1)</script>`;
    const res = await get(`/sign-in?next=${encodeURIComponent(next)}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    // Its form posts carry their Origin (under no-referrer a browser sends `Origin: null`, refused).
    expect(res.headers.get('referrer-policy')).toBe('same-origin');
    const page = await res.text();
    expect(page).toContain(`Sign in with 127.0.0.1:`);
    expect(page).toContain(`href="/sign-in/oidc?next=${encodeURIComponent(next)}"`);
    expect(page).toContain('npm run cli -- login:link --org ORG --email EMAIL');
    expect(page).not.toContain('<script>alert');
    expect(page.match(/<h1>/g)).toHaveLength(1);
    // A next that leaves the service is dropped.
    expect(await (await get('/sign-in?next=//evil.example/')).text()).toContain('href="/sign-in/oidc"');
  });
});

describe('OpenID Connect', () => {
  it('signs a member in and lands on the page asked for, in that page organization', async () => {
    const next = `/${beta.slug}${METRIC_PAGE}`;
    const { start, state, back } = await signInWithProvider('mia', next);
    const authorize = new URL(start.headers.get('location') ?? '');
    expect(authorize.origin).toBe(provider.settings.issuer);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${base}/sign-in/oidc/callback`);
    expect(state).toMatch(/HttpOnly/i);
    expect(state).toMatch(/SameSite=Lax/i);
    expect(state).toMatch(/Path=\/sign-in\/oidc/);
    expect(state).toMatch(/Max-Age=600/);
    // Nothing of the state is readable in the cookie.
    expect(cookieValue(state)).not.toContain(authorize.searchParams.get('state'));

    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe(next);
    const session = cookieOf(back, 'session');
    expect(session).toMatch(/HttpOnly/i);
    expect(session).toMatch(/SameSite=Lax/i);
    expect(cookieOf(back, 'oidc_sign_in')).toMatch(/Max-Age=0/);
    expect(await homeOf(cookieValue(session))).toBe(`/${beta.slug}`);
    const row = await t.database.prisma.session.findFirstOrThrow({ orderBy: { createdAt: 'desc' } });
    const hours = (row.expiresAt.getTime() - row.createdAt.getTime()) / 3_600_000;
    expect(hours).toBeCloseTo(12, 1);
  });

  it('without a next, lands on the first organization home; an email in other case is the same person', async () => {
    const { back } = await signInWithProvider('mia-upper');
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe(`/${[alpha.slug, beta.slug].sort()[0]}`);
  });

  it('refuses an unknown email with a page saying whom to ask, and creates nothing', async () => {
    const before = await sessionCount();
    const { back } = await signInWithProvider('stranger');
    expect(back.status).toBe(403);
    const page = await back.text();
    expect(page).toContain('stranger@example.com');
    expect(page).toContain('administrator of your organization');
    expect(page).toContain('user:add');
    expect(cookieOf(back, 'session')).toBe('');
    expect(await sessionCount()).toBe(before);
  });

  it('refuses an email the provider has not verified, and one it does not give', async () => {
    const before = await sessionCount();
    const unverified = (await signInWithProvider('unverified')).back;
    expect(unverified.status).toBe(403);
    expect(await unverified.text()).toContain('has not verified');
    const nomail = (await signInWithProvider('nomail')).back;
    expect(nomail.status).toBe(403);
    expect(await nomail.text()).toContain('did not say which email');
    expect(await sessionCount()).toBe(before);
  });

  it('refuses a return without the state cookie, with another state, a tampered cookie, or a replay', async () => {
    const before = await sessionCount();
    const { callback, cookie, back } = await signInWithProvider('mia');
    expect(back.status).toBe(303);
    // The same return again: its cookie was spent (and the provider's code too).
    expect((await get(callback, { cookie })).status).toBe(400);

    const fresh = await throughProvider('mia');
    const noCookie = await get(fresh.callback);
    expect(noCookie.status).toBe(400);
    expect(await noCookie.text()).toContain('was not started in this browser');

    const other = await throughProvider('mia');
    const forged = new URL(other.callback);
    forged.searchParams.set('state', 'another-state');
    const wrongState = await get(forged.href, { cookie: other.cookie });
    expect(wrongState.status).toBe(400);
    expect(await wrongState.text()).toContain('could not be completed');

    const third = await throughProvider('mia');
    const value = third.cookie.slice('oidc_sign_in='.length);
    const flipped = `${value.slice(0, 20)}${value[20] === 'A' ? 'B' : 'A'}${value.slice(21)}`;
    expect((await get(third.callback, { cookie: `oidc_sign_in=${flipped}` })).status).toBe(400);
    // The successful first one only.
    expect(await sessionCount()).toBe(before + 1);
  });

  it('answers a provider refusal (the person declined) with a page', async () => {
    const start = await get('/sign-in/oidc');
    const state = new URL(start.headers.get('location') ?? '').searchParams.get('state') ?? '';
    const res = await get(`/sign-in/oidc/callback?error=access_denied&state=${state}&iss=${provider.settings.issuer}`, {
      cookie: `oidc_sign_in=${cookieValue(cookieOf(start, 'oidc_sign_in'))}`,
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('access_denied');
  });
});

describe('one-time links', () => {
  it('prints a link that shows a button, signs in once, then is refused', async () => {
    const { code, url, out } = await loginLink(alpha.slug, both);
    expect(code).toBe(0);
    expect(out).toContain(url);
    expect(tokenOf(url)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Only the digest is stored.
    expect(await t.database.prisma.loginLink.count({ where: { tokenHash: tokenOf(url) } })).toBe(0);

    const shown = await get(url);
    expect(shown.status).toBe(200);
    const page = await shown.text();
    expect(page).toContain('<form method="post" action="/sign-in/link">');
    expect(page).toContain(`value="${tokenOf(url)}"`);
    // Showing it twice spends nothing (a mail scanner's visit).
    expect((await get(url)).status).toBe(200);

    const used = await post('/sign-in/link', { token: tokenOf(url) });
    expect(used.status).toBe(303);
    expect(used.headers.get('location')).toBe(`/${alpha.slug}`);
    const session = cookieValue(cookieOf(used, 'session'));
    expect(await homeOf(session)).toBe(`/${alpha.slug}`);

    const again = await post('/sign-in/link', { token: tokenOf(url) });
    expect(again.status).toBe(410);
    expect(await again.text()).toContain('login:link');
    expect(cookieOf(again, 'session')).toBe('');
    expect((await get(url)).status).toBe(410);
  });

  it('is used by one of two simultaneous posts only', async () => {
    const { url } = await loginLink(alpha.slug, both);
    const answers = await Promise.all([1, 2, 3].map(() => post('/sign-in/link', { token: tokenOf(url) })));
    expect(answers.map((a) => a.status).sort()).toEqual([303, 410, 410]);
  });

  it('refuses an expired or unknown link and creates nothing', async () => {
    const { url } = await loginLink(alpha.slug, both);
    await t.database.prisma.loginLink.updateMany({
      where: { usedAt: null },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const before = await sessionCount();
    expect((await get(url)).status).toBe(410);
    expect((await post('/sign-in/link', { token: tokenOf(url) })).status).toBe(410);
    expect((await post('/sign-in/link', { token: 'x'.repeat(43) })).status).toBe(410);
    expect((await post('/sign-in/link', {})).status).toBe(410);
    expect((await get('/sign-in/link')).status).toBe(410);
    expect((await post('/sign-in/link', { token: 'y'.repeat(100_000) })).status).toBe(410);
    expect(await sessionCount()).toBe(before);
  });

  it('refuses a post from another site without spending the link', async () => {
    const { url } = await loginLink(alpha.slug, both);
    const res = await post('/sign-in/link', { token: tokenOf(url) }, { origin: 'https://evil.example' });
    expect(res.status).toBe(403);
    expect((await get(url)).status).toBe(200);
  });

  it("lands on the link's next; another organization's page stays closed to its member (404)", async () => {
    const next = `/${beta.slug}${METRIC_PAGE}`;
    const { url, code } = await loginLink(alpha.slug, alphaOnly, '--next', next);
    expect(code).toBe(0);
    const used = await post('/sign-in/link', { token: tokenOf(url) });
    expect(used.status).toBe(303);
    expect(used.headers.get('location')).toBe(next);
    const session = cookieValue(cookieOf(used, 'session'));
    expect(await homeOf(session)).toBe(`/${alpha.slug}`);
    // What every page of beta admits it with (src/http/pages/page-kit.ts): not found, as if beta did not exist.
    expect((await authenticatePageSession(t.database.sql, session, beta.slug)).ok).toBe(false);
    expect(await authenticatePageSession(t.database.sql, session, beta.slug)).toMatchObject({
      error: errors.notFound,
    });
  });

  it('is refused to the CLI for a non-member or a next that leaves the service', async () => {
    const stranger = await loginLink(beta.slug, alphaOnly);
    expect(stranger.code).toBe(1);
    expect(stranger.err.join('\n')).toContain('is not a member');
    const away = await loginLink(alpha.slug, both, '--next', 'https://evil.example/');
    expect(away.code).toBe(2);
  });
});

describe('after sign-in', () => {
  it('sign-out ends the session: the cookie no longer works', async () => {
    const { url } = await loginLink(alpha.slug, both);
    const session = cookieValue(cookieOf(await post('/sign-in/link', { token: tokenOf(url) }), 'session'));
    expect(await homeOf(session)).toBe(`/${alpha.slug}`);
    const out = await post('/sign-out', { csrf: csrfTokenOf(session) }, { cookie: `session=${session}` });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/sign-in');
    expect(await homeOf(session)).toBe('/docs');
  });
});

describe('without a provider configured', () => {
  let plain: TestApp;
  let plainBase: string;
  beforeAll(async () => {
    plain = await startTestApp();
    plainBase = await plain.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => plain?.close());

  it('offers the one-time link only, and the provider routes say sign-in with a provider is not set up', async () => {
    const page = await (await fetch(`${plainBase}/sign-in`)).text();
    expect(page).not.toContain('/sign-in/oidc');
    expect(page).toContain('login:link');
    for (const path of ['/sign-in/oidc', '/sign-in/oidc/callback?code=x&state=y']) {
      const res = await fetch(`${plainBase}${path}`, { redirect: 'manual' });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(await res.text()).toContain('Sign-in with a provider is not set up');
    }
  });
});

describe('OIDC settings', () => {
  it('are all three or none, naming what is missing', () => {
    expect(parseEnv({}).OIDC_ISSUER).toBeUndefined();
    expect(() => parseEnv({ OIDC_ISSUER: 'https://id.example.com' })).toThrow(
      /OIDC_CLIENT_ID: required with OIDC_ISSUER[^\n]*\n\s+OIDC_CLIENT_SECRET: required with OIDC_ISSUER/,
    );
    const full = { OIDC_ISSUER: 'https://id.example.com', OIDC_CLIENT_ID: 'c', OIDC_CLIENT_SECRET: 's' };
    expect(parseEnv(full).OIDC_CLIENT_ID).toBe('c');
  });
});
