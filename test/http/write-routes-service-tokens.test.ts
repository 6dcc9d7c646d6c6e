/**
 * Service-token administration over HTTP (issue 24, item 3): POST/GET
 * /api/service-tokens and DELETE /api/service-tokens/{id} for signed-in
 * admins and owners. A token is `cls_` + 40 lowercase hex, shown once,
 * stored hashed, revocable (the very next write with it is 401), audited
 * like API keys, and kept apart from read keys.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/auth/secrets.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { doc, HOST, putRegistry } from '../registry/support.js';
import { expectError, JSON_CONTENT_TYPE } from '../rest/expectations.js';

const r = registry();
const acme = r.org();
const owner = acme.user({ role: 'owner', session_token: true });
const admin = acme.user({ role: 'admin', session_token: true });
const member = acme.user({ role: 'member', session_token: true });
const viewer = acme.user({ role: 'viewer', session_token: true });
const globex = r.org();
const globexAdmin = globex.user({ role: 'admin', session_token: true });

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TOKEN = /^cls_[0-9a-f]{40}$/;
const forbidden = { error: 'Forbidden' };
const notFound = { error: 'Service token not found' };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
});
afterAll(() => t.close());

function token(user: { session_token?: string }): string {
  if (!user.session_token) throw new Error('user without a session token');
  return user.session_token;
}

function request(
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  options: { session?: string | null; body?: unknown; headers?: Record<string, string> } = {},
) {
  const session = options.session === undefined ? token(owner) : options.session;
  const injectOptions: InjectOptions = {
    method,
    url,
    headers: {
      host: HOST,
      ...(session === null ? {} : { cookie: `session=${session}` }),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { payload: JSON.stringify(options.body) }),
  };
  return t.inject(injectOptions);
}

const create = (body: unknown, options: { session?: string | null; headers?: Record<string, string> } = {}) =>
  request('POST', '/api/service-tokens', { ...options, body });
const list = (session?: string | null) => request('GET', '/api/service-tokens', { session });
const revoke = (id: string, options: { session?: string | null; headers?: Record<string, string> } = {}) =>
  request('DELETE', `/api/service-tokens/${id}`, options);

async function created(scopes = ['registry:write', 'validations:write'], session = token(owner)) {
  const res = await create({ name: `CI ${randomBytes(3).toString('hex')}`, scopes }, { session });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; name: string; token: string; scopes: string[]; created_at: string };
}

const apply = (secret: string) => putRegistry(t, doc(acme.slug, []), { token: secret, query: 'dry_run=true' });

describe('POST /api/service-tokens', () => {
  it('201 with the token once; it is stored hashed and writes at once', async () => {
    const res = await create({ name: '  GitHub Actions  ', scopes: ['validations:write', 'registry:write'] });
    expect(res.statusCode).toBe(201);
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    const { data } = res.json();
    expect(data).toEqual({
      id: expect.any(String),
      name: 'GitHub Actions',
      token: expect.stringMatching(TOKEN),
      scopes: ['registry:write', 'validations:write'],
      created_at: expect.stringMatching(ISO_UTC),
    });
    const stored = await t.database.prisma.serviceToken.findUniqueOrThrow({ where: { id: data.id } });
    expect(stored).toMatchObject({ orgId: acme.id, createdByUserId: owner.id, tokenHash: hashSecret(data.token) });
    expect(Object.values(stored)).not.toContain(data.token);
    expect((await apply(data.token)).statusCode).toBe(200);
  });

  it('an admin may create one too', async () => {
    const data = await created(['registry:write'], token(admin));
    expect(data.scopes).toEqual(['registry:write']);
  });

  it.each([
    ['a read scope', ['canonical-metric-api:read']],
    ['an unknown scope', ['registry:admin']],
    ['no scope', []],
    ['a write scope and a read scope', ['registry:write', 'definition:read']],
  ])('%s: 400, nothing created', async (_name, scopes) => {
    const before = await t.database.prisma.serviceToken.count();
    const res = await create({ name: 'bad', scopes });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toEqual({ error: expect.any(String) });
    expect(await t.database.prisma.serviceToken.count()).toBe(before);
  });

  it.each([
    ['no name', { scopes: ['registry:write'] }],
    ['an empty name', { name: '  ', scopes: ['registry:write'] }],
    ['no scopes', { name: 'x' }],
    ['an unknown member', { name: 'x', scopes: ['registry:write'], expires: 'never' }],
  ])('%s: 400', async (_name, body) => {
    const res = await create(body);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toEqual({ error: expect.any(String) });
  });

  it('the token is not a read key: refused on the read routes', async () => {
    const data = await created();
    expectError(await t.get('/api/v1/metrics', data.token), 401, { error: 'Invalid API key format' });
  });
});

describe('GET /api/service-tokens', () => {
  it("lists the organization's tokens, newest first, never a secret; last_used_at follows use", async () => {
    const first = await created();
    const second = await created(['validations:write']);
    expect((await apply(first.token)).statusCode).toBe(200);
    const res = await list();
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(first.token);
    expect(res.body).not.toContain(second.token);
    expect(res.body).not.toContain(hashSecret(first.token));
    const { data } = res.json() as { data: Record<string, unknown>[] };
    const ids = data.map((row) => row.id);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
    expect(data.find((row) => row.id === first.id)).toEqual({
      id: first.id,
      name: first.name,
      token_prefix: first.token.slice(0, 12),
      scopes: ['registry:write', 'validations:write'],
      created_at: first.created_at,
      revoked_at: null,
      last_used_at: expect.stringMatching(ISO_UTC),
    });
    expect(data.find((row) => row.id === second.id)?.last_used_at).toBeNull();
  });

  it('lists no token of another organization', async () => {
    const theirs = await created(['registry:write'], token(globexAdmin));
    const ids = (await list()).json().data.map((row: { id: string }) => row.id);
    expect(ids).not.toContain(theirs.id);
  });
});

describe('DELETE /api/service-tokens/:token_id', () => {
  it('revokes: the very next write is 401, revoking again keeps the first revoked_at', async () => {
    const data = await created();
    expect((await apply(data.token)).statusCode).toBe(200);
    const first = await revoke(data.id);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ data: { id: data.id, revoked_at: expect.stringMatching(ISO_UTC) } });
    expectError(await apply(data.token), 401, { error: 'API key has been revoked' });
    const again = await revoke(data.id, { session: token(admin) });
    expect(again.json()).toEqual(first.json());
  });

  it.each([
    ['an unknown id', () => randomUUID()],
    ['a non-uuid id', () => 'not-a-uuid'],
  ])('%s: 404', async (_name, id) => {
    expectError(await revoke(id()), 404, notFound);
  });

  it("another organization's token: 404, and it keeps working", async () => {
    const theirs = await created(['registry:write'], token(globexAdmin));
    expectError(await revoke(theirs.id), 404, notFound);
    expect(
      (await putRegistry(t, doc(globex.slug, []), { token: theirs.token, query: 'dry_run=true' })).statusCode,
    ).toBe(200);
  });
});

describe('roles and origins', () => {
  it.each([
    ['member', member],
    ['viewer', viewer],
  ])('a %s gets 403 on every route', async (_role, user) => {
    const session = token(user);
    expectError(await create({ name: 'x', scopes: ['registry:write'] }, { session }), 403, forbidden);
    expectError(await list(session), 403, forbidden);
    expectError(await revoke(randomUUID(), { session }), 403, forbidden);
  });

  it('no session: 401 Not signed in', async () => {
    expectError(await list(null), 401, { error: 'Not signed in' });
  });

  it.each([
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['a foreign Origin', { origin: 'https://evil.example' }],
  ])('%s: 403 on POST and DELETE, nothing changes', async (_name, headers) => {
    const before = await t.database.prisma.serviceToken.count();
    expectError(await create({ name: 'forged', scopes: ['registry:write'] }, { headers }), 403, forbidden);
    expect(await t.database.prisma.serviceToken.count()).toBe(before);
    const data = await created();
    expectError(await revoke(data.id, { headers }), 403, forbidden);
    expect((await apply(data.token)).statusCode).toBe(200);
  });

  it('a form POST: 415', async () => {
    const res = await request('POST', '/api/service-tokens', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectError(res, 415, { error: 'Content-Type must be application/json' });
  });
});

describe('audit trail', () => {
  it('records creation and revocation with the signed-in actor, once per revocation', async () => {
    const data = await created(['registry:write'], token(admin));
    await revoke(data.id, { session: token(owner) });
    await revoke(data.id, { session: token(admin) });
    const rows = await t.database.prisma.serviceTokenAudit.findMany({
      where: { serviceTokenId: data.id },
      orderBy: [{ createdAt: 'asc' }, { action: 'asc' }],
    });
    expect(rows.map(({ orgId, action, actorUserId }) => ({ orgId, action, actorUserId }))).toEqual([
      { orgId: acme.id, action: 'created', actorUserId: admin.id },
      { orgId: acme.id, action: 'revoked', actorUserId: owner.id },
    ]);
  });

  it('writes nothing for a refused request', async () => {
    const before = await t.database.prisma.serviceTokenAudit.count();
    await create({ name: 'x', scopes: ['registry:write'] }, { session: token(member) });
    await create({ name: 'x', scopes: ['nope'] });
    await revoke(randomUUID());
    expect(await t.database.prisma.serviceTokenAudit.count()).toBe(before);
  });
});
