/**
 * Hostile input never yields a 500 or a stack trace: arbitrary query
 * strings, path ids, header values and GraphQL documents against every route
 * give documented statuses and JSON bodies only.
 */
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ slug: 'hostile', plan: 'developer' });
const key = org.key({ rate_limit_per_minute: 1_000_000 });
const owner = org.user({ role: 'owner', session_token: true });
const metric = org.metric({ name: 'Revenue' });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build() });
});
afterAll(() => t.close());

const DOCUMENTED = new Set([200, 201, 400, 401, 403, 404, 405, 406, 413, 415, 429]);

function expectDocumented(res: LightMyRequestResponse) {
  expect(DOCUMENTED, `status ${res.statusCode}: ${res.body.slice(0, 300)}`).toContain(res.statusCode);
  if (res.statusCode !== 200 || !String(res.headers['content-type']).includes('text/html')) {
    expect(String(res.headers['content-type'])).toMatch(/json/);
    expect(() => JSON.parse(res.body)).not.toThrow();
  }
  expect(res.body).not.toMatch(/\n\s+at [\w.<]+ \(/);
}

const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ maxLength: 5000 }));
const queryPart = fc.tuple(
  fc.constantFrom(
    'q',
    'page',
    'pageSize',
    'lifecycle_status',
    'status',
    'policy_tier',
    'scope',
    'type',
    'tier',
    'summary',
  ),
  text,
);
const authorization = fc.oneof(
  fc.constant(`Bearer ${key.secret}`),
  fc.constant(`Bearer ${key.secret}`),
  text.map((value) => `Bearer ${value}`),
  text,
);

const runs = { numRuns: 150 };

describe('hostile input', () => {
  it('query strings on the list route', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(queryPart, { maxLength: 12 }), authorization, async (parts, auth) => {
        const query = parts.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
        expectDocumented(await t.get(`/api/v1/metrics?${query}`, null, { authorization: auth }));
      }),
      runs,
    );
  });

  it('path ids on detail and contract', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(text, fc.uuid(), fc.constant(metric.id)),
        fc.constantFrom('', '/contract', '/contract?summary=true', '/contract?summary=true&summary=false'),
        async (id, suffix) => {
          expectDocumented(await t.get(`/api/v1/metrics/${encodeURIComponent(id)}${suffix}`, key.secret));
        },
      ),
      runs,
    );
  });

  it('header values', async () => {
    await fc.assert(
      fc.asyncProperty(authorization, text, text, async (auth, serviceEnv, requestId) => {
        const headers = { authorization: auth, 'x-service-env': serviceEnv, 'x-request-id': requestId };
        expectDocumented(await t.get(`/api/v1/metrics/${metric.id}/contract`, null, headers));
      }),
      runs,
    );
  });

  it('GraphQL documents: malformed, deep, wide and aliased', async () => {
    const deep = fc
      .integer({ min: 1, max: 40 })
      .map(
        (depth) =>
          `{ metric(id: "${metric.id}") ${'{ requiresDisambiguation { candidates '.repeat(depth)}{ key }${' } }'.repeat(depth)} }`,
      );
    const aliased = fc
      .integer({ min: 1, max: 200 })
      .map(
        (n) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: metrics(pageSize: 100) { items { id } }`).join(' ')} }`,
      );
    const wide = fc
      .integer({ min: 1, max: 60 })
      .map((n) => `{ metrics { items { ${'id name key description tags '.repeat(n)} } } }`);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(text, deep, aliased, wide),
        fc.oneof(fc.constant(undefined), fc.jsonValue()),
        async (query, variables) => {
          const res = await t.inject({
            method: 'POST',
            url: '/graphql',
            headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
            payload: JSON.stringify({ query, variables }),
          });
          expectDocumented(res);
        },
      ),
      { numRuns: 100 },
    );
  });

  it('bodies of the key administration routes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          text,
          fc.jsonValue().map((value) => JSON.stringify(value)),
        ),
        async (payload) => {
          const res = await t.inject({
            method: 'POST',
            url: '/api/api-keys',
            headers: { cookie: `session=${owner.session_token}`, 'content-type': 'application/json' },
            payload,
          });
          expectDocumented(res);
        },
      ),
      runs,
    );
  });
});

describe('request size limits (over a real socket)', () => {
  it('rejects an oversized body with 413 JSON and oversized headers with 431', async () => {
    const server = await startTestApp({ fixture: registry().build() });
    try {
      const address = await server.app.listen({ port: 0, host: '127.0.0.1' });
      const big = await fetch(`${address}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key.secret}` },
        body: JSON.stringify({ query: `{ metrics { pagination { total } } }`, padding: 'x'.repeat(2 * 1024 * 1024) }),
      });
      expect(big.status).toBe(413);
      expect(await big.json()).toHaveProperty('error');
      const hugeHeader = await fetch(`${address}/healthz`, { headers: { 'x-padding': 'y'.repeat(64 * 1024) } });
      expect(hugeHeader.status).toBe(431);
    } finally {
      await server.close();
    }
  });
});

describe('slow clients', () => {
  it('cannot hold a connection past the request timeout', async () => {
    const { connect } = await import('node:net');
    const server = await startTestApp({ fixture: registry().build(), requestTimeoutMs: 400 });
    try {
      const address = new URL(await server.app.listen({ port: 0, host: '127.0.0.1' }));
      const socket = connect(Number(address.port), '127.0.0.1');
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString();
      });
      const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now())));
      const started = performance.now();
      // Half a request line, then nothing: a slowloris client.
      socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      const at = await closed;
      expect(received).toMatch(/^HTTP\/1\.1 408/);
      expect(at - started).toBeLessThan(5_000);
    } finally {
      await server.close();
    }
  });
});
