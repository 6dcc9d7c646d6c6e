/**
 * Every 401 carries `WWW-Authenticate` (RFC 9110 section 15.5.2): `Bearer`
 * when no credential came, `error="invalid_request"` for a malformed
 * Authorization header, `error="invalid_token"` for a key that is malformed,
 * unknown or revoked (RFC 6750 section 3.1). The bodies stay the contract's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKeySecret, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org();
const metric = org.metric({ name: 'Revenue' });
const revoked = org.key({ revoked_at: '2026-01-02T00:00:00Z' });
const key = org.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build() });
});
afterAll(() => t.close());

const CASES: { label: string; authorization?: string; body: string; challenge: string }[] = [
  { label: 'no credential', body: 'Missing Authorization header', challenge: 'Bearer' },
  {
    label: 'a malformed header',
    authorization: 'Basic abc',
    body: 'Invalid Authorization header format. Expected: Bearer <api_key>',
    challenge: 'Bearer error="invalid_request"',
  },
  {
    label: 'a malformed key',
    authorization: 'Bearer nope',
    body: 'Invalid API key format',
    challenge: 'Bearer error="invalid_token"',
  },
  {
    label: 'an unknown key',
    authorization: `Bearer ${newKeySecret()}`,
    body: 'Invalid API key',
    challenge: 'Bearer error="invalid_token"',
  },
  {
    label: 'a revoked key',
    authorization: `Bearer ${revoked.secret}`,
    body: 'API key has been revoked',
    challenge: 'Bearer error="invalid_token"',
  },
];

const ROUTES = [
  { method: 'GET' as const, url: '/api/v1/metrics' },
  { method: 'GET' as const, url: `/api/v1/metrics/${metric.id}` },
  { method: 'GET' as const, url: `/api/v1/metrics/${metric.id}/contract` },
  { method: 'POST' as const, url: '/graphql', payload: { query: '{ __typename }' } },
  {
    method: 'POST' as const,
    url: '/mcp',
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    headers: { accept: 'application/json, text/event-stream' },
  },
];

describe('WWW-Authenticate on 401', () => {
  it.each(CASES)('$label: every read route and transport answers its challenge and the same body', async (c) => {
    for (const route of ROUTES) {
      const res = await t.inject({
        method: route.method,
        url: route.url,
        headers: {
          ...(c.authorization ? { authorization: c.authorization } : {}),
          ...(route.payload ? { 'content-type': 'application/json' } : {}),
          ...route.headers,
        },
        payload: route.payload ? JSON.stringify(route.payload) : undefined,
      });
      expect(res.statusCode, `${route.url} ${res.body}`).toBe(401);
      expect(res.json(), route.url).toEqual({ error: c.body });
      expect(res.headers['www-authenticate'], route.url).toBe(c.challenge);
    }
  });

  it('key administration without a session: 401 Not signed in, with a challenge', async () => {
    const res = await t.inject({ method: 'GET', url: '/api/api-keys' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'Not signed in' });
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('no challenge on what is not a 401', async () => {
    const res = await t.get('/api/v1/metrics', key.secret);
    expect(res.statusCode).toBe(200);
    expect(res.headers['www-authenticate']).toBeUndefined();
  });
});
