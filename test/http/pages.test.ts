/**
 * The pages a person opens without credentials (GET /, /docs and its script,
 * the OpenAPI document, GraphiQL and its files): static assets with a strong
 * ETag and 304, long caching for versioned files, brotli/gzip when accepted,
 * the pages' security headers, and the per-client throttle.
 */
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRAPHIQL_EXAMPLE_QUERY } from '../../src/graphiql-page.js';
import { contentSecurityPolicy } from '../../src/http/page-headers.js';
import { chooseEncoding, ifNoneMatchHits } from '../../src/http/static-assets.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const r = registry();
const acme = r.org();
const key = acme.key();
acme.metric({ name: 'Net Revenue' });

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "font-src 'self' data:; connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; " +
  "form-action 'self'; frame-ancestors 'none'";
const STRONG_ETAG = /^"[A-Za-z0-9_-]{43}(-br|-gzip)?"$/;
const html = { accept: 'text/html' };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
});
afterAll(() => t?.close());

/** The address of the first `<script src>` of a page. */
const scriptOf = (page: string) => /<script src="([^"]+)"/.exec(page)?.[1] ?? '';

describe('GET /', () => {
  it('sends a browser that is not signed in to /docs (a signed-in one: test/pages/sign-in.test.ts)', async () => {
    for (const headers of [html, { ...html, cookie: 'session=not-a-session' }]) {
      const res = await t.get('/', null, headers);
      expect(res.statusCode).toBe(302);
      expect(res.headers.location).toBe('/docs');
      expect(res.headers.vary).toBe('Accept, Cookie');
    }
  });

  it('answers any other client with the service links', async () => {
    const res = await t.get('/', null, { accept: 'application/json' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      name: 'Metric Governance API',
      links: {
        api: '/api/v1/metrics',
        openapi: '/api/v1/openapi.json',
        docs: '/docs',
        graphql: '/graphql',
        mcp: '/mcp',
        healthz: '/healthz',
        readyz: '/readyz',
      },
    });
  });
});

describe('/docs', () => {
  it('is a small HTML page with a strong ETag, revalidated, and the page security headers', async () => {
    const res = await t.get('/docs', null, html);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers.etag).toMatch(STRONG_ETAG);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toBe(CSP);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.body.length).toBeLessThan(4096);
    expect(res.body).toContain('<title>Metric Governance API reference</title>');
    // Scalar's options that keep the page inside the service.
    expect(res.body).toContain('&quot;agent&quot;:{&quot;disabled&quot;:true}');
    expect(res.body).toContain('&quot;showDeveloperTools&quot;:&quot;never&quot;');
    // No inline script: the only executable script is a file of the service.
    expect(res.body.match(/<script/g)).toHaveLength(2);
    expect(res.body).toContain('<script id="api-reference" type="application/json"');
    expect(scriptOf(res.body)).toMatch(/^\/docs\/js\/scalar\.[0-9a-f]{16}\.js$/);
  });

  it('answers 304 without a body when If-None-Match names its tag (in a list, weak or not, or *)', async () => {
    const { etag } = (await t.get('/docs', null, html)).headers;
    for (const ifNoneMatch of [String(etag), `"other", W/${etag}`, '*']) {
      const res = await t.get('/docs', null, { ...html, 'if-none-match': ifNoneMatch });
      expect(res.statusCode).toBe(304);
      expect(res.body).toBe('');
      expect(res.headers.etag).toBe(etag);
      expect(res.headers['content-security-policy']).toBe(CSP);
    }
    expect((await t.get('/docs', null, { ...html, 'if-none-match': '"other"' })).statusCode).toBe(200);
  });

  it('/docs/ is sent to /docs', async () => {
    const res = await t.get('/docs/', null, html);
    expect(res.statusCode).toBe(301);
    expect(res.headers.location).toBe('/docs');
  });

  it("serves Scalar's script under its versioned name for a year, and at its old name revalidated", async () => {
    const path = scriptOf((await t.get('/docs', null, html)).body);
    const versioned = await t.get(path);
    expect(versioned.statusCode).toBe(200);
    expect(versioned.headers['content-type']).toBe('application/javascript; charset=utf-8');
    expect(versioned.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(versioned.headers.etag).toMatch(STRONG_ETAG);
    expect(versioned.headers['x-content-type-options']).toBe('nosniff');
    expect(versioned.rawPayload.length).toBeGreaterThan(1_000_000);
    const old = await t.get('/docs/js/scalar.js');
    expect(old.statusCode).toBe(200);
    expect(old.headers['cache-control']).toBe('no-cache');
    expect(old.headers.etag).toBe(versioned.headers.etag);
    expect(old.rawPayload.equals(versioned.rawPayload)).toBe(true);
  });

  it('compresses with brotli or gzip as Accept-Encoding allows, the same bytes once decoded', async () => {
    const path = scriptOf((await t.get('/docs', null, html)).body);
    const plain = await t.get(path);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('Accept-Encoding');

    const br = await t.get(path, null, { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    // A strong validator per content-coding (RFC 9110 8.8.3); a tag of either answers 304.
    expect(br.headers.etag).toBe(`${String(plain.headers.etag).slice(0, -1)}-br"`);
    const revalidated = await t.get(path, null, {
      'accept-encoding': 'gzip, deflate, br',
      'if-none-match': String(plain.headers.etag),
    });
    expect(revalidated.statusCode).toBe(304);
    expect(br.rawPayload.length).toBeLessThan(plain.rawPayload.length / 4);
    expect(brotliDecompressSync(br.rawPayload).equals(plain.rawPayload)).toBe(true);

    const gz = await t.get(path, null, { 'accept-encoding': 'br;q=0, gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).equals(plain.rawPayload)).toBe(true);

    const identity = await t.get(path, null, { 'accept-encoding': 'identity' });
    expect(identity.headers['content-encoding']).toBeUndefined();
  });

  it('compresses once: serving the compressed script again costs little CPU', async () => {
    const path = scriptOf((await t.get('/docs', null, html)).body);
    await t.get(path, null, { 'accept-encoding': 'br' });
    const before = process.cpuUsage();
    for (let i = 0; i < 20; i++) {
      const res = await t.get(path, null, { 'accept-encoding': 'br' });
      expect(res.headers['content-encoding']).toBe('br');
    }
    const { user, system } = process.cpuUsage(before);
    // Compressing 5 MB with brotli costs well over a second each time; sending kept bytes, milliseconds.
    expect((user + system) / 1000).toBeLessThan(1500);
  });

  it('serves the OpenAPI document with a strong ETag and 304', async () => {
    const res = await t.get('/api/v1/openapi.json');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json().openapi).toBe('3.1.0');
    expect(res.headers.etag).toMatch(STRONG_ETAG);
    const again = await t.get('/api/v1/openapi.json', null, { 'if-none-match': String(res.headers.etag) });
    expect(again.statusCode).toBe(304);
  });
});

describe('GraphiQL', () => {
  it('is a small HTML page with the page security headers, its files versioned and kept a year', async () => {
    const res = await t.get('/graphql', null, html);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers.etag).toMatch(STRONG_ETAG);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toBe(CSP);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.body.length).toBeLessThan(4096);
    expect(res.body).toContain('<title>Metric Governance GraphQL</title>');
    const files = [...res.body.matchAll(/(?:src|href)="(\/graphiql\/[^"]+)"/g)].map((m) => m[1] ?? '');
    expect(files.map((f) => f.replace(/\.[0-9a-f]{16}\./, '.*.'))).toEqual([
      '/graphiql/favicon.*.ico',
      '/graphiql/graphiql.*.css',
      '/graphiql/graphiql.*.js',
    ]);
    for (const file of files) {
      const asset = await t.get(file, null, { 'accept-encoding': 'gzip' });
      expect(asset.statusCode).toBe(200);
      expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect((await t.get(file, null, { 'if-none-match': String(asset.headers.etag) })).statusCode).toBe(304);
    }
    const script = (await t.get(files[2] ?? '')).body;
    // GraphiQL opens on the example query with the Authorization header to fill in.
    const start = "renderYogaGraphiQL(document.getElementById('root'), ";
    const options = JSON.parse(script.slice(script.lastIndexOf(start) + start.length, script.lastIndexOf(');')));
    expect(options).toEqual({
      title: 'Metric Governance GraphQL',
      endpoint: '/graphql',
      defaultQuery: GRAPHIQL_EXAMPLE_QUERY,
      headers: '{"Authorization": "Bearer <your API key>"}',
      defaultEditorToolsVisibility: 'headers',
      shouldPersistHeaders: false,
    });
    // The editor workers are files of the service too.
    const workers = [...script.slice(0, 2000).matchAll(/"(\/graphiql\/[a-z]+\.worker\.[0-9a-f]{16}\.js)"/g)];
    expect(workers).toHaveLength(3);
    for (const [, worker] of workers) expect((await t.get(worker ?? '')).statusCode).toBe(200);
  });

  it('answers 304 for the page, and a query with a bearer key still runs', async () => {
    const { etag } = (await t.get('/graphql', null, html)).headers;
    expect((await t.get('/graphql', null, { ...html, 'if-none-match': String(etag) })).statusCode).toBe(304);
    const res = await t.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      payload: { query: '{ metrics { pagination { total } } }' },
    });
    expect(res.json()).toEqual({ data: { metrics: { pagination: { total: 1 } } } });
  });
});

describe('the per-client throttle counts the pages', () => {
  it('past the budget, any page is 429 with Retry-After, and so is the API for that client', async () => {
    const small = await startTestApp({ fixture: r.build(), throttle: { pointsPerMinute: 6, failureCost: 10 } });
    try {
      const urls = ['/', '/docs', '/docs/js/scalar.js', '/api/v1/openapi.json', '/graphql', '/docs'];
      for (const url of urls) expect((await small.get(url, null, html)).statusCode).not.toBe(429);
      for (const url of urls) {
        const res = await small.get(url, null, html);
        expect(res.statusCode).toBe(429);
        expect(res.json()).toEqual({ error: 'Rate limit exceeded' });
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      expect((await small.get('/api/v1/metrics', key.secret)).statusCode).toBe(429);
      // Another client address has its own budget.
      const other = await small.inject({ method: 'GET', url: '/docs', headers: html, remoteAddress: '10.1.2.3' });
      expect(other.statusCode).toBe(200);
    } finally {
      await small.close();
    }
  });
});

describe('header parsing', () => {
  it('If-None-Match: a list, weak tags, *, and a long header in linear time', () => {
    expect(ifNoneMatchHits('"a", W/"b"', '"b"')).toBe(true);
    expect(ifNoneMatchHits('"a",    "b"', '"b"')).toBe(true);
    expect(ifNoneMatchHits('"a"', '"b"')).toBe(false);
    expect(ifNoneMatchHits(undefined, '"b"')).toBe(false);
    expect(ifNoneMatchHits('*', '"b"')).toBe(true);
    const before = process.cpuUsage();
    expect(ifNoneMatchHits(`"a",${' '.repeat(16_000)}x`, '"b"')).toBe(false);
    expect(process.cpuUsage(before).user / 1000).toBeLessThan(50);
  });

  it('Accept-Encoding: brotli first, gzip next, q=0 refuses, * accepts', () => {
    expect(chooseEncoding('gzip, br')).toBe('br');
    expect(chooseEncoding('gzip')).toBe('gzip');
    expect(chooseEncoding('br;q=0, gzip;q=0.5')).toBe('gzip');
    expect(chooseEncoding('BR;Q=0, GZIP;Q=0')).toBe(null);
    expect(chooseEncoding('*')).toBe('br');
    expect(chooseEncoding('*;q=0')).toBe(null);
    expect(chooseEncoding('identity')).toBe(null);
    expect(chooseEncoding(undefined)).toBe(null);
  });

  it('the CSP is the one the pages send', () => {
    expect(contentSecurityPolicy()).toBe(CSP);
  });
});
