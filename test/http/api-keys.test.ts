/**
 * API-key administration over HTTP (service interface, "Routes beyond the
 * public read routes"): session auth and roles, creation, listing,
 * revocation, CSRF defence and the audit trail.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/auth/secrets.js';
import { AGENT_CONTRACT_SCOPES, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, JSON_CONTENT_TYPE } from '../rest/expectations.js';

const r = registry();
const acme = r.org();
const owner = acme.user({ role: 'owner', session_token: true });
const admin = acme.user({ role: 'admin', session_token: true });
const member = acme.user({ role: 'member', session_token: true });
const viewer = acme.user({ role: 'viewer', session_token: true });
const globex = r.org();
const globexAdmin = globex.user({ role: 'admin', session_token: true });
const globexKey = globex.key();

const HOST = 'api.test.example';
const notSignedIn = { error: 'Not signed in' };
const forbidden = { error: 'Forbidden' };
const keyNotFound = { error: 'API key not found' };
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

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
    ...(options.body === undefined
      ? {}
      : { payload: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }),
  };
  return t.inject(injectOptions);
}

const create = (body: unknown, options: { session?: string | null; headers?: Record<string, string> } = {}) =>
  request('POST', '/api/api-keys', { ...options, body });
const list = (session?: string | null) => request('GET', '/api/api-keys', { session });
const revoke = (id: string, options: { session?: string | null; headers?: Record<string, string> } = {}) =>
  request('DELETE', `/api/api-keys/${id}`, options);

async function createdKey(body: Record<string, unknown> = {}, session = token(owner)) {
  const res = await create({ name: `key ${randomBytes(3).toString('hex')}`, ...body }, { session });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; key: string; name: string; scopes: string[]; created_at: string };
}

describe('sessions and roles', () => {
  it.each([
    ['owner', owner],
    ['admin', admin],
  ])('%s can create, list and revoke', async (_role, user) => {
    const session = token(user);
    const key = await createdKey({}, session);
    const listed = await list(session);
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data.map((k: { id: string }) => k.id)).toContain(key.id);
    const revoked = await revoke(key.id, { session });
    expect(revoked.statusCode).toBe(200);
  });

  it.each([
    ['member', member],
    ['viewer', viewer],
  ])('%s gets 403 on every route', async (_role, user) => {
    const session = token(user);
    expectError(await create({ name: 'x' }, { session }), 403, forbidden);
    expectError(await list(session), 403, forbidden);
    expectError(await revoke(globexKey.id, { session }), 403, forbidden);
  });

  it.each([
    ['no cookie', null],
    ['an unknown cookie', randomBytes(24).toString('hex')],
    ['an empty cookie', ''],
  ])('%s: 401 Not signed in', async (_name, session) => {
    expectError(await create({ name: 'x' }, { session }), 401, notSignedIn);
    expectError(await list(session), 401, notSignedIn);
    expectError(await revoke(randomUUID(), { session }), 401, notSignedIn);
  });

  it('an expired session: 401 Not signed in', async () => {
    const expired = randomBytes(24).toString('hex');
    await t.database.prisma.session.create({
      data: {
        tokenHash: hashSecret(expired),
        userId: owner.id,
        orgId: acme.id,
        expiresAt: new Date(Date.now() - 1000),
      },
    });
    expectError(await list(expired), 401, notSignedIn);
  });
});

describe('POST /api/api-keys', () => {
  it('201 with the full secret once, default scopes, and a key that works at once', async () => {
    const res = await create({ name: '  Agent key  ' });
    expect(res.statusCode).toBe(201);
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    const { data } = res.json();
    expect(data).toEqual({
      id: expect.any(String),
      name: 'Agent key',
      key: expect.stringMatching(/^cl_[0-9a-f]{40}$/),
      scopes: AGENT_CONTRACT_SCOPES,
      sandbox: false,
      rate_limit_per_minute: null,
      created_at: expect.stringMatching(ISO_UTC),
    });
    const stored = await t.database.prisma.apiKey.findUniqueOrThrow({ where: { id: data.id } });
    expect(stored).toMatchObject({ orgId: acme.id, createdByUserId: owner.id, keyHash: hashSecret(data.key) });
    expect((await t.get('/api/v1/metrics', data.key)).statusCode).toBe(200);
  });

  it('accepts the exact pair in another order, sandbox and a rate limit', async () => {
    const res = await create({
      name: 'Sandbox',
      scopes: [...AGENT_CONTRACT_SCOPES].reverse(),
      sandbox: true,
      rate_limit_per_minute: 30,
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().data).toMatchObject({ scopes: AGENT_CONTRACT_SCOPES, sandbox: true, rate_limit_per_minute: 30 });
  });

  it.each([
    ['metrics:read only', ['metrics:read']],
    ['one of the pair', ['definition:read']],
    ['the pair and more', [...AGENT_CONTRACT_SCOPES, 'metrics:read']],
    ['a member twice', ['definition:read', 'definition:read']],
    ['none', []],
  ])('scopes %s: 400', async (_name, scopes) => {
    const before = await t.database.prisma.apiKey.count();
    const res = await create({ name: 'bad scopes', scopes });
    expectError(res, 400, { error: 'scopes must be exactly canonical-metric-api:read and definition:read' });
    expect(await t.database.prisma.apiKey.count()).toBe(before);
  });

  it.each([
    ['no name', {}],
    ['an empty name', { name: '   ' }],
    ['a name too long', { name: 'x'.repeat(201) }],
    ['a name that is not a string', { name: 42 }],
    ['an unknown member', { name: 'k', owner: 'me' }],
    ['sandbox not a boolean', { name: 'k', sandbox: 'yes' }],
    ['a fractional rate limit', { name: 'k', rate_limit_per_minute: 1.5 }],
    ['a zero rate limit', { name: 'k', rate_limit_per_minute: 0 }],
    ['a rate limit past the column', { name: 'k', rate_limit_per_minute: 2 ** 31 }],
    ['an array body', [{ name: 'k' }]],
    ['a null body', null],
  ])('%s: 400 with a message', async (_name, body) => {
    const res = await create(body);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    expect(res.json()).toEqual({ error: expect.any(String) });
    expect(res.json().error.length).toBeGreaterThan(0);
  });

  it('accepts a null rate limit (the server default)', async () => {
    const res = await create({ name: 'default limit', rate_limit_per_minute: null });
    expect(res.statusCode).toBe(201);
    expect(res.json().data.rate_limit_per_minute).toBeNull();
  });

  it.each([
    ['invalid JSON', '{"name": '],
    ['an empty body', ''],
  ])('%s: 400, never a 500', async (_name, payload) => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/api-keys',
      headers: { host: HOST, cookie: `session=${token(owner)}`, 'content-type': 'application/json' },
      payload,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.any(String) });
  });
});

describe('GET /api/api-keys', () => {
  it("lists the active organization's keys, newest first, never a secret", async () => {
    const first = await createdKey();
    const second = await createdKey();
    const res = await list();
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    expect(res.body).not.toContain(first.key);
    expect(res.body).not.toContain(second.key);
    expect(res.body).not.toContain(hashSecret(first.key));
    const { data } = res.json() as { data: Record<string, unknown>[] };
    const ids = data.map((key) => key.id);
    expect(ids).not.toContain(globexKey.id);
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(first.id));
    const createdAt = data.map((key) => String(key.created_at));
    expect(createdAt).toEqual([...createdAt].sort().reverse());
    expect(data.find((key) => key.id === first.id)).toEqual({
      id: first.id,
      name: first.name,
      key_prefix: expect.any(String),
      scopes: AGENT_CONTRACT_SCOPES,
      sandbox: false,
      rate_limit_per_minute: null,
      created_at: first.created_at,
      revoked_at: null,
      last_used_at: null,
    });
    const prefix = String(data.find((key) => key.id === first.id)?.key_prefix);
    expect(first.key.startsWith(prefix)).toBe(true);
    expect(prefix.length).toBeLessThan(first.key.length);
  });
});

describe('DELETE /api/api-keys/:key_id', () => {
  it('revokes: the very next bearer request is 401, revoking again keeps the first revoked_at', async () => {
    const key = await createdKey();
    expect((await t.get('/api/v1/metrics', key.key)).statusCode).toBe(200);
    const first = await revoke(key.id);
    expect(first.statusCode).toBe(200);
    expect(first.headers['content-type']).toBe(JSON_CONTENT_TYPE);
    expect(first.json()).toEqual({ data: { id: key.id, revoked_at: expect.stringMatching(ISO_UTC) } });
    expectError(await t.get('/api/v1/metrics', key.key), 401, { error: 'API key has been revoked' });

    const second = await revoke(key.id, { session: token(admin) });
    expect(second.statusCode).toBe(200);
    expect(second.json()).toEqual(first.json());
    const listed = (await list()).json().data.find((k: { id: string }) => k.id === key.id);
    expect(listed.revoked_at).toBe(first.json().data.revoked_at);
  });

  it("another organization's key: 404, and it stays usable", async () => {
    expectError(await revoke(globexKey.id), 404, keyNotFound);
    expect((await t.get('/api/v1/metrics', globexKey.secret)).statusCode).toBe(200);
  });

  it.each([
    ['an unknown id', randomUUID()],
    ['a non-uuid id', 'not-a-uuid'],
    ['a numeric id', '123'],
  ])('%s: 404', async (_name, id) => {
    expectError(await revoke(id), 404, keyNotFound);
  });

  it("a session of the other organization cannot revoke this one's key", async () => {
    const key = await createdKey();
    expectError(await revoke(key.id, { session: token(globexAdmin) }), 404, keyNotFound);
    expect((await t.get('/api/v1/metrics', key.key)).statusCode).toBe(200);
  });
});

describe('CSRF defence', () => {
  it.each([
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site' }],
    ['a foreign Origin', { origin: 'https://evil.example' }],
    ['Origin null', { origin: 'null' }],
    ['an Origin on another port', { origin: `https://${HOST}:8443` }],
    ['the same host under another scheme (https for an http service)', { origin: `https://${HOST}` }],
  ])('%s: 403 on POST and DELETE, nothing changes', async (_name, headers) => {
    const before = await t.database.prisma.apiKey.count();
    expectError(await create({ name: 'forged' }, { headers }), 403, forbidden);
    expect(await t.database.prisma.apiKey.count()).toBe(before);

    const key = await createdKey();
    expectError(await revoke(key.id, { headers }), 403, forbidden);
    expect((await t.get('/api/v1/metrics', key.key)).statusCode).toBe(200);
  });

  it.each([
    ['same Origin', { origin: `http://${HOST}` }],
    ['Sec-Fetch-Site: same-origin', { 'sec-fetch-site': 'same-origin', origin: `http://${HOST}` }],
    ['Sec-Fetch-Site: none', { 'sec-fetch-site': 'none' }],
  ])('%s: allowed', async (_name, headers) => {
    const res = await create({ name: 'same origin' }, { headers });
    expect(res.statusCode, res.body).toBe(201);
    expect((await revoke(res.json().data.id, { headers })).statusCode).toBe(200);
  });

  it.each([
    ['text/plain', 'text/plain'],
    ['a form', 'application/x-www-form-urlencoded'],
  ])('a %s POST: 415', async (_name, contentType) => {
    const before = await t.database.prisma.apiKey.count();
    const res = await create(JSON.stringify({ name: 'form' }), { headers: { 'content-type': contentType } });
    expectError(res, 415, { error: 'Content-Type must be application/json' });
    expect(await t.database.prisma.apiKey.count()).toBe(before);
  });

  it('a POST without a Content-Type: 415', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/api-keys',
      headers: { host: HOST, cookie: `session=${token(owner)}` },
    });
    expectError(res, 415, { error: 'Content-Type must be application/json' });
  });

  it('application/json with a charset is accepted', async () => {
    const res = await create(JSON.stringify({ name: 'charset' }), {
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.statusCode).toBe(201);
  });
});

describe('audit trail', () => {
  it('records creation and revocation with the signed-in actor, once per revocation', async () => {
    const key = await createdKey({}, token(admin));
    await revoke(key.id, { session: token(owner) });
    await revoke(key.id, { session: token(admin) });
    const rows = await t.database.prisma.apiKeyAudit.findMany({
      where: { apiKeyId: key.id },
      orderBy: [{ createdAt: 'asc' }, { action: 'asc' }],
    });
    expect(rows.map(({ orgId, action, actorUserId }) => ({ orgId, action, actorUserId }))).toEqual([
      { orgId: acme.id, action: 'created', actorUserId: admin.id },
      { orgId: acme.id, action: 'revoked', actorUserId: owner.id },
    ]);
    for (const row of rows) expect(row.createdAt).toBeInstanceOf(Date);
  });

  it('writes nothing for a refused or failed request', async () => {
    const before = await t.database.prisma.apiKeyAudit.count();
    await create({ name: 'x' }, { session: token(member) });
    await create({ name: 'x', scopes: ['metrics:read'] });
    await revoke(globexKey.id);
    expect(await t.database.prisma.apiKeyAudit.count()).toBe(before);
  });
});
