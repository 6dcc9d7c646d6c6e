/**
 * Cross-origin reads through a signed-in browser (issue: yoga's default CORS
 * echoed any origin with credentials). A session cookie on /graphql counts
 * only from this origin; no response carries Access-Control-Allow-Credentials;
 * CORS is off by default and, with CORS_ORIGINS, granted to the listed
 * origins only, never with credentials.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const r = registry();
const acme = r.org();
const user = acme.user({ role: 'member', session_token: true });
const key = acme.key();
acme.metric({ name: 'Revenue' });
const fixture = r.build();

const HOST = 'metrics.test.example';
// The service under test is served over http (in process); behind a proxy that says https, below.
const SAME = `http://${HOST}`;
const EVIL = 'https://evil.example';
const ALLOWED = 'https://bi.partner.example';
const QUERY = '{metrics(pageSize:1){items{name}}}';
const cookie = `session=${user.session_token}`;

function expectNoCredentialedCors(res: LightMyRequestResponse) {
  expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  expect(res.headers['access-control-allow-origin']).toBeUndefined();
}

function expectNoData(res: LightMyRequestResponse) {
  expect(res.statusCode).toBe(403);
  expect(res.json()).toEqual({ error: 'Forbidden' });
  expect(res.body).not.toContain('Revenue');
}

describe('CORS off (default)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture });
  });
  afterAll(() => t.close());

  const getGraphql = (headers: Record<string, string>) =>
    t.inject({
      method: 'GET',
      url: `/graphql?query=${encodeURIComponent(QUERY)}`,
      headers: { host: HOST, ...headers },
    });
  const postGraphql = (headers: Record<string, string>, contentType = 'application/json') =>
    t.inject({
      method: 'POST',
      url: '/graphql',
      headers: { host: HOST, 'content-type': contentType, ...headers },
      payload: JSON.stringify({ query: QUERY }),
    });

  it('a cross-origin cookie GET gets no data and no CORS headers (the finding)', async () => {
    const res = await getGraphql({ cookie, origin: EVIL, accept: 'application/json' });
    expectNoData(res);
    expectNoCredentialedCors(res);
  });

  it('a cookie GET a browser marks cross-site or same-site, without Origin, gets no data', async () => {
    for (const site of ['cross-site', 'same-site']) {
      const res = await getGraphql({ cookie, 'sec-fetch-site': site, accept: 'application/json' });
      expectNoData(res);
      expectNoCredentialedCors(res);
    }
  });

  it('a cross-origin cookie POST gets no data, JSON or text/plain', async () => {
    for (const type of ['application/json', 'text/plain']) {
      const res = await postGraphql({ cookie, origin: EVIL, 'sec-fetch-site': 'cross-site' }, type);
      expectNoData(res);
      expectNoCredentialedCors(res);
    }
  });

  it('a cross-origin preflight is granted nothing', async () => {
    const res = await t.inject({
      method: 'OPTIONS',
      url: '/graphql',
      headers: {
        host: HOST,
        origin: EVIL,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expectNoCredentialedCors(res);
    expect(res.headers['access-control-allow-methods']).toBeUndefined();
  });

  it('a same-origin cookie request still works, GET and POST', async () => {
    const get = await getGraphql({ cookie, origin: SAME, 'sec-fetch-site': 'same-origin', accept: 'application/json' });
    expect(get.statusCode).toBe(200);
    expect(get.json().data.metrics.items).toEqual([{ name: 'Revenue' }]);
    expectNoCredentialedCors(get);
    const post = await postGraphql({ cookie, origin: SAME, 'sec-fetch-site': 'same-origin' });
    expect(post.json().data.metrics.items).toEqual([{ name: 'Revenue' }]);
    expectNoCredentialedCors(post);
    // A client that is no browser sends neither header.
    const plain = await postGraphql({ cookie });
    expect(plain.json().data.metrics.items).toEqual([{ name: 'Revenue' }]);
  });

  it('the same host under another scheme is another origin: https://host for an http service gets no data', async () => {
    for (const origin of [`https://${HOST}`, `ws://${HOST}`, `http://${HOST}:8080`, 'null']) {
      expectNoData(await getGraphql({ cookie, origin, accept: 'application/json' }));
      expectNoData(await postGraphql({ cookie, origin }));
    }
  });

  it('a bearer key is no ambient credential: served whatever the Origin, without CORS headers', async () => {
    const res = await postGraphql({ authorization: `Bearer ${key.secret}`, origin: EVIL });
    expect(res.json().data.metrics.items).toEqual([{ name: 'Revenue' }]);
    expectNoCredentialedCors(res);
    const rest = await t.get('/api/v1/metrics', key.secret, { origin: EVIL });
    expect(rest.statusCode).toBe(200);
    expectNoCredentialedCors(rest);
  });
});

describe('CORS_ORIGINS allowlist', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture, corsOrigins: [ALLOWED] });
  });
  afterAll(() => t.close());

  const preflight = (url: string, origin: string) =>
    t.inject({
      method: 'OPTIONS',
      url,
      headers: {
        host: HOST,
        origin,
        'access-control-request-method': url === '/graphql' ? 'POST' : 'GET',
        'access-control-request-headers': 'authorization, content-type',
      },
    });

  it.each(['/graphql', '/api/v1/metrics', '/api/v1/metrics/00000000-0000-4000-8000-000000000000/contract'])(
    'preflight %s: granted to a listed origin, never with credentials',
    async (url) => {
      const res = await preflight(url, ALLOWED);
      expect(res.statusCode).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expect(String(res.headers['access-control-allow-headers']).split(', ')).toEqual([
        'Authorization',
        'Content-Type',
        'X-Service-Env',
        'X-Request-Id',
        'If-None-Match',
      ]);
      expect(res.headers['access-control-allow-methods']).toBe('GET, POST');
      expect(res.headers.vary).toContain('Origin');

      const unlisted = await preflight(url, EVIL);
      expectNoCredentialedCors(unlisted);
      expect(unlisted.headers['access-control-allow-methods']).toBeUndefined();
    },
  );

  it('responses to a listed origin carry its name and the exposed headers; an unlisted one gets none', async () => {
    const res = await t.get('/api/v1/metrics', key.secret, { origin: ALLOWED });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    const exposed = String(res.headers['access-control-expose-headers']).split(', ');
    for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After', 'X-Request-Id']) {
      expect(exposed).toContain(name);
    }
    // A page may poll with If-None-Match: it reads the ETag, and caches keep responses apart by origin.
    expect(exposed).toContain('ETag');
    expect(res.headers.etag).toBeDefined();
    expect(String(res.headers.vary).split(', ')).toEqual(['Origin', 'Authorization', 'X-Service-Env']);
    // Errors too, so that the page can read them.
    const unauthorized = await t.get('/api/v1/metrics', null, { origin: ALLOWED });
    expect(unauthorized.statusCode).toBe(401);
    expect(unauthorized.headers['access-control-allow-origin']).toBe(ALLOWED);

    const graphql = await t.inject({
      method: 'POST',
      url: '/graphql',
      headers: {
        host: HOST,
        origin: ALLOWED,
        authorization: `Bearer ${key.secret}`,
        'content-type': 'application/json',
      },
      payload: { query: QUERY },
    });
    expect(graphql.json().data.metrics.items).toEqual([{ name: 'Revenue' }]);
    expect(graphql.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(graphql.headers['access-control-allow-credentials']).toBeUndefined();

    expectNoCredentialedCors(await t.get('/api/v1/metrics', key.secret, { origin: EVIL }));
  });

  it('a listed origin still cannot use the session cookie', async () => {
    const res = await t.inject({
      method: 'GET',
      url: `/graphql?query=${encodeURIComponent(QUERY)}`,
      headers: { host: HOST, cookie, origin: ALLOWED, accept: 'application/json' },
    });
    expect(res.statusCode).toBe(403);
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('key administration is never opened to other origins', async () => {
    const res = await t.inject({
      method: 'OPTIONS',
      url: '/api/api-keys',
      headers: { host: HOST, origin: ALLOWED, 'access-control-request-method': 'POST' },
    });
    expectNoCredentialedCors(res);
  });
});

describe('behind a trusted proxy that says https', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ fixture, trustProxy: true });
  });
  afterAll(() => t.close());

  const post = (origin: string) =>
    t.inject({
      method: 'POST',
      url: '/graphql',
      headers: { host: HOST, 'x-forwarded-proto': 'https', 'content-type': 'application/json', cookie, origin },
      payload: JSON.stringify({ query: QUERY }),
    });

  it('the https origin is this one; the http origin of the same host is not', async () => {
    const same = await post(`https://${HOST}`);
    expect(same.statusCode).toBe(200);
    expect(same.json().data.metrics.items).toEqual([{ name: 'Revenue' }]);
    expectNoData(await post(`http://${HOST}`));
  });
});
