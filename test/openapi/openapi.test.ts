/**
 * The OpenAPI document (GET /api/v1/openapi.json): valid OpenAPI 3.1, the
 * expected routes, examples that match their schemas, and every real
 * response of every route, success and documented error, valid against the
 * document's schema and headers for that route and status.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/openapi/document.js';
import { newKeySecret, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createConformance } from './conformance.js';

const document = openApiDocument();
const { expectConforms, expectValid, deref } = createConformance(document);

const r = registry();
const acme = r.org({ fiscal_calendar_start_month: 4 });
const key = acme.key();
const legacyKey = acme.key({ scopes: ['metrics:read'] });
const revokedKey = acme.key({ revoked_at: '2026-02-01T00:00:00Z' });
const sandboxKey = acme.key({ sandbox: true });
const wrongScopeKey = acme.key({ scopes: ['reports:write'] });
const limitedKey = acme.key({ rate_limit_per_minute: 1 });
const admin = acme.user({ role: 'admin', session_token: true });
const member = acme.user({ role: 'member', session_token: true });
const domain = acme.domain('Finance');

const base = acme.metric({ name: 'Gross Revenue', key: 'gross_revenue', lifecycle_status: 'DEPRECATED' });
const revenue = acme.metric({
  name: 'Net Revenue',
  key: 'net_revenue',
  description: 'Gross revenue minus refunds.',
  domain_id: domain,
  tags: ['finance', 'revenue'],
  scope: 'enterprise_canonical',
});
acme.relate(revenue, 'supersedes', base);
const version = acme.version(revenue, { definition_version: '1.0.0', change_summary: 'First release.' });
acme.approval(revenue, { version_id: version.id, comment: 'Reconciles with the ledger.' });
acme.validation(revenue);
acme.challenge(revenue);
const objection = acme.thread(revenue, { intent: 'objection', title: 'Refund timing' });
acme.message(objection, { body: 'Refunds should be netted in the month issued.', pinned_at: '2026-03-01T00:00:00Z' });
const quiet = acme.metric({ name: 'Quiet Metric', lifecycle_status: 'DRAFT' });
acme.relate(revenue, 'related_to', quiet);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
});
afterAll(() => t.close());

const bearer = (secret: string, headers: Record<string, string> = {}) => ({
  authorization: `Bearer ${secret}`,
  ...headers,
});

async function call(method: 'GET' | 'POST' | 'DELETE', template: string, options: InjectOptions = {}) {
  const res = await t.inject({ method, url: template, ...options });
  return res;
}

/** `url` is the request; `template` the document's path. */
async function expectRoute(method: 'GET' | 'POST' | 'DELETE', template: string, url: string, options: InjectOptions) {
  const res = await call(method, url, options);
  expectConforms(method, template, { statusCode: res.statusCode, headers: res.headers, body: res.body });
  return res;
}

describe('the document', () => {
  it('is valid OpenAPI 3.1', async () => {
    const result = await new Validator().validate(structuredClone(document) as Record<string, unknown>);
    expect(result.errors, JSON.stringify(result.errors, null, 1)).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(document.openapi).toBe('3.1.0');
  });

  it('names its license, Apache-2.0, as the repository does', () => {
    expect(document.info).toMatchObject({ license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } });
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { license: string };
    expect(pkg.license).toBe('Apache-2.0');
    expect(readFileSync(new URL('../../LICENSE', import.meta.url), 'utf8')).toMatch(
      /^\s*Apache License\s+Version 2\.0, January 2004/,
    );
  });

  it('lists exactly the REST routes and methods', () => {
    const routes = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(routes.sort()).toEqual(
      [
        'DELETE /api/api-keys/{key_id}',
        'GET /api/api-keys',
        'GET /api/v1/metrics',
        'GET /api/v1/metrics/{id}',
        'GET /api/v1/metrics/{id}/contract',
        'GET /healthz',
        'GET /readyz',
        'POST /api/api-keys',
      ].sort(),
    );
    const list = document.paths['/api/v1/metrics']?.get as { parameters: Record<string, unknown>[] };
    const names = list.parameters.map((parameter) => deref(parameter).name);
    expect(names).toEqual([
      'q',
      'page',
      'pageSize',
      'lifecycle_status',
      'status',
      'policy_tier',
      'scope',
      'type',
      'X-Service-Env',
      'If-None-Match',
    ]);
  });

  it('has examples that match their schemas', () => {
    let count = 0;
    const visit = (node: unknown, label: string) => {
      if (node === null || typeof node !== 'object') return;
      const media = node as { schema?: Record<string, unknown>; examples?: Record<string, { value: unknown }> };
      if (media.schema && media.examples) {
        for (const [name, example] of Object.entries(media.examples)) {
          expectValid(media.schema, example.value, `${label} ${name}`);
          count++;
        }
      }
      for (const [key, value] of Object.entries(node)) visit(value, `${label}/${key}`);
    };
    visit(document, '#');
    expect(count).toBeGreaterThan(20);
  });

  it('is served without credentials at GET /api/v1/openapi.json', async () => {
    const res = await t.get('/api/v1/openapi.json');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json()).toEqual(JSON.parse(JSON.stringify(document)));
  });
});

describe('read routes conform', () => {
  const LIST = '/api/v1/metrics';
  const DETAIL = '/api/v1/metrics/{id}';
  const CONTRACT = '/api/v1/metrics/{id}/contract';

  it('list, search and filters (200)', async () => {
    for (const url of [
      LIST,
      `${LIST}?q=revnue`,
      `${LIST}?status=approved&scope=enterprise_canonical&policy_tier=tier_2&type=base&pageSize=1&page=2`,
      `${LIST}?lifecycle_status=DRAFT`,
      `${LIST}?page=99`,
    ]) {
      const res = await expectRoute('GET', LIST, url, { headers: bearer(key.secret) });
      expect(res.statusCode, url).toBe(200);
    }
    const res = await expectRoute('GET', LIST, `${LIST}?q=net`, { headers: bearer(legacyKey.secret) });
    expect(res.json().data[0].id).toBe(revenue.id);
  });

  it('list: 400 for a parameter past its bound', async () => {
    for (const url of [
      `${LIST}?q=${'r'.repeat(257)}`,
      `${LIST}?q=${'a+'.repeat(17)}`,
      `${LIST}?scope=${'s'.repeat(65)}`,
    ]) {
      const res = await expectRoute('GET', LIST, url, { headers: bearer(key.secret) });
      expect(res.statusCode, url).toBe(400);
    }
  });

  it('detail (200) of a metric with relationships, approvals, versions and a domain', async () => {
    for (const metric of [revenue, base, quiet]) {
      const res = await expectRoute('GET', DETAIL, `/api/v1/metrics/${metric.id}`, { headers: bearer(key.secret) });
      expect(res.statusCode).toBe(200);
    }
    const res = await call('GET', `/api/v1/metrics/${revenue.id}`, { headers: bearer(key.secret) });
    expect(res.json().data.approvals).toHaveLength(1);
    expect(res.json().data.requires_disambiguation).not.toBeNull();
  });

  it('contract (200) without and with summary=true, including a degraded summary', async () => {
    for (const metric of [revenue, base, quiet]) {
      const res = await expectRoute('GET', CONTRACT, `/api/v1/metrics/${metric.id}/contract`, {
        headers: bearer(key.secret),
      });
      expect(res.json().data).not.toHaveProperty('discussion_summary');
    }
    const summarized = await expectRoute('GET', CONTRACT, `/api/v1/metrics/${revenue.id}/contract?summary=true`, {
      headers: bearer(key.secret),
    });
    expect(typeof summarized.json().data.discussion_summary).toBe('string');
    expect(summarized.headers['x-discussion-summary-charged']).toBe('1');
    const cached = await expectRoute('GET', CONTRACT, `/api/v1/metrics/${revenue.id}/contract?summary=true`, {
      headers: bearer(key.secret),
    });
    expect(cached.json().data.discussion_summary_meta).toEqual({ cache_hit: true, charged: false });
    const degraded = await expectRoute('GET', CONTRACT, `/api/v1/metrics/${quiet.id}/contract?summary=true`, {
      headers: bearer(key.secret),
    });
    expect(degraded.json().data.discussion_summary).toBeNull();
    expect(degraded.headers['x-discussion-summary']).toBe('no_discussion');
  });

  it.each([DETAIL, CONTRACT])('%s: 400, 401, 403, 404', async (template) => {
    const url = (id: string) => template.replace('{id}', id);
    const cases: [number, string, Record<string, string>][] = [
      [400, url('not-a-uuid'), bearer(key.secret)],
      [401, url(revenue.id), {}],
      [401, url(revenue.id), { authorization: `Basic ${key.secret}` }],
      [401, url(revenue.id), bearer('cl_short')],
      [401, url(revenue.id), bearer(newKeySecret())],
      [401, url(revenue.id), bearer(revokedKey.secret)],
      [403, url(revenue.id), bearer(wrongScopeKey.secret)],
      [403, url(revenue.id), bearer(sandboxKey.secret)],
      [404, url(randomUUID()), bearer(key.secret)],
    ];
    for (const [status, requestUrl, headers] of cases) {
      const res = await expectRoute('GET', template, requestUrl, { headers });
      expect(res.statusCode, `${requestUrl} ${JSON.stringify(headers)}`).toBe(status);
    }
    const sandboxed = await expectRoute('GET', template, url(revenue.id), {
      headers: bearer(sandboxKey.secret, { 'x-service-env': 'sandbox' }),
    });
    expect(sandboxed.statusCode).toBe(200);
  });

  it('304 Not Modified of list, search, detail and contract (with and without summary)', async () => {
    for (const [template, url] of [
      [LIST, LIST],
      [LIST, `${LIST}?q=revnue&pageSize=1`],
      [DETAIL, `/api/v1/metrics/${revenue.id}`],
      [CONTRACT, `/api/v1/metrics/${revenue.id}/contract`],
      [CONTRACT, `/api/v1/metrics/${revenue.id}/contract?summary=true`],
      [CONTRACT, `/api/v1/metrics/${quiet.id}/contract?summary=true`],
    ] as const) {
      // The first answer of a summary may be generated; the cached one is what a 304 confirms.
      await call('GET', url, { headers: bearer(key.secret) });
      const first = await expectRoute('GET', template, url, { headers: bearer(key.secret) });
      expect(first.statusCode).toBe(200);
      const tag = String(first.headers.etag);
      const res = await expectRoute('GET', template, url, { headers: bearer(key.secret, { 'if-none-match': tag }) });
      expect(res.statusCode, url).toBe(304);
      expect(res.headers.etag).toBe(tag);
    }
  });

  it('list: 401, 403 and 429 with Retry-After', async () => {
    for (const [status, headers] of [
      [401, {}],
      [403, bearer(wrongScopeKey.secret)],
      [200, bearer(limitedKey.secret)],
      [429, bearer(limitedKey.secret)],
    ] as const) {
      const res = await expectRoute('GET', LIST, LIST, { headers });
      expect(res.statusCode).toBe(status);
      if (status === 429) expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
  });
});

describe('key administration conforms', () => {
  const KEYS = '/api/api-keys';
  const session = (user: { session_token?: string }) => ({ cookie: `session=${user.session_token}` });
  const jsonBody = (body: unknown) => ({
    headers: { ...session(admin), 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });

  it('create (201), list (200), revoke (200, again 200)', async () => {
    const created = await expectRoute('POST', KEYS, KEYS, jsonBody({ name: 'BI connector', rate_limit_per_minute: 5 }));
    expect(created.statusCode).toBe(201);
    const sandboxed = await expectRoute('POST', KEYS, KEYS, jsonBody({ name: 'Sandbox', sandbox: true }));
    expect(sandboxed.statusCode).toBe(201);
    const id = created.json().data.id;
    // The new key is used once so that the list shows last_used_at too.
    expect((await t.get('/api/v1/metrics', created.json().data.key)).statusCode).toBe(200);

    const listed = await expectRoute('GET', KEYS, KEYS, { headers: session(admin) });
    expect(listed.statusCode).toBe(200);
    for (let attempt = 0; attempt < 2; attempt++) {
      const revoked = await expectRoute('DELETE', `${KEYS}/{key_id}`, `${KEYS}/${id}`, { headers: session(admin) });
      expect(revoked.statusCode).toBe(200);
    }
    const afterRevocation = await expectRoute('GET', KEYS, KEYS, { headers: session(admin) });
    expect(afterRevocation.json().data.find((k: { id: string }) => k.id === id).revoked_at).not.toBeNull();
  });

  it('errors: 400, 401, 403, 404, 415', async () => {
    const cases: [number, 'GET' | 'POST' | 'DELETE', string, string, InjectOptions][] = [
      [400, 'POST', KEYS, KEYS, jsonBody({ name: '' })],
      [400, 'POST', KEYS, KEYS, jsonBody({ name: 'x', scopes: ['metrics:read'] })],
      [400, 'POST', KEYS, KEYS, { headers: { ...session(admin), 'content-type': 'application/json' }, payload: '{' }],
      [401, 'GET', KEYS, KEYS, {}],
      [401, 'POST', KEYS, KEYS, { headers: { cookie: 'session=unknown' } }],
      [403, 'GET', KEYS, KEYS, { headers: session(member) }],
      [
        403,
        'DELETE',
        `${KEYS}/{key_id}`,
        `${KEYS}/${key.id}`,
        { headers: { ...session(admin), origin: 'https://evil.example' } },
      ],
      [404, 'DELETE', `${KEYS}/{key_id}`, `${KEYS}/${randomUUID()}`, { headers: session(admin) }],
      [415, 'POST', KEYS, KEYS, { headers: { ...session(admin), 'content-type': 'text/plain' }, payload: 'name=x' }],
    ];
    for (const [status, method, template, url, options] of cases) {
      const res = await expectRoute(method, template, url, options);
      expect(res.statusCode, `${method} ${url} ${res.body}`).toBe(status);
    }
  });
});

describe('operations routes conform', () => {
  it('GET /healthz and GET /readyz (200)', async () => {
    expect((await expectRoute('GET', '/healthz', '/healthz', {})).statusCode).toBe(200);
    expect((await expectRoute('GET', '/readyz', '/readyz', {})).statusCode).toBe(200);
  });
});

describe('a failed metric read conforms (500)', () => {
  it('detail and contract answer 500 Failed to fetch metric', async () => {
    const r2 = registry();
    const org = r2.org();
    const orgKey = org.key();
    const metric = org.metric();
    const broken = await startTestApp({ fixture: r2.build() });
    try {
      // The key lookup still works; the metric read fails.
      await broken.database.prisma.$executeRawUnsafe('ALTER TABLE metric RENAME TO metric_gone');
      for (const template of ['/api/v1/metrics/{id}', '/api/v1/metrics/{id}/contract']) {
        const res = await broken.get(template.replace('{id}', metric.id), orgKey.secret);
        expect(res.statusCode).toBe(500);
        expectConforms('GET', template, { statusCode: res.statusCode, headers: res.headers, body: res.body });
      }
    } finally {
      await broken.close();
    }
  });
});
