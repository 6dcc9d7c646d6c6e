/**
 * Authentication and authorization of the read routes: every 401/403 row of
 * contract section 7, the scope compatibility of section 5 and the order of
 * checks fixed by the service interface.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeySecret, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, JSON_CONTENT_TYPE } from './expectations.js';

const r = registry();
const org = r.org();
const metric = org.metric({ name: 'Net Revenue' });
const keys = {
  agent: org.key(),
  legacy: org.key({ scopes: ['metrics:read'] }),
  unrelated: org.key({ scopes: ['reports:write'] }),
  none: org.key({ scopes: [] }),
  revoked: org.key({ revoked_at: '2026-02-01T00:00:00Z' }),
  sandbox: org.key({ sandbox: true }),
  revokedSandbox: org.key({ sandbox: true, revoked_at: '2026-02-01T00:00:00Z' }),
  sandboxUnrelatedScope: org.key({ sandbox: true, scopes: ['reports:write'] }),
  limited: org.key({ rate_limit_per_minute: 2 }),
};

const routes = {
  list: '/api/v1/metrics',
  detail: `/api/v1/metrics/${metric.id}`,
  contract: `/api/v1/metrics/${metric.id}/contract`,
};
const allRoutes = Object.entries(routes);

const missingHeader = { error: 'Missing Authorization header' };
const badFormat = { error: 'Invalid Authorization header format. Expected: Bearer <api_key>' };
const badKeyFormat = { error: 'Invalid API key format' };
const invalidKey = { error: 'Invalid API key' };
const revoked = { error: 'API key has been revoked' };
const insufficientScope = { error: 'Insufficient scope' };
const sandboxRequired = {
  error: { code: 'sandbox_key_requires_sandbox', message: expect.stringMatching(/sandbox/i) },
};

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
});
afterAll(() => t.close());

const withAuthorization = (url: string, authorization: string) => t.get(url, null, { authorization });

describe('401: Authorization header', () => {
  it.each(allRoutes)('%s without Authorization header', async (_name, url) => {
    expectError(await t.get(url), 401, missingHeader);
  });

  it.each([
    ['Basic scheme', 'Basic dXNlcjpwYXNzd29yZA=='],
    ['Bearer with nothing', 'Bearer'],
    ['Bearer with two values', 'Bearer a b'],
    ['Bearer with a key and a trailing value', `Bearer ${newKeySecret()} extra`],
    ['a bare key without scheme', newKeySecret()],
    ['Token scheme', `Token ${newKeySecret()}`],
  ])('%s: invalid format', async (_name, authorization) => {
    for (const url of Object.values(routes)) {
      expectError(await withAuthorization(url, authorization), 401, badFormat);
    }
  });
});

describe('401: key format', () => {
  const hex40 = randomBytes(20).toString('hex');

  it.each([
    ['uppercase hex', `cl_${hex40.toUpperCase().replace(/^./, 'A')}`],
    ['39 characters', `cl_${hex40.slice(1)}`],
    ['41 characters', `cl_${hex40}0`],
    ['wrong prefix', `ck_${hex40}`],
    ['uppercase prefix', `CL_${hex40}`],
    ['non-hex character', `cl_${hex40.slice(1)}g`],
    ['no prefix', hex40],
  ])('%s: Invalid API key format', async (_name, secret) => {
    for (const url of Object.values(routes)) {
      expectError(await t.get(url, secret), 401, badKeyFormat);
    }
  });
});

describe('401: key lookup and revocation', () => {
  it.each(allRoutes)('%s: a well-formed unknown key is an invalid key', async (_name, url) => {
    expectError(await t.get(url, newKeySecret()), 401, invalidKey);
  });

  it.each(allRoutes)('%s: a revoked key is rejected', async (_name, url) => {
    expectError(await t.get(url, keys.revoked.secret), 401, revoked);
  });
});

describe('403: sandbox keys', () => {
  it.each(allRoutes)('%s: sandbox key without X-Service-Env', async (_name, url) => {
    expectError(await t.get(url, keys.sandbox.secret), 403, sandboxRequired);
    expect(typeof (await t.get(url, keys.sandbox.secret)).json().error.message).toBe('string');
  });

  it.each(allRoutes)('%s: sandbox key with X-Service-Env: production', async (_name, url) => {
    expectError(await t.get(url, keys.sandbox.secret, { 'x-service-env': 'production' }), 403, sandboxRequired);
  });

  it.each(allRoutes)('%s: sandbox key with X-Service-Env: sandbox is served', async (_name, url) => {
    expectOk(await t.get(url, keys.sandbox.secret, { 'x-service-env': 'sandbox' }));
  });

  it('a non-sandbox key needs no environment header and may send one', async () => {
    expectOk(await t.get(routes.list, keys.agent.secret));
    expectOk(await t.get(routes.list, keys.agent.secret, { 'x-service-env': 'production' }));
  });
});

describe('scopes', () => {
  it.each(allRoutes)('%s: a legacy metrics:read key is served', async (_name, url) => {
    expectOk(await t.get(url, keys.legacy.secret));
  });

  it.each(allRoutes)('%s: an Agent Contract key is served', async (_name, url) => {
    expectOk(await t.get(url, keys.agent.secret));
  });

  it.each(allRoutes)('%s: a key with only an unrelated scope gets 403', async (_name, url) => {
    expectError(await t.get(url, keys.unrelated.secret), 403, insufficientScope);
  });

  it.each(allRoutes)('%s: a key without scopes gets 403', async (_name, url) => {
    expectError(await t.get(url, keys.none.secret), 403, insufficientScope);
  });
});

describe('order of checks', () => {
  it('authentication comes before the UUID check', async () => {
    expectError(await t.get('/api/v1/metrics/not-a-uuid'), 401, missingHeader);
    expectError(await t.get('/api/v1/metrics/not-a-uuid/contract'), 401, missingHeader);
    expectError(await t.get('/api/v1/metrics/not-a-uuid', newKeySecret()), 401, invalidKey);
    expectError(await t.get('/api/v1/metrics/not-a-uuid', keys.revoked.secret), 401, revoked);
    expectError(await t.get('/api/v1/metrics/not-a-uuid', keys.unrelated.secret), 403, insufficientScope);
    expectError(await t.get('/api/v1/metrics/not-a-uuid/contract', keys.sandbox.secret), 403, sandboxRequired);
  });

  it('authentication comes before the metric lookup (no 404 leaks)', async () => {
    const unknown = randomUUID();
    expectError(await t.get(`/api/v1/metrics/${unknown}`), 401, missingHeader);
    expectError(await t.get(`/api/v1/metrics/${unknown}/contract`), 401, missingHeader);
    expectError(await t.get(`/api/v1/metrics/${unknown}`, keys.revoked.secret), 401, revoked);
    expectError(await t.get(`/api/v1/metrics/${unknown}/contract`, keys.none.secret), 403, insufficientScope);
  });

  it('with a valid key, the UUID check and the lookup answer', async () => {
    expectError(await t.get('/api/v1/metrics/not-a-uuid', keys.agent.secret), 400, {
      error: 'Invalid metric ID format',
    });
    expectError(await t.get(`/api/v1/metrics/${randomUUID()}`, keys.agent.secret), 404, { error: 'Metric not found' });
  });

  it.each(allRoutes)('%s: revoked comes before the sandbox header', async (_name, url) => {
    expectError(await t.get(url, keys.revokedSandbox.secret), 401, revoked);
  });

  it.each(allRoutes)('%s: the sandbox header comes before the scope', async (_name, url) => {
    expectError(await t.get(url, keys.sandboxUnrelatedScope.secret), 403, sandboxRequired);
    expectError(
      await t.get(url, keys.sandboxUnrelatedScope.secret, { 'x-service-env': 'sandbox' }),
      403,
      insufficientScope,
    );
  });
});

describe('unknown routes', () => {
  it('GET /api/v1/nope is 404 Not found', async () => {
    expectError(await t.get('/api/v1/nope'), 404, { error: 'Not found' });
    expectError(await t.get('/api/v1/nope', keys.agent.secret), 404, { error: 'Not found' });
  });

  it('the JSON content type is exact', async () => {
    const res = await t.get('/api/v1/nope');
    expect(res.headers['content-type']).toBe(JSON_CONTENT_TYPE);
  });
});

describe('429: per-key rate limit (contract 7 and 8)', () => {
  it('the request past the key’s own limit is 429 with Retry-After', async () => {
    expectOk(await t.get(routes.list, keys.limited.secret));
    expectOk(await t.get(routes.list, keys.limited.secret));
    const res = await t.get(routes.list, keys.limited.secret);
    expectError(res, 429, { error: 'Rate limit exceeded' });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  });
});
