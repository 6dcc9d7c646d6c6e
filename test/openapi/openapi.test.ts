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
import { syntheticDbtManifest } from '../../bench/dbt-manifest.js';
import { sweepOnce } from '../../src/changes/sweep.js';
import { openApiDocument } from '../../src/openapi/document.js';
import { registryDocumentExample, registryDocumentYaml } from '../../src/openapi/examples.js';
import { parseRegistryDocument } from '../../src/registry/document.js';
import { VALIDATIONS_BODY_LIMIT } from '../../src/registry/limits.js';
import { parseDocumentText } from '../../src/registry/text.js';
import { newKeySecret, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { insertInputs } from '../helpers/lineage.js';
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.js';
import { createConformance } from './conformance.js';

const document = openApiDocument();
const { expectConforms, expectValid, validates, expectRequestConforms, deref } = createConformance(document);

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

/** For the statuses whose bodies the document lists exhaustively: the body is one of the examples. */
function expectDocumentedBody(method: string, template: string, res: { statusCode: number; body: string }) {
  const operation = document.paths[template]?.[method.toLowerCase()] as { responses: Record<string, object> };
  const response = deref({ ...operation.responses[String(res.statusCode)] }) as {
    content: { 'application/json': { examples: Record<string, { value: unknown }> } };
  };
  const examples = Object.values(response.content['application/json'].examples).map((example) => example.value);
  expect(examples, `${method} ${template} ${res.statusCode} ${res.body}`).toContainEqual(JSON.parse(res.body));
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
        'GET /api/v1/changes',
        'GET /api/v1/metrics',
        'GET /api/v1/metrics/{id}',
        'GET /api/v1/metrics/{id}/contract',
        'GET /api/v1/metrics/{id}/lineage',
        'GET /healthz',
        'GET /readyz',
        'POST /api/api-keys',
        'GET /api/registry',
        'PUT /api/registry',
        'POST /api/registry/uploads',
        'GET /api/registry/uploads/{upload_id}',
        'DELETE /api/registry/uploads/{upload_id}',
        'PUT /api/registry/uploads/{upload_id}/parts/{part}',
        'POST /api/registry/uploads/{upload_id}/apply',
        'POST /api/validations',
        'POST /api/validations/dbt',
        'GET /api/metrics/{id}/usage',
        'GET /api/metrics/{id}/sources',
        'POST /api/service-tokens',
        'GET /api/service-tokens',
        'DELETE /api/service-tokens/{token_id}',
        'POST /api/webhooks',
        'GET /api/webhooks',
        'DELETE /api/webhooks/{webhook_id}',
        'GET /api/webhooks/{webhook_id}/deliveries',
        'POST /api/webhooks/{webhook_id}/test',
        'POST /api/webhooks/{webhook_id}/enable',
        'POST /api/metrics/{id}/threads',
        'GET /api/metrics/{id}/threads',
        'GET /api/threads/{id}',
        'POST /api/threads/{id}/messages',
        'POST /api/threads/{id}/resolve',
        'POST /api/threads/{id}/reopen',
        'PATCH /api/messages/{id}',
        'DELETE /api/messages/{id}',
        'POST /api/messages/{id}/pin',
        'DELETE /api/messages/{id}/pin',
        'POST /api/metrics/{id}/challenges',
        'GET /api/metrics/{id}/challenges',
        'POST /api/challenges/{id}/decision',
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
      'trust',
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
          // A YAML example is the text a client sends: what it reads as must match the schema.
          let value = example.value;
          if (label.endsWith('/application/yaml') && typeof value === 'string') {
            const parsed = parseDocumentText(value, 'yaml');
            expect(parsed.ok, `${label} ${name} is YAML as the route reads it`).toBe(true);
            value = parsed.ok ? parsed.value : undefined;
          }
          expectValid(media.schema, value, `${label} ${name}`);
          count++;
        }
      }
      for (const [key, value] of Object.entries(node)) visit(value, `${label}/${key}`);
    };
    visit(document, '#');
    expect(count).toBeGreaterThan(20);
  });

  it('accepts a service token on the write, export and usage routes only, and a read key on none of them', () => {
    const schemesOf = (operation: Record<string, unknown>) =>
      ((operation.security as Record<string, string[]>[] | undefined) ?? []).flatMap((requirement) =>
        Object.keys(requirement),
      );
    const withToken: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const schemes = schemesOf(operation);
        if (schemes.includes('serviceToken')) withToken.push(`${method.toUpperCase()} ${path}`);
        if (schemes.includes('bearerAuth')) expect(path, `${method} ${path}`).toMatch(/^\/api\/v1\/(metrics|changes)/);
      }
    }
    const discussions = Object.entries(document.paths)
      .filter(([path]) => /^\/api\/(metrics|threads|messages|challenges)\//.test(path))
      .filter(([path]) => !/\/(usage|sources)$/.test(path))
      .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    expect(discussions).toHaveLength(13);
    const uploads = [
      'POST /api/registry/uploads',
      'GET /api/registry/uploads/{upload_id}',
      'DELETE /api/registry/uploads/{upload_id}',
      'PUT /api/registry/uploads/{upload_id}/parts/{part}',
      'POST /api/registry/uploads/{upload_id}/apply',
    ];
    expect(withToken.sort()).toEqual(
      [
        'GET /api/metrics/{id}/sources',
        'GET /api/metrics/{id}/usage',
        'GET /api/registry',
        'POST /api/validations',
        'POST /api/validations/dbt',
        'PUT /api/registry',
        ...uploads,
        ...discussions,
      ].sort(),
    );
    for (const route of discussions) {
      const [method, path] = route.split(' ') as [string, string];
      expect(document.paths[path]?.[method.toLowerCase()]?.security, route).toEqual([
        { serviceToken: ['discussions:write'] },
        { sessionCookie: [] },
      ]);
    }
    expect(document.paths['/api/registry']?.put?.security).toEqual([
      { serviceToken: ['registry:write'] },
      { sessionCookie: [] },
    ]);
    // Uploads in parts take PUT /api/registry's callers.
    for (const route of uploads) {
      const [method, path] = route.split(' ') as [string, string];
      expect(document.paths[path]?.[method.toLowerCase()]?.security, route).toEqual([
        { serviceToken: ['registry:write'] },
        { sessionCookie: [] },
      ]);
    }
    expect(document.paths['/api/validations']?.post?.security).toEqual([
      { serviceToken: ['validations:write'] },
      { sessionCookie: [] },
    ]);
  });

  it('shows the registry document example as YAML and JSON, the same document, one the service reads', () => {
    const yaml = parseDocumentText(registryDocumentYaml, 'yaml');
    expect(yaml.ok).toBe(true);
    expect(yaml.ok && yaml.value).toEqual(registryDocumentExample);
    expect(parseRegistryDocument(registryDocumentExample).ok).toBe(true);
    const put = document.paths['/api/registry']?.put as { requestBody: { description: string } };
    expect(put.requestBody.description).toContain(registryDocumentYaml);
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
    // The search's additive meta: the words corrected, and suggestions when nothing is found.
    const corrected = await expectRoute('GET', LIST, `${LIST}?q=revnue`, { headers: bearer(key.secret) });
    expect(corrected.json().meta).toEqual({ apiVersion: 'v1', corrected: [{ from: 'revnue', to: 'revenue' }] });
    const none = await expectRoute('GET', LIST, `${LIST}?q=%22net%20revnue%22`, { headers: bearer(key.secret) });
    expect(none.json()).toMatchObject({ data: [], meta: { apiVersion: 'v1', did_you_mean: ['Net Revenue'] } });
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

  it('lineage (200) both ways and paged, with inputs on the detail and the contract; its 400s, 401, 403 and 404', async () => {
    const LINEAGE = '/api/v1/metrics/{id}/lineage';
    await insertInputs(t.database.prisma, revenue.id, [base.id, quiet.id]);
    const headers = bearer(key.secret);
    const up = await expectRoute('GET', LINEAGE, `/api/v1/metrics/${revenue.id}/lineage?limit=1`, { headers });
    expect(up.json().data.nodes).toHaveLength(1);
    const next = await expectRoute(
      'GET',
      LINEAGE,
      `/api/v1/metrics/${revenue.id}/lineage?after=${up.json().next_cursor}`,
      {
        headers,
      },
    );
    expect(next.json()).toMatchObject({ next_cursor: null, data: { total: 2 } });
    const down = await expectRoute(
      'GET',
      LINEAGE,
      `/api/v1/metrics/${quiet.id}/lineage?direction=downstream&depth=10`,
      {
        headers,
      },
    );
    expect(down.json().data.nodes.map((node: { id: string }) => node.id)).toEqual([revenue.id]);
    for (const template of [DETAIL, CONTRACT]) {
      const res = await expectRoute('GET', template, template.replace('{id}', revenue.id), { headers });
      expect(res.json().data.inputs.map((input: { key: string }) => input.key)).toEqual([base.key, quiet.key]);
    }
    for (const query of ['?direction=sideways', '?depth=11', '?limit=0', '?after=x']) {
      const res = await expectRoute('GET', LINEAGE, `/api/v1/metrics/${revenue.id}/lineage${query}`, { headers });
      expect(res.statusCode, query).toBe(400);
      expectDocumentedBody('GET', LINEAGE, res);
    }
    const badId = await expectRoute('GET', LINEAGE, '/api/v1/metrics/nope/lineage', { headers });
    expectDocumentedBody('GET', LINEAGE, badId);
    expect((await expectRoute('GET', LINEAGE, `/api/v1/metrics/${randomUUID()}/lineage`, { headers })).statusCode).toBe(
      404,
    );
    expect((await expectRoute('GET', LINEAGE, `/api/v1/metrics/${revenue.id}/lineage`, {})).statusCode).toBe(401);
    const forbidden = await expectRoute('GET', LINEAGE, `/api/v1/metrics/${revenue.id}/lineage`, {
      headers: bearer(wrongScopeKey.secret),
    });
    expect(forbidden.statusCode).toBe(403);
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
    for (const [index, [status, method, template, url, options]] of cases.entries()) {
      const res = await expectRoute(method, template, url, options);
      expect(res.statusCode, `${method} ${url} ${res.body}`).toBe(status);
      // The 400 examples are the messages of an empty name and of scopes other than the pair.
      if (status !== 400 || index < 2) expectDocumentedBody(method, template, res);
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
  it('detail, contract and lineage answer 500 Failed to fetch metric', async () => {
    const r2 = registry();
    const org = r2.org();
    const orgKey = org.key();
    const metric = org.metric();
    const broken = await startTestApp({ fixture: r2.build() });
    try {
      // The key lookup still works; the metric read fails.
      await broken.database.prisma.$executeRawUnsafe('ALTER TABLE metric RENAME TO metric_gone');
      for (const template of [
        '/api/v1/metrics/{id}',
        '/api/v1/metrics/{id}/contract',
        '/api/v1/metrics/{id}/lineage',
      ]) {
        const res = await broken.get(template.replace('{id}', metric.id), orgKey.secret);
        expect(res.statusCode).toBe(500);
        expectConforms('GET', template, { statusCode: res.statusCode, headers: res.headers, body: res.body });
      }
    } finally {
      await broken.close();
    }
  });
});

/**
 * The registry document's schema in the document is built beside the
 * parser's (src/openapi/requests.ts): they must accept and refuse the same
 * documents, field by field.
 */
describe('the RegistryDocument schema agrees with parseRegistryDocument', () => {
  type Doc = Record<string, unknown>;
  const schema = { $ref: '#/components/schemas/RegistryDocument' };
  const components = document.components.schemas;
  const propertiesOf = (name: string) => Object.keys(components[name]?.properties as Record<string, unknown>);
  const itemProperties = (field: string) => {
    const metric = components.RegistryMetric as { properties: Record<string, { items: { properties: Doc } }> };
    return Object.keys(metric.properties[field]?.items.properties ?? {});
  };

  const minimal = { key: 'm', name: 'M', description: 'd', sql_expression: 'x', project: 'P', owner_team: 'T' };
  const version = { definition_version: '1.0.0', status: 'released', released_at: '2026-02-15T00:00:00Z' };
  const approval = {
    definition_version: '1.0.0',
    approver_role: 'finance_controller',
    approver: null,
    decision: 'approved',
    decided_at: '2026-02-14T10:00:00Z',
  };
  const relationship = { kind: 'related_to', target: 'other' };
  const doc = (metric: Doc, top: Doc = {}): Doc => ({ organization: 'acme', metrics: [metric], ...top });
  /** Values of every JSON type; a field takes some of them and refuses others. */
  const candidates: unknown[] = [12345, 1.5, 'x', '', true, null, [], ['x'], [1], {}, { a: 1 }];

  function expectAgreement(value: unknown, label: string) {
    const parsed = parseRegistryDocument(value);
    const problems = parsed.ok ? [] : parsed.problems.map((p) => `${p.path.join('.')}: ${p.message}`);
    expect(validates(schema, value), `${label}: schema ${validates(schema, value)}, parser ${problems}`).toBe(
      parsed.ok,
    );
    return parsed.ok;
  }

  it('on whole documents', () => {
    const cases: [string, unknown, boolean][] = [
      ['the example', registryDocumentExample, true],
      ['no metrics', { organization: 'acme', metrics: [] }, true],
      ['a minimal metric', doc(minimal), true],
      [
        'project and owner_team from defaults',
        doc(
          { key: 'm', name: 'M', description: 'd', sql_expression: 'x' },
          { defaults: { project: 'P', owner_team: 'T' } },
        ),
        true,
      ],
      [
        'governance lists',
        doc({ ...minimal, versions: [version], approvals: [approval], relationships: [relationship] }),
        true,
      ],
      ['no organization', { metrics: [] }, false],
      ['no metrics member', { organization: 'acme' }, false],
      ['an unknown top-level member', { organization: 'acme', metrics: [], version: 1 }, false],
      ['an unknown default', doc(minimal, { defaults: { name: 'N' } }), false],
      ['a key with capitals', doc({ ...minimal, key: 'Net' }), false],
      ['a key of 129 characters', doc({ ...minimal, key: 'k'.repeat(129) }), false],
      ['a key of 128 characters', doc({ ...minimal, key: 'k'.repeat(128) }), true],
      ['an unknown version member', doc({ ...minimal, versions: [{ ...version, id: 'x' }] }), false],
      ['a version without status', doc({ ...minimal, versions: [{ ...version, status: undefined }] }), false],
      [
        'a timestamp without zone (read as UTC)',
        doc({ ...minimal, versions: [{ ...version, released_at: '2026-02-15T00:00:00' }] }),
        true,
      ],
      ['a date for a timestamp', doc({ ...minimal, versions: [{ ...version, released_at: '2026-02-15' }] }), false],
    ];
    for (const field of ['key', 'name', 'description', 'sql_expression']) {
      cases.push([`no ${field}`, doc({ ...minimal, [field]: undefined }), false]);
    }
    for (const field of ['project', 'owner_team']) {
      // Required unless in defaults: the schema cannot say "unless", so it is the one case where they differ.
      expect(parseRegistryDocument(doc({ ...minimal, [field]: undefined })).ok).toBe(false);
    }
    for (const field of [
      'id',
      'project_id',
      'domain_id',
      'created_at',
      'updated_at',
      'validations',
      'challenges',
      'threads',
    ]) {
      cases.push([`a metric with ${field}`, doc({ ...minimal, [field]: field.endsWith('s') ? [] : 'x' }), false]);
    }
    for (const [label, value, accepted] of cases) {
      const clean = JSON.parse(JSON.stringify(value));
      expect(expectAgreement(clean, label), label).toBe(accepted);
    }
  });

  it('on every field of a metric, of defaults, and of versions, approvals and relationships', () => {
    let accepted = 0;
    let refused = 0;
    const probe = (build: (value: unknown) => unknown, label: string, skip: unknown[] = []) => {
      for (const value of candidates) {
        if (skip.some((s) => JSON.stringify(s) === JSON.stringify(value))) continue;
        if (expectAgreement(build(value), `${label} = ${JSON.stringify(value)}`)) accepted++;
        else refused++;
      }
    };
    for (const field of propertiesOf('RegistryMetric')) {
      probe((value) => doc({ ...minimal, key: 'metric', [field]: value }), `metrics[0].${field}`);
    }
    for (const field of propertiesOf('RegistryDefaults')) {
      probe((value) => doc(minimal, { defaults: { [field]: value } }), `defaults.${field}`);
    }
    const lists: [string, Doc][] = [
      ['versions', version],
      ['approvals', approval],
      ['relationships', relationship],
    ];
    for (const [list, item] of lists) {
      for (const field of itemProperties(list)) {
        // approvals[].definition_version must name one of the metric's versions: a rule across fields.
        const skip = list === 'approvals' && field === 'definition_version' ? ['x', ''] : [];
        probe(
          (value) => doc({ ...minimal, versions: [version], [list]: [{ ...item, [field]: value }] }),
          `metrics[0].${list}[0].${field}`,
          skip,
        );
      }
    }
    expect(accepted).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });
});

describe('registry write routes and service tokens conform', () => {
  const REGISTRY = '/api/registry';
  const VALIDATIONS = '/api/validations';
  const TOKENS = '/api/service-tokens';
  const TOKEN = '/api/service-tokens/{token_id}';
  type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

  const w = registry();
  // The examples' organization and approver, so that the documented example applies as it is.
  const org = w.org({ slug: 'acme' });
  const readKey = org.key();
  const admin = org.user({ role: 'admin', email: 'ada@acme.example', session_token: true });
  const member = org.user({ role: 'member', session_token: true });
  const old = org.metric({ key: 'arr_old', name: 'ARR (old)', lifecycle_status: 'RELEASED' });
  org.validation(old, { ran_at: '2025-01-01T00:00:00Z', status: 'passed' });

  const TOKEN_RATE_LIMIT = 5;
  let app: TestApp;
  beforeAll(async () => {
    // Sessions get a budget that no test here spends; every service token has TOKEN_RATE_LIMIT a minute.
    app = await startTestApp({ fixture: w.build(), defaultRateLimit: 10_000, serviceTokenRateLimit: TOKEN_RATE_LIMIT });
  });
  afterAll(() => app.close());

  const cookie = (user: { session_token?: string }) => ({ cookie: `session=${user.session_token}` });
  const asJson = { 'content-type': 'application/json' };
  const asYaml = { 'content-type': 'application/yaml' };

  async function route(method: Method, template: string, url: string, options: InjectOptions = {}) {
    const res = await app.inject({ method, url, ...options });
    expectConforms(method, template, { statusCode: res.statusCode, headers: res.headers, body: res.body });
    return res;
  }

  async function newToken(scopes: string[]) {
    const body = { name: `CI ${scopes.join(' ')}`, scopes };
    expectRequestConforms('POST', TOKENS, 'application/json', body);
    const res = await route('POST', TOKENS, TOKENS, {
      headers: { ...cookie(admin), ...asJson },
      payload: JSON.stringify(body),
    });
    expect(res.statusCode).toBe(201);
    return res.json().data as { id: string; token: string };
  }

  const bearerOf = (token: { token: string }) => ({ authorization: `Bearer ${token.token}` });

  /** A PUT the route accepts: the body is one the document describes, and the answer conforms. */
  async function apply(query: string, headers: Record<string, string>, body: unknown, format: 'json' | 'yaml') {
    const text = format === 'json' ? JSON.stringify(body) : String(body);
    const parsed = format === 'json' ? body : (parseDocumentText(text, 'yaml') as { value: unknown }).value;
    expectRequestConforms('PUT', REGISTRY, format === 'json' ? 'application/json' : 'application/yaml', parsed);
    // The body's schema also admits a dbt or OSI file: a registry document must be a RegistryDocument.
    if (!query.includes('format='))
      expect(validates({ $ref: '#/components/schemas/RegistryDocument' }, parsed)).toBe(true);
    const res = await route('PUT', REGISTRY, `${REGISTRY}${query}`, {
      headers: { ...headers, ...(format === 'json' ? asJson : asYaml) },
      payload: text,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data;
  }

  const entry = (key: string, result: string, changed_fields: string[] = []) => ({ key, result, changed_fields });

  it('service tokens: create (201), list (200), revoke (200, again 200)', async () => {
    const token = await newToken(['registry:write', 'validations:write']);
    expect(token.token).toMatch(/^cls_[0-9a-f]{40}$/);
    // Used once, so that the list shows last_used_at too.
    await apply('?dry_run=true', bearerOf(token), { organization: 'acme', metrics: [] }, 'json');
    const listed = await route('GET', TOKENS, TOKENS, { headers: cookie(admin) });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data.find((t: { id: string }) => t.id === token.id).last_used_at).not.toBeNull();
    for (let attempt = 0; attempt < 2; attempt++) {
      const revoked = await route('DELETE', TOKEN, `${TOKENS}/${token.id}`, { headers: cookie(admin) });
      expect(revoked.statusCode).toBe(200);
    }
    const afterRevocation = await route('GET', TOKENS, TOKENS, { headers: cookie(admin) });
    expect(afterRevocation.json().data.find((t: { id: string }) => t.id === token.id).revoked_at).not.toBeNull();
  });

  it('service tokens: 400, 401, 403, 404, 415', async () => {
    const json = (body: unknown) => ({ headers: { ...cookie(admin), ...asJson }, payload: JSON.stringify(body) });
    const cases: [number, Method, string, string, InjectOptions][] = [
      [400, 'POST', TOKENS, TOKENS, json({ name: '', scopes: ['registry:write'] })],
      [400, 'POST', TOKENS, TOKENS, json({ name: 'CI', scopes: ['metrics:read'] })],
      [400, 'POST', TOKENS, TOKENS, json({ name: 'CI', scopes: [] })],
      [400, 'POST', TOKENS, TOKENS, { headers: { ...cookie(admin), ...asJson }, payload: '{' }],
      [401, 'GET', TOKENS, TOKENS, {}],
      [401, 'POST', TOKENS, TOKENS, { headers: { cookie: 'session=unknown' } }],
      [403, 'GET', TOKENS, TOKENS, { headers: cookie(member) }],
      [
        403,
        'DELETE',
        TOKEN,
        `${TOKENS}/${randomUUID()}`,
        { headers: { ...cookie(admin), origin: 'https://evil.example' } },
      ],
      [404, 'DELETE', TOKEN, `${TOKENS}/${randomUUID()}`, { headers: cookie(admin) }],
      [404, 'DELETE', TOKEN, `${TOKENS}/not-a-uuid`, { headers: cookie(admin) }],
      [415, 'POST', TOKENS, TOKENS, { headers: { ...cookie(admin), 'content-type': 'text/plain' }, payload: 'name=x' }],
    ];
    for (const [index, [status, method, template, url, options]] of cases.entries()) {
      const res = await route(method, template, url, options);
      expect(res.statusCode, `${method} ${url} ${res.body}`).toBe(status);
      // The 400 examples are the messages of an empty name and of a scope that is not a write scope.
      if (status !== 400 || index < 2) expectDocumentedBody(method, template, res);
    }
  });

  it('PUT /api/registry (200): the example as JSON then YAML, a dry run with prune, an update by a session', async () => {
    const token = await newToken(['registry:write']);
    const first = await apply('', bearerOf(token), registryDocumentExample, 'json');
    expect(first.plan).toEqual([
      entry('net_revenue_retention', 'created'),
      entry('net_revenue_retention_legacy', 'created'),
      entry('arr_old', 'absent'),
    ]);
    expect([first.totals, first.dry_run, first.applied]).toEqual([
      { created: 2, restored: 0, updated: 0, unchanged: 0, absent: 1, removed: 0 },
      false,
      true,
    ]);

    const again = await apply('', bearerOf(token), registryDocumentYaml, 'yaml');
    expect(again.totals).toEqual({ created: 0, restored: 0, updated: 0, unchanged: 2, absent: 1, removed: 0 });
    expect(again.applied).toBe(false);

    const dryRun = await apply('?dry_run=true&prune=1', cookie(admin), registryDocumentYaml, 'yaml');
    expect(dryRun.plan.at(-1)).toEqual(entry('arr_old', 'removed'));
    expect([dryRun.dry_run, dryRun.applied]).toEqual([true, false]);

    const [retention, legacy] = registryDocumentExample.metrics;
    const changed = { ...registryDocumentExample, metrics: [retention, { ...legacy, lifecycle_status: 'RELEASED' }] };
    const updated = await apply('?dry_run=false', cookie(admin), changed, 'json');
    expect(updated.plan[1]).toEqual({
      ...entry('net_revenue_retention_legacy', 'updated', ['lifecycle_status']),
      changes: [{ field: 'lifecycle_status', from: legacy?.lifecycle_status ?? 'DRAFT', to: 'RELEASED' }],
    });
    expect(updated.applied).toBe(true);

    // A dbt semantic manifest, imported for the caller's organization (dry run: the registry stays as it is).
    const imported = await apply(
      '?format=dbt&dry_run=true&default_lifecycle=RELEASED',
      cookie(admin),
      syntheticDbtManifest(3),
      'json',
    );
    expect(imported.totals).toMatchObject({ created: 3, absent: 3 });
  });

  it('POST /api/validations (200): recorded, then the same results again as duplicates; the verdict follows', async () => {
    const token = await newToken(['validations:write']);
    const results = {
      results: [
        { metric_key: 'arr_old', ran_at: '2026-03-01T06:00:00Z', status: 'passed', source: 'dbt-ci' },
        { metric_key: 'arr_old', ran_at: '2026-03-02T06:00:00Z', status: 'failed', details: '2 rows differ' },
      ],
    };
    expectRequestConforms('POST', VALIDATIONS, 'application/json', results);
    const post = (headers: Record<string, string>) =>
      route('POST', VALIDATIONS, VALIDATIONS, { headers: { ...headers, ...asJson }, payload: JSON.stringify(results) });
    const recorded = await post(bearerOf(token));
    expect([recorded.statusCode, recorded.json()]).toEqual([200, { data: { recorded: 2, duplicates: 0 } }]);
    const again = await post(cookie(admin));
    expect([again.statusCode, again.json()]).toEqual([200, { data: { recorded: 0, duplicates: 2 } }]);

    // The contract with the new reason conforms to the document's Trust.
    const CONTRACT = '/api/v1/metrics/{id}/contract';
    const contract = await route('GET', CONTRACT, `/api/v1/metrics/${old.id}/contract`, {
      headers: { authorization: `Bearer ${readKey.secret}` },
    });
    expect(contract.json().data.trust.reasons).toContain('failed_validation');
  });

  it('GET /api/metrics/{id}/usage: 200 (a key read it), 400, 401, 403, 404', async () => {
    const USAGE = '/api/metrics/{id}/usage';
    const read = await app.get(`/api/v1/metrics/${old.id}`, readKey.secret);
    expect(read.statusCode).toBe(200);
    const usage = await route('GET', USAGE, `/api/metrics/${old.id}/usage`, { headers: cookie(admin) });
    expect(usage.statusCode, usage.body).toBe(200);
    expect(usage.json().data).toMatchObject({ key: 'arr_old', readers: 1, keys: [{ name: readKey.name }] });
    const token = await newToken(['validations:write']);
    const cases: [number, string, InjectOptions][] = [
      [400, `/api/metrics/${old.id}/usage?days=7`, { headers: cookie(admin) }],
      [400, '/api/metrics/nope/usage', { headers: cookie(admin) }],
      [401, `/api/metrics/${old.id}/usage`, {}],
      [401, `/api/metrics/${old.id}/usage`, { headers: { authorization: `Bearer ${readKey.secret}` } }],
      [403, `/api/metrics/${old.id}/usage`, { headers: cookie(member) }],
      [403, `/api/metrics/${old.id}/usage`, { headers: bearerOf(token) }],
      [404, `/api/metrics/${randomUUID()}/usage`, { headers: cookie(admin) }],
    ];
    for (const [status, url, options] of cases) {
      const res = await route('GET', USAGE, url, options);
      expect(res.statusCode, `${url} ${res.body}`).toBe(status);
      expectDocumentedBody('GET', USAGE, res);
    }
  });

  it('write routes: 400 naming the place of each problem; nothing written', async () => {
    const asAdmin = (type: Record<string, string>) => ({ ...cookie(admin), ...type });
    const invalid = {
      organization: 'acme',
      metrics: [
        {
          key: 'a',
          name: 'A',
          description: 'd',
          sql_expression: 'x',
          project: 'P',
          owner_team: 'T',
          lifecycle_status: 'SHIPPED',
        },
        { key: 'a', name: 'A', description: 'd', sql_expression: 'x', project: 'P', owner_team: 'T', colour: 'red' },
      ],
    };
    const notMember = {
      ...registryDocumentExample,
      metrics: registryDocumentExample.metrics.map((metric) =>
        metric.approvals
          ? { ...metric, approvals: [{ ...metric.approvals[0], approver: 'bob@acme.example' }] }
          : metric,
      ),
    };
    const cases: [Method, string, Record<string, string>, string, RegExp][] = [
      ['PUT', REGISTRY, asAdmin(asJson), '{', /^not valid JSON/],
      [
        'PUT',
        REGISTRY,
        asAdmin(asYaml),
        'organization: acme\nmetrics:\n  - &m { key: a }\n  - *m\n',
        /^line 3, column \d+: anchors \(&m\) are not allowed$/,
      ],
      ['PUT', REGISTRY, asAdmin(asYaml), 'organization: acme\norganization: acme\nmetrics: []\n', /duplicate key/],
      ['PUT', REGISTRY, asAdmin(asJson), JSON.stringify(invalid), /^metrics\[0\]\.lifecycle_status: /],
      ['PUT', REGISTRY, asAdmin(asYaml), JSON.stringify(notMember), /approver .*bob@acme\.example is not a member/],
      [
        'PUT',
        `${REGISTRY}?format=dbml`,
        asAdmin(asJson),
        JSON.stringify(registryDocumentExample),
        /^format must be one of registry, dbt, osi$/,
      ],
      [
        'PUT',
        `${REGISTRY}?format=dbt&default_lifecycle=SHIPPED`,
        asAdmin(asJson),
        JSON.stringify(syntheticDbtManifest(1)),
        /^default_lifecycle must be one of /,
      ],
      ['PUT', `${REGISTRY}?format=dbt`, asAdmin(asJson), JSON.stringify({ metrics: 'none' }), /./],
      [
        'PUT',
        `${REGISTRY}?dry_run=maybe`,
        asAdmin(asJson),
        JSON.stringify(registryDocumentExample),
        /^dry_run must be true or false$/,
      ],
      [
        'POST',
        VALIDATIONS,
        asAdmin(asJson),
        '{"results":[{"metric_key":"nope","ran_at":"2026-03-01T06:00:00Z","status":"passed"}]}',
        /^results\[0\]\.metric_key: no metric/,
      ],
      ['POST', VALIDATIONS, asAdmin(asJson), '{"results":[]}', /^results: /],
      ['POST', VALIDATIONS, asAdmin(asJson), '[', /^not valid JSON/],
    ];
    for (const [method, url, headers, payload, message] of cases) {
      const template = url.split('?')[0] as string;
      const res = await route(method, template, url, { headers, payload });
      expect(res.statusCode, `${url} ${payload}`).toBe(400);
      expect(res.json().error, payload).toMatch(message);
    }
    const several = await app.inject({
      method: 'PUT',
      url: REGISTRY,
      headers: asAdmin(asJson),
      payload: JSON.stringify(invalid),
    });
    expect(several.json().details).toHaveLength(2);
    expect(several.json().details[1]).toBe('metrics[1].colour: unknown field "colour"');
  });

  it('write routes: 401, 403, 413, 415, 429 with the documented bodies', async () => {
    const registryToken = await newToken(['registry:write']);
    const validationsToken = await newToken(['validations:write']);
    const revokedToken = await newToken(['registry:write', 'validations:write']);
    await route('DELETE', TOKEN, `${TOKENS}/${revokedToken.id}`, { headers: cookie(admin) });
    const empty = JSON.stringify({ organization: 'acme', metrics: [] });
    const batch = JSON.stringify({
      results: [{ metric_key: 'arr_old', ran_at: '2026-03-03T06:00:00Z', status: 'passed' }],
    });
    const auth = (authorization: string) => ({ authorization });
    const cases: [number, Method, string, Record<string, string>, string][] = [
      [401, 'PUT', REGISTRY, asJson, empty],
      [401, 'PUT', REGISTRY, { cookie: 'session=unknown', ...asJson }, empty],
      [401, 'PUT', REGISTRY, { ...auth(''), ...asJson }, empty],
      [401, 'PUT', REGISTRY, { ...auth(`Basic ${registryToken.token}`), ...asJson }, empty],
      [401, 'PUT', REGISTRY, { ...auth(`Bearer ${readKey.secret}`), ...asJson }, empty],
      [401, 'PUT', REGISTRY, { ...auth(`Bearer cls_${'0'.repeat(40)}`), ...asJson }, empty],
      [401, 'PUT', REGISTRY, { ...bearerOf(revokedToken), ...asJson }, empty],
      [401, 'POST', VALIDATIONS, { ...auth(`Bearer ${readKey.secret}`), ...asJson }, batch],
      [401, 'POST', VALIDATIONS, { ...bearerOf(revokedToken), ...asJson }, batch],
      [403, 'PUT', REGISTRY, { ...cookie(member), ...asJson }, empty],
      [403, 'PUT', REGISTRY, { ...cookie(admin), 'sec-fetch-site': 'cross-site', ...asJson }, empty],
      [403, 'PUT', REGISTRY, { ...bearerOf(validationsToken), ...asJson }, empty],
      [
        403,
        'PUT',
        REGISTRY,
        { ...bearerOf(registryToken), ...asJson },
        JSON.stringify({ organization: 'globex', metrics: [] }),
      ],
      [403, 'POST', VALIDATIONS, { ...bearerOf(registryToken), ...asJson }, batch],
      [403, 'POST', VALIDATIONS, { ...cookie(admin), origin: 'https://evil.example', ...asJson }, batch],
      [413, 'PUT', REGISTRY, { ...cookie(admin), ...asYaml }, `# ${'x'.repeat(16 * 1024 * 1024)}\n`],
      [
        413,
        'POST',
        VALIDATIONS,
        { ...cookie(admin), ...asJson },
        JSON.stringify({ results: [], pad: 'x'.repeat(VALIDATIONS_BODY_LIMIT) }),
      ],
      [415, 'PUT', REGISTRY, { ...cookie(admin), 'content-type': 'text/plain' }, empty],
      [415, 'PUT', REGISTRY, cookie(admin), ''],
      [415, 'POST', VALIDATIONS, { ...bearerOf(validationsToken), 'content-type': 'application/yaml' }, batch],
    ];
    for (const [status, method, url, headers, payload] of cases) {
      const res = await route(method, url, url, { headers, payload });
      expect(res.statusCode, `${method} ${url} ${JSON.stringify(headers)} ${res.body}`).toBe(status);
      expectDocumentedBody(method, url, res);
    }
    // A service token is refused on the read routes as the read routes document it.
    const read = await route('GET', '/api/v1/metrics', '/api/v1/metrics', { headers: bearerOf(registryToken) });
    expect([read.statusCode, read.json()]).toEqual([401, { error: 'Invalid API key format' }]);

    // The token's own budget: TOKEN_RATE_LIMIT a minute, then 429 with Retry-After.
    const limited = await newToken(['validations:write']);
    for (let n = 1; n <= TOKEN_RATE_LIMIT + 1; n++) {
      const res = await route('POST', VALIDATIONS, VALIDATIONS, {
        headers: { ...bearerOf(limited), ...asJson },
        payload: batch,
      });
      expect(res.statusCode).toBe(n <= TOKEN_RATE_LIMIT ? 200 : 429);
      if (res.statusCode === 429) {
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expectDocumentedBody('POST', VALIDATIONS, res);
      }
    }
  });

  it('uploads in parts: create (201), parts as JSON and YAML, read, apply (200), delete (204), and the documented errors', async () => {
    const UPLOADS = '/api/registry/uploads';
    const UPLOAD = '/api/registry/uploads/{upload_id}';
    const PART = '/api/registry/uploads/{upload_id}/parts/{part}';
    const APPLY = '/api/registry/uploads/{upload_id}/apply';
    const defaults = { project: 'Core Analytics', owner_team: 'Finance Analytics' };
    const metric = (key: string, fields: Record<string, unknown> = {}) => ({
      key,
      name: `Upload ${key}`,
      description: `About ${key}.`,
      sql_expression: 'SUM(amount)',
      lifecycle_status: 'RELEASED',
      ...fields,
    });
    const first = { organization: 'acme', defaults, metrics: [metric('upload_orders')] };
    const secondYaml = [
      'organization: acme',
      'defaults: { project: Core Analytics, owner_team: Finance Analytics }',
      'metrics:',
      '  - key: upload_orders_net',
      '    name: Upload upload_orders_net',
      '    description: About upload_orders_net.',
      '    sql_expression: SUM(amount)',
      '    lifecycle_status: RELEASED',
      // A relationship to a metric of part 1: checked when the upload is applied, found then.
      '    relationships: [{ kind: related_to, target: upload_orders }]',
      '  - key: upload_refunds',
      '    name: Upload upload_refunds',
      '    description: About upload_refunds.',
      '    sql_expression: SUM(amount)',
      '    lifecycle_status: RELEASED',
      '',
    ].join('\n');
    const second = (parseDocumentText(secondYaml, 'yaml') as { ok: true; value: unknown }).value;
    expectRequestConforms('PUT', PART, 'application/json', first);
    expectRequestConforms('PUT', PART, 'application/yaml', second);
    const session = cookie(admin);
    const open = async (headers: Record<string, string>) => {
      const res = await route('POST', UPLOADS, UPLOADS, { headers });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().data as { upload_id: string; created_at: string; expires_at: string };
    };
    const partsOf = (res: { json(): { data: { parts: { part: number; metrics: number }[] } } }) =>
      res.json().data.parts.map((p) => [p.part, p.metrics]);

    // The CI token: create, part 1 (JSON), read, dry run, apply (its TOKEN_RATE_LIMIT a minute, spent exactly).
    const token = await newToken(['registry:write']);
    const created = await open(bearerOf(token));
    const id = created.upload_id;
    expect(created).toEqual({
      upload_id: id,
      created_at: created.created_at,
      expires_at: created.expires_at,
      metrics: 0,
      parts: [],
    });
    expect(Date.parse(created.expires_at) - Date.parse(created.created_at)).toBe(24 * 3600 * 1000);
    const url = (rest = '') => `${UPLOADS}/${id}${rest}`;

    const part1 = await route('PUT', PART, url('/parts/1'), {
      headers: { ...bearerOf(token), ...asJson },
      payload: JSON.stringify(first),
    });
    expect(part1.statusCode, part1.body).toBe(200);
    expect(part1.json().data).toMatchObject({
      upload_id: id,
      metrics: 1,
      parts: [{ part: 1, source: 'registry', metrics: 1, trust_policy: false }],
    });

    // The admin's session: part 2 (YAML).
    const part2 = await route('PUT', PART, url('/parts/2'), {
      headers: { ...session, ...asYaml },
      payload: secondYaml,
    });
    expect(part2.statusCode, part2.body).toBe(200);
    expect(part2.json().data.metrics).toBe(3);
    expect(partsOf(part2)).toEqual([
      [1, 1],
      [2, 2],
    ]);

    const read = await route('GET', UPLOAD, url(), { headers: bearerOf(token) });
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json()).toEqual(part2.json());

    // Refused parts keep nothing: a key of part 1 again, a part number that is not one, another
    // organization's document, a body neither JSON nor YAML; a read key is no caller.
    const duplicate = await route('PUT', PART, url('/parts/3'), {
      headers: { ...session, ...asJson },
      payload: JSON.stringify({
        organization: 'acme',
        defaults,
        metrics: [metric('upload_returns'), metric('upload_orders')],
      }),
    });
    expect([duplicate.statusCode, duplicate.json()]).toEqual([
      400,
      { error: 'metrics[1].key: duplicate key "upload_orders": also parts[1].metrics[0]' },
    ]);
    for (const part of ['0', '101', '1.5', 'x', '-1']) {
      const res = await route('PUT', PART, url(`/parts/${part}`), {
        headers: { ...session, ...asJson },
        payload: JSON.stringify(first),
      });
      expect([res.statusCode, res.json()], part).toEqual([400, { error: 'part must be a whole number from 1 to 100' }]);
      expectDocumentedBody('PUT', PART, res);
    }
    const otherOrganization = await route('PUT', PART, url('/parts/3'), {
      headers: { ...session, ...asJson },
      payload: JSON.stringify({ ...first, organization: 'globex' }),
    });
    expect(otherOrganization.statusCode, otherOrganization.body).toBe(403);
    expectDocumentedBody('PUT', PART, otherOrganization);
    const notADocument = await route('PUT', PART, url('/parts/3'), {
      headers: { ...session, 'content-type': 'text/plain' },
      payload: JSON.stringify(first),
    });
    expect(notADocument.statusCode, notADocument.body).toBe(415);
    expectDocumentedBody('PUT', PART, notADocument);
    const readKeyRefused = await route('GET', UPLOAD, url(), {
      headers: { authorization: `Bearer ${readKey.secret}` },
    });
    expect(readKeyRefused.statusCode).toBe(401);
    expect(partsOf(await route('GET', UPLOAD, url(), { headers: session }))).toEqual([
      [1, 1],
      [2, 2],
    ]);

    const unknownParameter = await route('POST', APPLY, url('/apply?format=osi'), { headers: session });
    expect([unknownParameter.statusCode, unknownParameter.json()]).toEqual([
      400,
      {
        error:
          'unknown query parameter "format": this route takes dry_run, prune, allow_removals, source, force_conflicts, check',
      },
    ]);
    expectDocumentedBody('POST', APPLY, unknownParameter);

    // A dry run plans the three metrics and keeps the upload; the apply writes them and removes it.
    const dryRun = await route('POST', APPLY, url('/apply?dry_run=true'), { headers: bearerOf(token) });
    expect(dryRun.statusCode, dryRun.body).toBe(200);
    const planned = dryRun.json().data;
    expect(planned).toMatchObject({
      upload_id: id,
      organization: 'acme',
      source: 'registry',
      dry_run: true,
      applied: false,
    });
    // The upload's metrics in the order of its parts, then the organization's others (arr_old among them), absent.
    const others = planned.plan.slice(3) as { key: string; result: string }[];
    expect(planned.plan.slice(0, 3)).toEqual(
      ['upload_orders', 'upload_orders_net', 'upload_refunds'].map((key) => entry(key, 'created')),
    );
    expect(new Set(others.map((entry) => entry.result))).toEqual(new Set(['absent']));
    expect(others.map((entry) => entry.key)).toContain('arr_old');
    expect(planned.totals).toEqual({
      created: 3,
      restored: 0,
      updated: 0,
      unchanged: 0,
      absent: others.length,
      removed: 0,
    });
    // check=true plans as a dry run does and says the registry is not in sync; the upload is kept for the apply.
    const check = await route('POST', APPLY, url('/apply?check=true'), { headers: session });
    expect(check.statusCode, check.body).toBe(200);
    expect(check.json().data).toMatchObject({ dry_run: true, applied: false, in_sync: false, totals: planned.totals });
    const applied = await route('POST', APPLY, url('/apply'), { headers: bearerOf(token) });
    expect(applied.statusCode, applied.body).toBe(200);
    expect(applied.json().data).toMatchObject({ upload_id: id, dry_run: false, applied: true, totals: planned.totals });
    expect(applied.json().data.plan).toEqual(planned.plan);

    const gone = await route('GET', UPLOAD, url(), { headers: session });
    expect([gone.statusCode, gone.json()]).toEqual([404, { error: 'Upload not found' }]);
    expectDocumentedBody('GET', UPLOAD, gone);
    expect((await route('POST', APPLY, url('/apply'), { headers: session })).statusCode).toBe(404);
    // The same metrics as one document plan nothing: the upload applied them as they are.
    const again = await apply(
      '?dry_run=true',
      session,
      { organization: 'acme', defaults, metrics: [...first.metrics, ...(second as { metrics: unknown[] }).metrics] },
      'json',
    );
    expect(again.totals).toMatchObject({ created: 0, updated: 0, unchanged: 3 });

    // Unknown ids, and ids that cannot be one, are 404 on every route.
    const unknown = `${UPLOADS}/${randomUUID()}`;
    const notFound: [Method, string, string, InjectOptions][] = [
      ['GET', UPLOAD, unknown, { headers: session }],
      ['GET', UPLOAD, `${UPLOADS}/nope`, { headers: session }],
      ['DELETE', UPLOAD, unknown, { headers: session }],
      ['POST', APPLY, `${unknown}/apply`, { headers: session }],
      ['PUT', PART, `${unknown}/parts/1`, { headers: { ...session, ...asJson }, payload: JSON.stringify(first) }],
    ];
    for (const [method, template, requestUrl, options] of notFound) {
      const res = await route(method, template, requestUrl, options);
      expect([res.statusCode, res.json()], `${method} ${requestUrl}`).toEqual([404, { error: 'Upload not found' }]);
      expectDocumentedBody(method, template, res);
    }

    // A second upload: applied without parts it is refused and kept; deleted, it is gone.
    const empty = (await open(session)).upload_id;
    const noParts = await route('POST', APPLY, `${UPLOADS}/${empty}/apply`, { headers: session });
    expect([noParts.statusCode, noParts.json()]).toEqual([400, { error: '(document): the upload has no parts yet' }]);
    expectDocumentedBody('POST', APPLY, noParts);
    expect((await route('GET', UPLOAD, `${UPLOADS}/${empty}`, { headers: session })).statusCode).toBe(200);
    const deleted = await route('DELETE', UPLOAD, `${UPLOADS}/${empty}`, { headers: session });
    expect([deleted.statusCode, deleted.body]).toEqual([204, '']);
    expect((await route('GET', UPLOAD, `${UPLOADS}/${empty}`, { headers: session })).statusCode).toBe(404);
    expect((await route('DELETE', UPLOAD, `${UPLOADS}/${empty}`, { headers: session })).statusCode).toBe(404);

    // Five open at once; the sixth is refused. They are deleted after, so the organization has none open.
    const five: string[] = [];
    for (let n = 0; n < 5; n++) five.push((await open(session)).upload_id);
    const sixth = await route('POST', UPLOADS, UPLOADS, { headers: session });
    expect([sixth.statusCode, sixth.json()]).toEqual([
      409,
      {
        error: 'An organization has at most 5 uploads open at once: apply or delete one before creating another',
      },
    ]);
    expectDocumentedBody('POST', UPLOADS, sixth);
    for (const upload of five) {
      expect((await route('DELETE', UPLOAD, `${UPLOADS}/${upload}`, { headers: session })).statusCode).toBe(204);
    }
    // Deleted ones no longer count: one opens again (and is deleted too).
    const reopened = (await open(session)).upload_id;
    expect((await route('DELETE', UPLOAD, `${UPLOADS}/${reopened}`, { headers: session })).statusCode).toBe(204);
  });

  it('the change feed of what these applies and validations did conforms (200, 400, 410)', async () => {
    const CHANGES = '/api/v1/changes';
    const readBearer = { authorization: `Bearer ${readKey.secret}` };
    const page = await route('GET', CHANGES, `${CHANGES}?limit=500`, { headers: readBearer });
    expect(page.statusCode).toBe(200);
    const types = new Set(page.json().data.map((event: { type: string }) => event.type));
    for (const type of ['metric.created', 'metric.validated', 'metric.trust_changed']) expect(types).toContain(type);
    for (const url of [`${CHANGES}?after=nope`, `${CHANGES}?limit=0`, `${CHANGES}?wait=31`]) {
      const res = await route('GET', CHANGES, url, { headers: readBearer });
      expect(res.statusCode, url).toBe(400);
      expectDocumentedBody('GET', CHANGES, res);
    }
    const first = (await route('GET', CHANGES, `${CHANGES}?limit=1`, { headers: readBearer })).json().next_cursor;
    const later = new Date(Date.now() + 31 * 24 * 3600 * 1000);
    await sweepOnce(
      app.database.prisma,
      { intervalMs: 1000, retentionDays: 30, trust: { staleValidationDays: 30 } },
      later,
    );
    const gone = await route('GET', CHANGES, `${CHANGES}?after=${first}`, { headers: readBearer });
    expect(gone.statusCode).toBe(410);
    expectDocumentedBody('GET', CHANGES, gone);
  });
});

describe('webhook routes conform', () => {
  const HOOKS = '/api/webhooks';
  const HOOK = '/api/webhooks/{webhook_id}';
  const w = registry();
  const org = w.org({ slug: 'hooks' });
  const admin = org.user({ role: 'admin', session_token: true });
  const member = org.user({ role: 'member', session_token: true });
  let app: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    app = await startTestApp({
      fixture: w.build(),
      defaultRateLimit: 10_000,
      webhooks: { allowHttp: true, allowPrivateNetworks: true },
    });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await app.close();
  });

  const headers = (user: { session_token?: string }, json = true) => ({
    cookie: `session=${user.session_token}`,
    ...(json ? { 'content-type': 'application/json' } : {}),
  });

  async function route(method: 'GET' | 'POST' | 'DELETE', template: string, url: string, options: InjectOptions) {
    const res = await app.inject({ method, url, ...options });
    expectConforms(method, template, { statusCode: res.statusCode, headers: res.headers, body: res.body });
    return res;
  }

  it('create (201), list, test, deliveries, delete (200), and the documented errors', async () => {
    const body = { url: receiver.url, types: ['metric.trust_changed'], description: 'BI cache' };
    expectRequestConforms('POST', HOOKS, 'application/json', body);
    const created = await route('POST', HOOKS, HOOKS, { headers: headers(admin), payload: JSON.stringify(body) });
    expect(created.statusCode, created.body).toBe(201);
    const { id, secret } = created.json().data;
    receiver.secret = secret;
    const tested = await route('POST', `${HOOK}/test`, `${HOOKS}/${id}/test`, {
      headers: headers(admin),
      payload: '{}',
    });
    expect(tested.json().data.delivered).toBe(true);
    expect((await receiver.waitFor(1))[0]?.verified).toBe(true);
    const listed = await route('GET', HOOKS, HOOKS, { headers: headers(admin, false) });
    expect(listed.json().data[0].last_delivery.status_code).toBe(204);
    const deliveries = await route('GET', `${HOOK}/deliveries`, `${HOOKS}/${id}/deliveries`, {
      headers: headers(admin, false),
    });
    expect(deliveries.json().data).toHaveLength(1);
    const enabled = await route('POST', `${HOOK}/enable`, `${HOOKS}/${id}/enable`, {
      headers: headers(admin),
      payload: '{}',
    });
    expect(enabled.json().data).toEqual({ id, enabled: false, skipped_expired_events: false });

    const cases: [number, 'GET' | 'POST' | 'DELETE', string, string, Record<string, string>, string?][] = [
      [400, 'POST', HOOKS, HOOKS, headers(admin), JSON.stringify({ url: 'ftp://x.example/' })],
      [401, 'GET', HOOKS, HOOKS, {}],
      [403, 'GET', HOOKS, HOOKS, headers(member, false)],
      [404, 'DELETE', HOOK, `${HOOKS}/${randomUUID()}`, headers(admin, false)],
      [404, 'GET', `${HOOK}/deliveries`, `${HOOKS}/${randomUUID()}/deliveries`, headers(admin, false)],
      [404, 'POST', `${HOOK}/enable`, `${HOOKS}/${randomUUID()}/enable`, headers(admin), '{}'],
      [
        413,
        'POST',
        HOOKS,
        HOOKS,
        headers(admin),
        JSON.stringify({ url: receiver.url, description: 'x'.repeat(17_000) }),
      ],
      [415, 'POST', HOOKS, HOOKS, { ...headers(admin), 'content-type': 'text/plain' }, '{}'],
    ];
    for (const [status, method, template, url, requestHeaders, payload] of cases) {
      const res = await route(method, template, url, { headers: requestHeaders, payload });
      expect(res.statusCode, `${method} ${url} ${res.body}`).toBe(status);
    }
    const deleted = await route('DELETE', HOOK, `${HOOKS}/${id}`, { headers: headers(admin, false) });
    expect(deleted.json()).toEqual({ data: { id, deleted: true } });
  });
});
