/**
 * Who may write (issue 24): PUT /api/registry and POST /api/validations take
 * a signed-in admin or owner (with the key administration routes'
 * cross-origin rules) or a service token holding the route's scope, within
 * the token's own rate limit. A read API key is never accepted on a write
 * route, a service token never on a read route or /mcp, nor on /graphql
 * without discussions:write (docs/discussions.md). Every
 * refusal is the contract's exact status and body, and writes nothing.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceToken, revokeServiceToken } from '../../src/admin/service-tokens.js';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, HOST, postValidations, putRegistry, type Res } from '../registry/support.js';
import { expectError } from '../rest/expectations.js';

const r = registry();
const acme = r.org();
const owner = acme.user({ role: 'owner', session_token: true });
const admin = acme.user({ role: 'admin', session_token: true });
const member = acme.user({ role: 'member', session_token: true });
const viewer = acme.user({ role: 'viewer', session_token: true });
const readKey = acme.key();
const validated = acme.metric({ key: 'validated_metric', name: 'Validated Metric' });
const globex = r.org();
const globexAdmin = globex.user({ role: 'admin', session_token: true });
globex.metric({ key: 'validated_metric' });

const forbidden = { error: 'Forbidden' };
const notSignedIn = { error: 'Not signed in' };
const badFormat = { error: 'Invalid API key format' };
const insufficientScope = { error: 'Insufficient scope' };

let t: TestApp;
const tokens = { both: '', registry: '', validations: '', revoked: '', globex: '' };
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
  const prisma = t.database.prisma;
  const create = async (org: string, scopes: string[]) =>
    (await createServiceToken(prisma, { org, name: `CI ${scopes.join(' ')}`, scopes })).secret;
  tokens.both = await create(acme.slug, ['registry:write', 'validations:write']);
  tokens.registry = await create(acme.slug, ['registry:write']);
  tokens.validations = await create(acme.slug, ['validations:write']);
  tokens.globex = await create(globex.slug, ['registry:write', 'validations:write']);
  const revoked = await createServiceToken(prisma, { org: acme.slug, name: 'old CI', scopes: ['registry:write'] });
  await revokeServiceToken(prisma, { org: acme.slug, id: revoked.id });
  tokens.revoked = revoked.secret;
});
afterAll(() => t.close());

function session(user: { session_token?: string }): string {
  if (!user.session_token) throw new Error('user without a session token');
  return user.session_token;
}

interface Caller {
  token?: string;
  session?: string;
  headers?: Record<string, string>;
}

/** A write route: a request that writes one new, recognizable thing, and whether it was written. */
interface WriteRoute {
  name: string;
  scope: 'registry:write' | 'validations:write';
  /** a token of the same organization without this route's scope */
  otherScope: () => string;
  send(caller: Caller, app?: FastifyInstance | TestApp): Promise<{ res: Res; wrote: () => Promise<boolean> }>;
}

const registryRoute: WriteRoute = {
  name: 'PUT /api/registry',
  scope: 'registry:write',
  otherScope: () => tokens.validations,
  async send(caller, app = t) {
    const key = `written_${randomBytes(4).toString('hex')}`;
    // The metrics already there are absent from the document, and kept (no prune).
    const res = await putRegistry(app, doc(acme.slug, [docMetric(key)]), caller);
    return {
      res,
      wrote: async () => (await t.database.prisma.metric.count({ where: { orgId: acme.id, key } })) === 1,
    };
  },
};

const validationsRoute: WriteRoute = {
  name: 'POST /api/validations',
  scope: 'validations:write',
  otherScope: () => tokens.registry,
  async send(caller, app = t) {
    const source = `ci-${randomBytes(4).toString('hex')}`;
    const body = {
      results: [{ metric_key: validated.key, ran_at: new Date().toISOString(), status: 'passed', source }],
    };
    const res = await postValidations(app, body, caller);
    return {
      res,
      wrote: async () =>
        (await t.database.prisma.validation.count({ where: { metricId: validated.id, source } })) === 1,
    };
  },
};

async function expectWritten(route: WriteRoute, caller: Caller) {
  const { res, wrote } = await route.send(caller);
  expect(res.statusCode, res.body).toBe(200);
  expect(await wrote()).toBe(true);
}

async function expectRefused(route: WriteRoute, caller: Caller, status: number, body: unknown) {
  const { res, wrote } = await route.send(caller);
  expectError(res, status, body);
  expect(await wrote()).toBe(false);
}

describe.each([registryRoute, validationsRoute])('$name', (route) => {
  describe('signed-in people', () => {
    it.each([
      ['owner', owner],
      ['admin', admin],
    ])('an %s’s session writes', async (_role, user) => {
      await expectWritten(route, { session: session(user) });
    });

    it.each([
      ['member', member],
      ['viewer', viewer],
    ])('a %s’s session: 403 Forbidden', async (_role, user) => {
      await expectRefused(route, { session: session(user) }, 403, forbidden);
    });

    it.each([
      ['no credentials', {}],
      ['an unknown session', { session: randomBytes(24).toString('hex') }],
    ])('%s: 401 Not signed in', async (_name, caller) => {
      await expectRefused(route, caller, 401, notSignedIn);
    });

    it.each([
      ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
      ['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site' }],
      ['a foreign Origin', { origin: 'https://evil.example' }],
      ['Origin null', { origin: 'null' }],
      ['an Origin on another port', { origin: `http://${HOST}:8443` }],
      ['the same host under another scheme', { origin: `https://${HOST}` }],
    ])('an owner’s session from another origin (%s): 403, nothing written', async (_name, headers) => {
      await expectRefused(route, { session: session(owner), headers }, 403, forbidden);
    });

    it.each([
      ['same Origin', { origin: `http://${HOST}` }],
      ['Sec-Fetch-Site: same-origin', { 'sec-fetch-site': 'same-origin' }],
      ['Sec-Fetch-Site: none', { 'sec-fetch-site': 'none' }],
    ])('an owner’s session from this origin (%s) writes', async (_name, headers) => {
      await expectWritten(route, { session: session(owner), headers });
    });
  });

  describe('service tokens', () => {
    it('a token with the route’s scope writes', async () => {
      await expectWritten(route, { token: tokens.both });
      await expectWritten(route, { token: route.scope === 'registry:write' ? tokens.registry : tokens.validations });
    });

    it('a token without the route’s scope: 403 Insufficient scope', async () => {
      await expectRefused(route, { token: route.otherScope() }, 403, insufficientScope);
    });

    it('a revoked token: 401 API key has been revoked', async () => {
      await expectRefused(route, { token: tokens.revoked }, 401, { error: 'API key has been revoked' });
    });

    it.each([
      ['an unknown token', `cls_${'0'.repeat(40)}`, { error: 'Invalid API key' }],
      ['a token cut short', 'cls_abc', badFormat],
      ['a token in upper case', `cls_${'A'.repeat(40)}`, badFormat],
      ['a token of 41 characters', `cls_${'a'.repeat(41)}`, badFormat],
    ])('%s: 401', async (_name, token, body) => {
      await expectRefused(route, { token }, 401, body);
    });

    it('another scheme than Bearer: 401 with the contract’s message', async () => {
      await expectRefused(route, { headers: { authorization: `Basic ${tokens.both}` } }, 401, {
        error: 'Invalid Authorization header format. Expected: Bearer <api_key>',
      });
    });

    it('a token is automation: a cross-origin header does not matter to it', async () => {
      await expectWritten(route, { token: tokens.both, headers: { origin: 'https://ci.example' } });
    });
  });

  describe('read API keys', () => {
    it('a read key is refused: 401 Invalid API key format', async () => {
      await expectRefused(route, { token: readKey.secret }, 401, badFormat);
    });
  });
});

describe('service tokens on the read routes', () => {
  it.each([
    ['GET /api/v1/metrics', '/api/v1/metrics'],
    ['GET /api/v1/metrics?q=', '/api/v1/metrics?q=validated'],
    ['GET /api/v1/metrics/:id', `/api/v1/metrics/${validated.id}`],
    ['GET /api/v1/metrics/:id/contract', `/api/v1/metrics/${validated.id}/contract`],
  ])('%s: 401 Invalid API key format', async (_name, url) => {
    expectError(await t.get(url, tokens.both), 401, badFormat);
    // The same route answers a read key.
    expect((await t.get(url, readKey.secret)).statusCode).toBe(200);
  });

  // /graphql takes a service token for discussions only (docs/discussions.md): without
  // discussions:write it is refused, with it a metric read is (src/schema/service-token-access.ts).
  it('POST /graphql: 403 Insufficient scope without discussions:write', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/graphql',
      headers: {
        authorization: `Bearer ${tokens.both}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      payload: { query: '{ metrics(pageSize: 1) { pagination { total } } }' },
    });
    expectError(res, 403, { error: 'Insufficient scope' });
  });

  it('POST /mcp: 401 Invalid API key format', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        authorization: `Bearer ${tokens.both}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      payload: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ci', version: '1' } },
      },
    });
    expectError(res, 401, badFormat);
  });

  it('the credential administration routes take a session, not a token', async () => {
    for (const url of ['/api/service-tokens', '/api/api-keys']) {
      const res = await t.inject({
        method: 'GET',
        url,
        headers: { host: HOST, authorization: `Bearer ${tokens.both}` },
      });
      expectError(res, 401, notSignedIn);
    }
  });
});

describe('the document’s organization', () => {
  it('a token of one organization cannot apply a document of another: 403, nothing written', async () => {
    const res = await putRegistry(t, doc(globex.slug, [docMetric('smuggled')]), { token: tokens.both });
    expectError(res, 403, {
      error: `the document's organization "${globex.slug}" is not the caller's organization (${acme.slug})`,
    });
    expect(await t.database.prisma.metric.count({ where: { key: 'smuggled' } })).toBe(0);
  });

  it('nor can an admin’s session', async () => {
    const res = await putRegistry(t, doc(acme.slug, [docMetric('smuggled_by_session')]), {
      session: session(globexAdmin),
    });
    expectError(res, 403, {
      error: `the document's organization "${acme.slug}" is not the caller's organization (${globex.slug})`,
    });
    expect(await t.database.prisma.metric.count({ where: { key: 'smuggled_by_session' } })).toBe(0);
  });

  it('an organization that does not exist: 403 all the same', async () => {
    const res = await putRegistry(t, doc('no-such-org', [docMetric('x')]), { token: tokens.both });
    expect(res.statusCode).toBe(403);
  });

  it('validation evidence goes to the caller’s organization: another one’s metric key is its own', async () => {
    const globexMetric = await t.database.prisma.metric.findFirstOrThrow({
      where: { orgId: globex.id, key: 'validated_metric' },
    });
    const source = `ci-${randomBytes(4).toString('hex')}`;
    const res = await postValidations(
      t,
      { results: [{ metric_key: 'validated_metric', ran_at: '2026-03-01T00:00:00Z', status: 'failed', source }] },
      { token: tokens.globex },
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(await t.database.prisma.validation.count({ where: { source, metricId: globexMetric.id } })).toBe(1);
    expect(await t.database.prisma.validation.count({ where: { source, metricId: validated.id } })).toBe(0);
  });
});

describe('content types and sizes', () => {
  it.each([
    ['text/plain', 'text/plain'],
    ['a form', 'application/x-www-form-urlencoded'],
    ['multipart', 'multipart/form-data; boundary=x'],
  ])('PUT /api/registry with %s: 415, nothing written', async (_name, contentType) => {
    const res = await putRegistry(t, doc(acme.slug, [docMetric('typed')]), { token: tokens.both, contentType });
    expectError(res, 415, { error: 'Content-Type must be application/json or application/yaml' });
    expect(await t.database.prisma.metric.count({ where: { key: 'typed' } })).toBe(0);
  });

  it('PUT /api/registry without a Content-Type: 415', async () => {
    const res = await t.inject({
      method: 'PUT',
      url: '/api/registry',
      headers: { host: HOST, authorization: `Bearer ${tokens.both}` },
      payload: Buffer.from(JSON.stringify(doc(acme.slug, []))),
    });
    expectError(res, 415, { error: 'Content-Type must be application/json or application/yaml' });
  });

  it('POST /api/validations with YAML: 415', async () => {
    const res = await postValidations(t, 'results: []', { token: tokens.both, contentType: 'application/yaml' });
    expectError(res, 415, { error: 'Content-Type must be application/json' });
  });

  it('authentication comes before the content type: no credentials and a wrong type is 401', async () => {
    const res = await putRegistry(t, 'x', { contentType: 'text/plain' });
    expectError(res, 401, notSignedIn);
  });

  it('a document past 16 MiB: 413, nothing written', async () => {
    const filler = 'x'.repeat(16 * 1024 * 1024);
    const body = JSON.stringify(doc(acme.slug, [docMetric('huge', { description: filler })]));
    const res = await putRegistry(t, body, { token: tokens.both, contentType: 'application/json' });
    expectError(res, 413, { error: 'Request body is too large' });
    expect(await t.database.prisma.metric.count({ where: { key: 'huge' } })).toBe(0);
  });

  it('past 16 MiB without credentials: 401, the body is not read first', async () => {
    const res = await putRegistry(t, 'x'.repeat(17 * 1024 * 1024), { contentType: 'application/yaml' });
    expectError(res, 401, notSignedIn);
  });
});

describe('the service token rate limit', () => {
  let limited: FastifyInstance;
  beforeAll(async () => {
    limited = await buildTestInstance(t.database, { serviceTokenRateLimit: 3, defaultRateLimit: 1000 });
  });
  afterAll(() => limited.close());

  it('a token gets SERVICE_TOKEN_RATE_LIMIT_PER_MINUTE requests a minute, then 429 with Retry-After', async () => {
    const token = (
      await createServiceToken(t.database.prisma, { org: acme.slug, name: 'limited', scopes: ['registry:write'] })
    ).secret;
    const dryRun = () => putRegistry(limited, doc(acme.slug, []), { token, query: 'dry_run=true' });
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await dryRun();
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('3');
      remaining.push(String(res.headers['ratelimit-remaining']));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const refused = await dryRun();
    expectError(refused, 429, { error: 'Rate limit exceeded' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another token has its own window; so has a read key (the key limit, not the token limit).
    const other = (
      await createServiceToken(t.database.prisma, { org: acme.slug, name: 'other', scopes: ['registry:write'] })
    ).secret;
    expect((await putRegistry(limited, doc(acme.slug, []), { token: other, query: 'dry_run=true' })).statusCode).toBe(
      200,
    );
  });

  it('validations spend the same window of the token', async () => {
    const token = (
      await createServiceToken(t.database.prisma, {
        org: acme.slug,
        name: 'limited both',
        scopes: ['registry:write', 'validations:write'],
      })
    ).secret;
    for (let i = 0; i < 3; i++) {
      const { res } = await (i % 2 ? validationsRoute : registryRoute).send({ token }, limited);
      expect(res.statusCode, res.body).toBe(200);
    }
    const { res, wrote } = await validationsRoute.send({ token }, limited);
    expectError(res, 429, { error: 'Rate limit exceeded' });
    expect(await wrote()).toBe(false);
  });
});
