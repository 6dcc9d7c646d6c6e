/**
 * Every route the app registers, called once through a real listening socket
 * (not `inject`, which never closes a request nor sends its body over TCP):
 * the route table is read from Fastify as the app is built (an onRoute hook
 * on the instance buildApp creates), so a route added without a call here
 * fails this test. Each call has valid credentials and input and must
 * answer what the route answers to that, never a 5xx.
 */
import type { AddressInfo } from 'node:net';
import type { RouteOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLoginLink } from '../../src/admin/login-links.js';
import { createSession } from '../../src/admin/sessions.js';
import { createMetrics, startMetricsServer } from '../../src/http/metrics.js';
import { csrfTokenOf } from '../../src/http/pages/csrf.js';
import { PAGE_STYLESHEET } from '../../src/pages/assets.js';
import { createUpload } from '../../src/registry/upload.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { manifestOf, runResultsOf, shop } from '../helpers/dbt-artifacts.js';
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.js';
import { doc, docMetric, newTeamOrg, type TeamOrg } from '../registry/support.js';

const registered = vi.hoisted(() => new Set<string>());

vi.mock('fastify', async (importOriginal) => {
  const actual = await importOriginal<typeof import('fastify')>();
  const create = ((options?: Parameters<typeof actual.default>[0]) => {
    const app = actual.default(options);
    app.addHook('onRoute', (route: RouteOptions) => {
      for (const method of [route.method].flat()) registered.add(`${method} ${route.url}`);
    });
    return app;
  }) as unknown as typeof actual.default;
  return { ...actual, default: create, fastify: create };
});

const ALLOWED_ORIGIN = 'https://dashboards.example';
let t: TestApp;
let base: string;
let org: TeamOrg;
let receiver: Receiver;
const metrics = createMetrics();

beforeAll(async () => {
  t = await startTestApp({
    metrics,
    corsOrigins: [ALLOWED_ORIGIN],
    webhooks: { allowHttp: true, allowPrivateNetworks: true, timeoutMs: 5000 },
  });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  org = await newTeamOrg(t.database.prisma, 'sockets');
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});

interface Call {
  path: string;
  init?: RequestInit;
  /** the answer expected to a valid call */
  status: number;
  /** the answer expected to the same call as HEAD, when not `status` */
  head?: number;
}

const asKey = () => ({ authorization: `Bearer ${org.key}` });
const asToken = () => ({ authorization: `Bearer ${org.token}`, 'content-type': 'application/json' });
const asAdmin = () => ({ cookie: `session=${org.ownerSession}` });
const json = (method: string, headers: Record<string, string>, body: unknown): RequestInit => ({
  method,
  headers,
  body: JSON.stringify(body),
});

/** Ids the calls create and later calls use. */
const made: Record<string, string> = {};

const send = (call: Call): Promise<Response> => fetch(new URL(call.path, base), { redirect: 'manual', ...call.init });

/** The first `prefix...` address a page links to. */
async function linkedFrom(path: string, prefix: string, init?: RequestInit): Promise<string> {
  const html = await (await send({ path, init, status: 200 })).text();
  const found = html.match(new RegExp(`(${prefix}[^"'\\s<>)]+)`));
  if (!found?.[1]) throw new Error(`${path} links to nothing under ${prefix}`);
  return found[1];
}

/**
 * One call per registered route, in an order where each finds what it needs
 * (the registry applied before the metric reads, a credential created before
 * it is revoked). Keys are `METHOD url` as Fastify registered them.
 */
const CALLS: [route: string, call: () => Call | Promise<Call>][] = [
  ['GET /healthz', () => ({ path: '/healthz', status: 200 })],
  ['GET /readyz', () => ({ path: '/readyz', status: 200 })],
  ['GET /', () => ({ path: '/', status: 200 })],
  [
    'PUT /api/registry',
    () => ({
      path: '/api/registry',
      init: json('PUT', asToken(), doc(org.slug, [docMetric('orders', { lifecycle_status: 'RELEASED' })])),
      status: 200,
    }),
  ],
  [
    'POST /api/validations',
    () => ({
      path: '/api/validations',
      init: json('POST', asToken(), {
        results: [{ metric_key: 'orders', ran_at: new Date().toISOString(), status: 'passed', source: 'ci' }],
      }),
      status: 200,
    }),
  ],
  [
    'POST /api/validations/dbt',
    () => {
      const spec = shop([{ name: 'not_null_orders_id', model: 'orders', status: 'pass' }]);
      spec.metrics = [{ name: 'orders', type: 'simple', measure: 'order_total' }];
      return {
        path: '/api/validations/dbt',
        init: json('POST', asToken(), { run_results: runResultsOf(spec), manifest: manifestOf(spec) }),
        status: 200,
      };
    },
  ],
  ['GET /api/registry', () => ({ path: '/api/registry?format=osi', init: { headers: asToken() }, status: 200 })],
  ...uploadCalls(),
  ['GET /api/v1/metrics', () => ({ path: '/api/v1/metrics', init: { headers: asKey() }, status: 200 })],
  [
    'GET /api/v1/metrics/:id',
    () => ({ path: `/api/v1/metrics/${made.metric}`, init: { headers: asKey() }, status: 200 }),
  ],
  [
    'GET /api/v1/metrics/:id/contract',
    () => ({ path: `/api/v1/metrics/${made.metric}/contract`, init: { headers: asKey() }, status: 200 }),
  ],
  [
    'GET /api/v1/metrics/:id/lineage',
    () => ({ path: `/api/v1/metrics/${made.metric}/lineage`, init: { headers: asKey() }, status: 200 }),
  ],
  ...discussionCalls(),
  ...discussionPageCalls(),
  ['GET /api/v1/changes', () => ({ path: '/api/v1/changes', init: { headers: asKey() }, status: 200 })],
  [
    'GET /api/metrics/:id/usage',
    () => ({ path: `/api/metrics/${made.metric}/usage`, init: { headers: asToken() }, status: 200 }),
  ],
  [
    'GET /api/metrics/:id/sources',
    () => ({ path: `/api/metrics/${made.metric}/sources`, init: { headers: asToken() }, status: 200 }),
  ],
  ['GET /api/v1/openapi.json', () => ({ path: '/api/v1/openapi.json', status: 200 })],
  [
    'POST /api/api-keys',
    () => ({
      path: '/api/api-keys',
      init: json('POST', { ...asAdmin(), 'content-type': 'application/json' }, { name: 'socket' }),
      status: 201,
    }),
  ],
  ['GET /api/api-keys', () => ({ path: '/api/api-keys', init: { headers: asAdmin() }, status: 200 })],
  [
    'DELETE /api/api-keys/:key_id',
    () => ({ path: `/api/api-keys/${made.apiKey}`, init: { method: 'DELETE', headers: asAdmin() }, status: 200 }),
  ],
  [
    'POST /api/service-tokens',
    () => ({
      path: '/api/service-tokens',
      init: json(
        'POST',
        { ...asAdmin(), 'content-type': 'application/json' },
        { name: 'socket', scopes: ['registry:write'] },
      ),
      status: 201,
    }),
  ],
  ['GET /api/service-tokens', () => ({ path: '/api/service-tokens', init: { headers: asAdmin() }, status: 200 })],
  [
    'DELETE /api/service-tokens/:token_id',
    () => ({
      path: `/api/service-tokens/${made.serviceToken}`,
      init: { method: 'DELETE', headers: asAdmin() },
      status: 200,
    }),
  ],
  [
    'POST /api/webhooks',
    () => ({
      path: '/api/webhooks',
      init: json('POST', { ...asAdmin(), 'content-type': 'application/json' }, { url: receiver.url }),
      status: 201,
    }),
  ],
  ['GET /api/webhooks', () => ({ path: '/api/webhooks', init: { headers: asAdmin() }, status: 200 })],
  [
    'POST /api/webhooks/:webhook_id/test',
    () => ({
      path: `/api/webhooks/${made.webhook}/test`,
      init: json('POST', { ...asAdmin(), 'content-type': 'application/json' }, {}),
      status: 200,
    }),
  ],
  [
    'GET /api/webhooks/:webhook_id/deliveries',
    () => ({ path: `/api/webhooks/${made.webhook}/deliveries`, init: { headers: asAdmin() }, status: 200 }),
  ],
  [
    'POST /api/webhooks/:webhook_id/enable',
    () => ({
      path: `/api/webhooks/${made.webhook}/enable`,
      init: json('POST', { ...asAdmin(), 'content-type': 'application/json' }, {}),
      status: 200,
    }),
  ],
  [
    'DELETE /api/webhooks/:webhook_id',
    () => ({ path: `/api/webhooks/${made.webhook}`, init: { method: 'DELETE', headers: asAdmin() }, status: 200 }),
  ],
  ['GET /docs', () => ({ path: '/docs', status: 200 })],
  ['GET /assets/:file', () => ({ path: PAGE_STYLESHEET.path, status: 200 })],
  [
    'GET /:org/metrics/:id',
    () => ({ path: `/${org.slug}/metrics/${made.metric}`, init: { headers: asAdmin() }, status: 200 }),
  ],
  [
    'GET /:org/metrics/:id/versions',
    // The metric records no versions: none can be named, so the comparison is refused as the page says.
    () => ({
      path: `/${org.slug}/metrics/${made.metric}/versions?from=1&to=2`,
      init: { headers: asAdmin() },
      status: 400,
    }),
  ],
  [
    'POST /sign-out',
    async () => {
      // A session of its own: signing out deletes it, and the calls after this one use the owner's.
      const signedIn = await createSession(t.database.prisma, { user: `owner-${org.slug}@example.com`, org: org.slug });
      return {
        path: '/sign-out',
        init: {
          method: 'POST',
          headers: { cookie: `session=${signedIn.token}`, 'content-type': 'application/x-www-form-urlencoded' },
          body: `csrf=${csrfTokenOf(signedIn.token)}`,
        },
        status: 303,
      };
    },
  ],
  ['GET /sign-in', () => ({ path: '/sign-in?next=/', status: 200 })],
  [
    'GET /sign-in/link',
    async () => {
      made.loginLink = (
        await createLoginLink(t.database.prisma, { org: org.slug, email: org.ownerEmail, publicAppUrl: base })
      ).url;
      // Showing the link's page spends nothing (HEAD too): the POST below uses it.
      return { path: made.loginLink, status: 200 };
    },
  ],
  [
    'POST /sign-in/link',
    () => ({
      path: '/sign-in/link',
      init: {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: new URL(made.loginLink ?? base).searchParams.get('token') ?? '' }),
      },
      status: 303,
    }),
  ],
  // This app has no provider (OIDC_*): both answer the page saying so (test/pages/sign-in.test.ts has one).
  ['GET /sign-in/oidc', () => ({ path: '/sign-in/oidc', status: 404 })],
  ['GET /sign-in/oidc/callback', () => ({ path: '/sign-in/oidc/callback?code=c&state=s', status: 404 })],
  ['GET /:org', () => ({ path: `/${org.slug}`, init: { headers: asAdmin() }, status: 200 })],
  ['GET /:org/metrics', () => ({ path: `/${org.slug}/metrics?q=orders`, init: { headers: asAdmin() }, status: 200 })],
  ['GET /:org/settings', () => ({ path: `/${org.slug}/settings`, init: { headers: asAdmin() }, status: 200 })],
  ['GET /docs/', () => ({ path: '/docs/', status: 301 })],
  ['GET /docs/js/scalar.js', () => ({ path: '/docs/js/scalar.js', status: 200 })],
  ['GET /docs/js/:file', async () => ({ path: await linkedFrom('/docs', '/docs/js/'), status: 200 })],
  [
    'GET /graphiql/*',
    async () => ({
      path: await linkedFrom('/graphql', '/graphiql/', { headers: { accept: 'text/html' } }),
      status: 200,
    }),
  ],
  [
    'GET /graphql',
    () => ({
      path: `/graphql?query=${encodeURIComponent('{ metrics { items { key } } }')}`,
      init: { headers: asKey() },
      status: 200,
      // GraphQL over HTTP runs operations on GET and POST only.
      head: 405,
    }),
  ],
  [
    'POST /graphql',
    () => ({
      path: '/graphql',
      init: json('POST', { ...asKey(), 'content-type': 'application/json' }, { query: '{ changes { nextCursor } }' }),
      status: 200,
    }),
  ],
  [
    'OPTIONS /graphql',
    () => ({
      path: '/graphql',
      init: {
        method: 'OPTIONS',
        headers: { origin: ALLOWED_ORIGIN, 'access-control-request-method': 'POST' },
      },
      status: 204,
    }),
  ],
  [
    'POST /mcp',
    () => ({
      path: '/mcp',
      init: json(
        'POST',
        { ...asKey(), 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'socket', version: '1' } },
        },
      ),
      status: 200,
    }),
  ],
  ['GET /mcp', () => ({ path: '/mcp', init: { headers: asKey() }, status: 405 })],
  ['DELETE /mcp', () => ({ path: '/mcp', init: { method: 'DELETE', headers: asKey() }, status: 405 })],
];

/**
 * The routes of an upload in parts, as the CI token: one upload opened, read,
 * given a part and applied (which removes it), and a second one dropped. The
 * part lists what PUT /api/registry applied above, so the registry stays as it is.
 */
function uploadCalls(): [string, () => Call | Promise<Call>][] {
  // No body: no Content-Type either, as a client sends these.
  const bare = () => ({ authorization: asToken().authorization });
  const upload = (rest = '') => `/api/registry/uploads/${made.upload}${rest}`;
  return [
    [
      'POST /api/registry/uploads',
      () => ({ path: '/api/registry/uploads', init: { method: 'POST', headers: bare() }, status: 201 }),
    ],
    ['GET /api/registry/uploads/:upload_id', () => ({ path: upload(), init: { headers: bare() }, status: 200 })],
    [
      'PUT /api/registry/uploads/:upload_id/parts/:part',
      () => ({
        path: upload('/parts/1'),
        init: json('PUT', asToken(), doc(org.slug, [docMetric('orders', { lifecycle_status: 'RELEASED' })])),
        status: 200,
      }),
    ],
    [
      'POST /api/registry/uploads/:upload_id/apply',
      () => ({ path: upload('/apply'), init: { method: 'POST', headers: bare() }, status: 200 }),
    ],
    [
      'DELETE /api/registry/uploads/:upload_id',
      async () => {
        // An upload of its own: the one above is gone once applied.
        const spare = await createUpload(t.database.prisma, org.id);
        return {
          path: `/api/registry/uploads/${spare.upload_id}`,
          init: { method: 'DELETE', headers: bare() },
          status: 204,
        };
      },
    ],
  ];
}

/** The discussion routes, as the owner (a session), on the metric the list found. */
function discussionCalls(): [string, () => Call][] {
  const owner = () => ({ ...asAdmin(), 'content-type': 'application/json' });
  return [
    [
      'POST /api/metrics/:id/threads',
      () => ({
        path: `/api/metrics/${made.metric}/threads`,
        init: json('POST', owner(), { intent: 'objection', title: 'Socket', body: 'Over **TCP**.' }),
        status: 201,
      }),
    ],
    [
      'GET /api/metrics/:id/threads',
      () => ({ path: `/api/metrics/${made.metric}/threads`, init: { headers: asAdmin() }, status: 200 }),
    ],
    [
      'GET /api/threads/:id',
      () => ({ path: `/api/threads/${made.thread}`, init: { headers: asAdmin() }, status: 200 }),
    ],
    [
      'POST /api/threads/:id/messages',
      () => ({
        path: `/api/threads/${made.thread}/messages`,
        init: json('POST', owner(), { body: 'A reply.' }),
        status: 201,
      }),
    ],
    [
      'PATCH /api/messages/:id',
      () => ({ path: `/api/messages/${made.message}`, init: json('PATCH', owner(), { body: 'Edited.' }), status: 200 }),
    ],
    [
      'POST /api/messages/:id/pin',
      () => ({ path: `/api/messages/${made.message}/pin`, init: json('POST', owner(), {}), status: 200 }),
    ],
    [
      'DELETE /api/messages/:id/pin',
      () => ({
        path: `/api/messages/${made.message}/pin`,
        init: { method: 'DELETE', headers: asAdmin() },
        status: 200,
      }),
    ],
    [
      'POST /api/threads/:id/resolve',
      () => ({ path: `/api/threads/${made.thread}/resolve`, init: json('POST', owner(), {}), status: 200 }),
    ],
    [
      'POST /api/threads/:id/reopen',
      () => ({ path: `/api/threads/${made.thread}/reopen`, init: json('POST', owner(), {}), status: 200 }),
    ],
    [
      'DELETE /api/messages/:id',
      () => ({ path: `/api/messages/${made.message}`, init: { method: 'DELETE', headers: asAdmin() }, status: 200 }),
    ],
    [
      'POST /api/metrics/:id/challenges',
      () => ({
        path: `/api/metrics/${made.metric}/challenges`,
        init: json('POST', owner(), { reason: 'Why?' }),
        status: 201,
      }),
    ],
    [
      'GET /api/metrics/:id/challenges',
      () => ({ path: `/api/metrics/${made.metric}/challenges`, init: { headers: asAdmin() }, status: 200 }),
    ],
    [
      'POST /api/challenges/:id/decision',
      () => ({
        path: `/api/challenges/${made.challenge}/decision`,
        init: json('POST', owner(), { decision: 'accepted', reason: 'Because.' }),
        status: 200,
      }),
    ],
  ];
}

/** The discussion pages and their forms, as the owner (a session), on the metric the list found. */
function discussionPageCalls(): [string, () => Call][] {
  const page = (path: string) => ({ path: `/${org.slug}${path}`, init: { headers: asAdmin() }, status: 200 });
  const form = (path: string, fields: Record<string, string> = {}): Call => ({
    path: `/${org.slug}${path}`,
    init: {
      method: 'POST',
      headers: { ...asAdmin(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: csrfTokenOf(org.ownerSession), ...fields }).toString(),
    },
    status: 303,
  });
  const message = (action: string) => `/threads/${made.pageThread}/messages/${made.pageMessage}/${action}`;
  return [
    ['GET /:org/metrics/:id/threads/new', () => page(`/metrics/${made.metric}/threads/new`)],
    [
      'POST /:org/metrics/:id/threads/new',
      () => form(`/metrics/${made.metric}/threads/new`, { intent: 'question', title: 'Form', body: 'From a *page*.' }),
    ],
    ['GET /:org/threads/:threadId', () => page(`/threads/${made.pageThread}`)],
    ['POST /:org/threads/:threadId/reply', () => form(`/threads/${made.pageThread}/reply`, { body: 'A reply.' })],
    ['POST /:org/threads/:threadId/messages/:messageId/edit', () => form(message('edit'), { body: 'Edited.' })],
    ['POST /:org/threads/:threadId/messages/:messageId/pin', () => form(message('pin'))],
    ['POST /:org/threads/:threadId/messages/:messageId/unpin', () => form(message('unpin'))],
    ['POST /:org/threads/:threadId/resolve', () => form(`/threads/${made.pageThread}/resolve`)],
    ['POST /:org/threads/:threadId/reopen', () => form(`/threads/${made.pageThread}/reopen`)],
    ['POST /:org/threads/:threadId/messages/:messageId/delete', () => form(message('delete'))],
    ['GET /:org/metrics/:id/challenges', () => page(`/metrics/${made.metric}/challenges`)],
    ['POST /:org/metrics/:id/challenges', () => form(`/metrics/${made.metric}/challenges`, { reason: 'Why?' })],
    [
      'POST /:org/metrics/:id/challenges/:challengeId/decision',
      () =>
        form(`/metrics/${made.metric}/challenges/${made.pageChallenge}/decision`, {
          decision: 'rejected',
          reason: 'Because.',
        }),
    ],
  ];
}

/** What a call's answer gives later calls. */
async function remember(route: string, res: Response): Promise<void> {
  if (route === 'GET /api/v1/metrics') made.metric = (await res.clone().json()).data[0].id;
  const id = async () => (await res.clone().json()).data.id as string;
  if (route === 'POST /api/api-keys') made.apiKey = await id();
  if (route === 'POST /api/registry/uploads') made.upload = (await res.clone().json()).data.upload_id;
  if (route === 'POST /api/service-tokens') made.serviceToken = await id();
  if (route === 'POST /api/metrics/:id/threads') made.thread = await id();
  if (route === 'POST /api/threads/:id/messages') made.message = await id();
  if (route === 'POST /api/metrics/:id/challenges') made.challenge = await id();
  // A form post answers 303 to the page of what it made: /{org}/threads/{id}, #message-{id}, #challenge-{id}.
  const location = res.headers.get('location') ?? '';
  if (route === 'POST /:org/metrics/:id/threads/new') made.pageThread = location.split('/').pop() as string;
  if (route === 'POST /:org/threads/:threadId/reply') made.pageMessage = location.split('#message-')[1] as string;
  if (route === 'POST /:org/metrics/:id/challenges') made.pageChallenge = location.split('#challenge-')[1] as string;
  if (route === 'POST /api/webhooks') {
    const { data } = await res.clone().json();
    made.webhook = data.id;
    receiver.secret = data.secret;
  }
}

describe('every route through a listening socket', () => {
  it('the calls name exactly the routes the app registers (HEAD: each GET route again)', () => {
    const named = new Set(CALLS.map(([route]) => route));
    const routes = [...registered].filter((route) => !route.startsWith('HEAD '));
    expect(routes.length).toBeGreaterThan(20);
    expect(routes.filter((route) => !named.has(route)).sort(), 'routes without a socket call').toEqual([]);
    expect([...named].filter((route) => !registered.has(route)).sort(), 'calls of no route').toEqual([]);
    for (const route of registered) {
      if (route.startsWith('HEAD ')) expect(named.has(route.replace(/^HEAD/, 'GET')), route).toBe(true);
    }
  });

  it('each answers its valid call as it should over TCP, and HEAD as GET does', async () => {
    for (const [route, make] of CALLS) {
      const call = await make();
      const res = await send(call);
      const body = await res.clone().text();
      expect(res.status, `${route}: ${body.slice(0, 300)}`).toBe(call.status);
      await remember(route, res);
      if (route.startsWith('GET ') && registered.has(route.replace(/^GET/, 'HEAD'))) {
        const head = await send({ ...call, init: { ...call.init, method: 'HEAD' } });
        expect(head.status, `HEAD of ${route}`).toBe(call.head ?? call.status);
        expect(await head.text(), `HEAD of ${route}`).toBe('');
      }
    }
    // What the webhook test sent reached the receiver over its own connection.
    expect((await receiver.waitFor(1))[0]?.verified).toBe(true);
    // Some seventy calls one after another, on a machine that may be busy.
  }, 90_000);

  it('the Prometheus listener (METRICS_PORT) answers GET /metrics', async () => {
    const server = await startMetricsServer(metrics, 0, '127.0.0.1');
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('http_request_duration_seconds');
    } finally {
      server.close();
    }
  });
});
