/**
 * Webhooks (docs/webhooks.md): the admin routes and their refusals, SSRF
 * checks, every event type delivered from real applies, validation evidence
 * and discussions to a real receiver verifying signatures with `standardwebhooks`,
 * retries in order, the deliveries listing and disabling.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANGE_EVENT_TYPES } from '../../src/changes/event.js';
import { runCli } from '../../src/cli-commands.js';
import { parseEnv } from '../../src/env.js';
import { createMetrics } from '../../src/http/metrics.js';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../src/webhooks/settings.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.js';
import {
  doc,
  docMetric,
  HOST,
  newTeamOrg,
  postValidations,
  putRegistry,
  type TeamOrg,
  uuidV5,
} from '../registry/support.js';

const FAST = { allowHttp: true, allowPrivateNetworks: true, retryScheduleMs: [100, 200, 300], timeoutMs: 2000 };

let t: TestApp;
const metrics = createMetrics();
beforeAll(async () => {
  t = await startTestApp({ webhooks: FAST, webhookWorker: { pollIntervalMs: 100, leaseMs: 5000 }, metrics });
});

/** The value of webhook_attempts_total for `outcome` on the app's Prometheus registry. */
async function attempts(outcome: 'delivered' | 'failed'): Promise<number> {
  const { values } = await metrics.webhookAttempts.get();
  return values.find((value) => value.labels.outcome === outcome)?.value ?? 0;
}
afterAll(async () => t?.close());

function call(method: string, url: string, org: TeamOrg, payload?: unknown, app: { inject: TestApp['inject'] } = t) {
  return app.inject({
    method: method as 'GET',
    url,
    headers: {
      host: HOST,
      cookie: `session=${org.ownerSession}`,
      ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
  });
}

async function createHook(org: TeamOrg, receiver: Receiver, extra: Record<string, unknown> = {}) {
  const res = await call('POST', '/api/webhooks', org, { url: receiver.url, ...extra });
  expect(res.statusCode, res.body).toBe(201);
  const { data } = res.json();
  receiver.secret = data.secret;
  return data as { id: string; secret: string };
}

async function apply(org: TeamOrg, metrics: ReturnType<typeof docMetric>[], query?: string, app: TestApp = t) {
  const res = await putRegistry(app, doc(org.slug, metrics), { token: org.token, query });
  expect(res.statusCode, res.body).toBe(200);
}

describe('administration', () => {
  let org: TeamOrg;
  let receiver: Receiver;
  beforeAll(async () => {
    org = await newTeamOrg(t.database.prisma, 'wh-admin');
    receiver = await startReceiver();
  });
  afterAll(() => receiver.close());

  it('creates (secret once), lists, tests, lists deliveries, deletes; another organization sees 404', async () => {
    const res = await call('POST', '/api/webhooks', org, {
      url: receiver.url,
      types: ['metric.created'],
      description: 'BI cache',
    });
    expect(res.statusCode, res.body).toBe(201);
    const created = res.json().data;
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice(6), 'base64')).toHaveLength(32);
    receiver.secret = created.secret;

    const list = (await call('GET', '/api/webhooks', org)).json().data;
    expect(list).toEqual([
      expect.objectContaining({
        id: created.id,
        url: receiver.url,
        types: ['metric.created'],
        description: 'BI cache',
        disabled_at: null,
        failing_since: null,
        last_delivery: null,
      }),
    ]);
    expect(JSON.stringify(list)).not.toContain(created.secret);

    const tested = await call('POST', `/api/webhooks/${created.id}/test`, org, {});
    expect(tested.statusCode, tested.body).toBe(200);
    expect(tested.json().data).toMatchObject({ type: 'webhook.test', delivered: true, status_code: 204, error: null });
    const [received] = await receiver.waitFor(1);
    expect(received?.verified).toBe(true);
    expect(received?.headers['content-type']).toBe('application/json');
    expect(received?.event).toMatchObject({ type: 'webhook.test', subject: created.id });

    const deliveries = (await call('GET', `/api/webhooks/${created.id}/deliveries`, org)).json().data;
    expect(deliveries).toEqual([
      expect.objectContaining({
        event_id: received?.id,
        type: 'webhook.test',
        attempt: 1,
        status_code: 204,
        error: null,
      }),
    ]);
    expect((await call('GET', '/api/webhooks', org)).json().data[0].last_delivery).toMatchObject({ status_code: 204 });

    const other = await newTeamOrg(t.database.prisma, 'wh-other');
    for (const [method, url] of [
      ['DELETE', `/api/webhooks/${created.id}`],
      ['GET', `/api/webhooks/${created.id}/deliveries`],
      ['POST', `/api/webhooks/${created.id}/test`],
      ['DELETE', '/api/webhooks/not-a-uuid'],
    ] as const) {
      const res = await call(method, url, other, method === 'POST' ? {} : undefined);
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toEqual({ error: 'Webhook not found' });
    }
    expect((await call('GET', '/api/webhooks', other)).json().data).toEqual([]);

    expect((await call('DELETE', `/api/webhooks/${created.id}`, org)).statusCode).toBe(200);
    expect((await call('GET', '/api/webhooks', org)).json().data).toEqual([]);
    expect((await call('DELETE', `/api/webhooks/${created.id}`, org)).statusCode).toBe(404);
  });

  it('POST /test delivers over a real connection, and answers the outcome', async () => {
    // Through inject the request never closes; on a socket Node closes it once its body is read, and the
    // attempt must not be cut off by that.
    const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const hook = await createHook(org, receiver);
    const before = receiver.received.length;
    const res = await fetch(new URL(`/api/webhooks/${hook.id}/test`, base), {
      method: 'POST',
      headers: { cookie: `session=${org.ownerSession}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.data).toMatchObject({ type: 'webhook.test', delivered: true, status_code: 204, error: null });
    const received = (await receiver.waitFor(before + 1))[before];
    expect(received?.verified).toBe(true);
    expect(received?.event).toMatchObject({ type: 'webhook.test', subject: hook.id });
    expect((await call('DELETE', `/api/webhooks/${hook.id}`, org)).statusCode).toBe(200);
  });

  it('refuses bad input with a clear 4xx', async () => {
    const cases: [unknown, number, RegExp][] = [
      [{ url: 'not a url' }, 400, /spaces or control/],
      [{ url: 'nope' }, 400, /not a valid absolute URL/],
      [{ url: 'ftp://example.com/x' }, 400, /https:\/\/ or http:\/\//],
      [{ url: `https://example.com/${'a'.repeat(2048)}` }, 400, /at most 2048/],
      [{ url: 'https://user:pw@example.com/' }, 400, /credentials/],
      [{ url: 'https://example.com/#frag' }, 400, /fragment/],
      [{ url: 'https://example.com/\u0007' }, 400, /control/],
      [{ url: receiver.url, types: ['metric.exploded'] }, 400, /unknown event type "metric.exploded"/],
      [{ url: receiver.url, types: [] }, 400, /at least one event type/],
      [{ url: receiver.url, description: 'a\u0000b' }, 400, /control characters/],
      [{ url: receiver.url, description: 'x'.repeat(501) }, 400, /at most 500/],
      [{ url: receiver.url, secret: 'mine' }, 400, /unknown member/],
      [{ url: 42 }, 400, /url must be a string/],
      [{}, 400, /url/],
      ['{"url":', 400, /./],
      [{ url: receiver.url, description: 'x'.repeat(20_000) }, 413, /too large/],
    ];
    for (const [body, status, message] of cases) {
      const res = await call('POST', '/api/webhooks', org, body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(res.json().error, JSON.stringify(body).slice(0, 80)).toMatch(message);
    }
    const text = await t.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: { host: HOST, cookie: `session=${org.ownerSession}`, 'content-type': 'text/plain' },
      payload: '{}',
    });
    expect(text.statusCode).toBe(415);
    const crossSite = await t.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: {
        host: HOST,
        cookie: `session=${org.ownerSession}`,
        'content-type': 'application/json',
        origin: 'https://evil.example',
      },
      payload: JSON.stringify({ url: receiver.url }),
    });
    expect(crossSite.statusCode).toBe(403);
    const anonymous = await t.inject({ method: 'GET', url: '/api/webhooks', headers: { host: HOST } });
    expect(anonymous.statusCode).toBe(401);
    const withKey = await t.inject({
      method: 'GET',
      url: '/api/webhooks',
      headers: { host: HOST, authorization: `Bearer ${org.key}` },
    });
    expect([401, 403]).toContain(withKey.statusCode);
  });

  it('at most 20 webhooks per organization (409)', async () => {
    const crowded = await newTeamOrg(t.database.prisma, 'wh-many');
    for (let i = 0; i < 20; i++) {
      expect((await call('POST', '/api/webhooks', crowded, { url: `${receiver.url}/${i}` })).statusCode).toBe(201);
    }
    const res = await call('POST', '/api/webhooks', crowded, { url: receiver.url });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatch(/at most 20 webhooks/);
  });

  it('the CLI creates, lists and deletes', async () => {
    const out: string[] = [];
    const deps = {
      prisma: t.database.prisma,
      out: (line: string) => out.push(line),
      err: (line: string) => out.push(line),
      webhooks: { ...DEFAULT_WEBHOOK_SETTINGS, ...FAST },
    };
    const cliOrg = await newTeamOrg(t.database.prisma, 'wh-cli');
    expect(
      await runCli(
        ['webhooks:create', '--org', cliOrg.slug, '--url', receiver.url, '--types', 'metric.created,metric.removed'],
        deps,
      ),
    ).toBe(0);
    const secret = out.at(-1) ?? '';
    expect(secret).toMatch(/^whsec_/);
    const id = /Created webhook (\S+)/.exec(out.join('\n'))?.[1] ?? '';
    out.length = 0;
    expect(await runCli(['webhooks:list', '--org', cliOrg.slug], deps)).toBe(0);
    expect(out.join('\n')).toContain(id);
    expect(out.join('\n')).not.toContain(secret);
    expect(
      await runCli(['webhooks:create', '--org', cliOrg.slug, '--url', 'https://127.0.0.1/'], {
        ...deps,
        webhooks: DEFAULT_WEBHOOK_SETTINGS,
      }),
    ).toBe(1);
    expect(out.at(-1)).toMatch(/not a public address/);
    expect(await runCli(['webhooks:enable', '--org', cliOrg.slug, '--id', id], deps)).toBe(0);
    expect(out.at(-1)).toBe(`Webhook ${id} is not disabled: nothing to do.`);
    expect(await runCli(['webhooks:delete', '--org', cliOrg.slug, '--id', id], deps)).toBe(0);
    expect(await runCli(['webhooks:enable', '--org', cliOrg.slug, '--id', id], deps)).toBe(1);
    expect(await runCli(['webhooks:delete', '--org', cliOrg.slug, '--id', id], deps)).toBe(1);
  });
});

describe('configuration', () => {
  it('reads WEBHOOK_* variables and refuses bad ones at start', () => {
    const env = parseEnv({ WEBHOOK_RETRY_SCHEDULE: '100ms, 5s,2m,1h,1d', WEBHOOK_DISABLE_AFTER: '2d' });
    expect(env.WEBHOOK_RETRY_SCHEDULE).toEqual([100, 5000, 120_000, 3_600_000, 86_400_000]);
    expect(env.WEBHOOK_DISABLE_AFTER).toBe(2 * 86_400_000);
    expect(parseEnv({}).WEBHOOK_RETRY_SCHEDULE).toEqual([
      5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
    ]);
    expect(() => parseEnv({ WEBHOOK_RETRY_SCHEDULE: '5s,soon' })).toThrow(/WEBHOOK_RETRY_SCHEDULE: .*\(not: soon\)/);
    expect(() => parseEnv({ WEBHOOK_DISABLE_AFTER: '0s' })).toThrow(/WEBHOOK_DISABLE_AFTER/);
    expect(() => parseEnv({ WEBHOOK_LEASE_MS: '5000', WEBHOOK_TIMEOUT_MS: '10000' })).toThrow(
      /WEBHOOK_LEASE_MS: must be above/,
    );
    // Retention must outlast an endpoint that is still enabled.
    expect(() => parseEnv({ CHANGES_RETENTION_DAYS: '5' })).toThrow(/CHANGES_RETENTION_DAYS: must be longer/);
    expect(parseEnv({ CHANGES_RETENTION_DAYS: '5', WEBHOOK_DISABLE_AFTER: '2d' }).CHANGES_RETENTION_DAYS).toBe(5);
  });
});

describe('SSRF', () => {
  let strict: TestApp['app'];
  let org: TeamOrg;
  beforeAll(async () => {
    strict = await buildTestInstance(t.database, { webhooks: { allowHttp: true } });
    org = await newTeamOrg(t.database.prisma, 'wh-ssrf');
  });
  afterAll(() => strict?.close());

  it('refuses every non-public address, however written, when created', async () => {
    for (const url of [
      'http://127.0.0.1/',
      'http://127.1.2.3:8080/x',
      'http://localhost/',
      'http://10.0.0.1/',
      'http://172.16.5.4/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://0.0.0.0/',
      'http://[::1]/',
      'http://[::]/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://[ff02::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://224.0.0.1/',
      'http://255.255.255.255/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://0177.0.0.1/',
      'http://017700000001/',
      'http://[::127.0.0.1]/',
      'http://[::a9fe:a9fe]/latest/meta-data/',
      'http://[64:ff9b::7f00:1]/',
      'http://[2002:7f00:1::]/',
      'http://[2001:db8::1]/',
      'http://198.18.0.1/',
      'http://192.0.2.1/',
    ]) {
      const res = await call('POST', '/api/webhooks', org, { url }, strict);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error, url).toMatch(/not a public address/);
    }
    const unresolved = await call('POST', '/api/webhooks', org, { url: 'http://no-such-host.invalid/' }, strict);
    expect(unresolved.statusCode).toBe(400);
    expect(unresolved.json().error).toMatch(/does not resolve/);
    // https only unless WEBHOOK_ALLOW_HTTP.
    const httpsOnly = await buildTestInstance(t.database, {});
    try {
      const res = await call('POST', '/api/webhooks', org, { url: 'http://93.184.215.14/' }, httpsOnly);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('url must be an https:// URL');
      // A public literal address passes the check (no connection is made at creation).
      expect(
        (await call('POST', '/api/webhooks', org, { url: 'https://93.184.215.14/hook' }, httpsOnly)).statusCode,
      ).toBe(201);
    } finally {
      await httpsOnly.close();
    }
  });

  it('checks again when each delivery connects: an endpoint stored earlier is not reached', async () => {
    const receiver = await startReceiver();
    try {
      // Created where private networks were allowed; delivered by an instance where they are not.
      const hook = await createHook(org, receiver);
      const tested = await call('POST', `/api/webhooks/${hook.id}/test`, org, {}, strict);
      expect(tested.statusCode).toBe(200);
      expect(tested.json().data).toMatchObject({ delivered: false, status_code: null });
      expect(tested.json().data.error).toMatch(/not a public address/);
      expect(receiver.received).toEqual([]);
    } finally {
      await receiver.close();
    }
  });
});

describe('deliveries', () => {
  it('delivers every event type from real applies, validations and discussions, signed, in order', async () => {
    const org = await newTeamOrg(t.database.prisma, 'wh-types');
    const receiver = await startReceiver();
    try {
      await apply(org, [docMetric('before_hook')]);
      await createHook(org, receiver);
      await apply(org, [
        docMetric('before_hook'),
        docMetric('revenue', {
          lifecycle_status: 'DRAFT',
          versions: [{ definition_version: '1.0.0', status: 'draft', released_at: null }],
        }),
        docMetric('orders', { lifecycle_status: 'RELEASED' }),
      ]);
      await apply(org, [
        docMetric('before_hook'),
        docMetric('revenue', {
          name: 'Net revenue',
          lifecycle_status: 'RELEASED',
          versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-11-01T00:00:00Z' }],
        }),
        docMetric('orders', { lifecycle_status: 'RELEASED' }),
      ]);
      const validated = await postValidations(
        t,
        { results: [{ metric_key: 'orders', ran_at: new Date().toISOString(), status: 'passed', source: 'ci' }] },
        { token: org.token },
      );
      expect(validated.statusCode, validated.body).toBe(200);
      const discussed = await call('POST', `/api/metrics/${uuidV5(org.id, 'orders')}/threads`, org, {
        intent: 'question',
        title: 'Which orders count?',
        body: 'Are cancelled orders counted?',
      });
      expect(discussed.statusCode, discussed.body).toBe(201);
      await apply(
        org,
        [
          docMetric('revenue', {
            name: 'Net revenue',
            lifecycle_status: 'RELEASED',
            versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-11-01T00:00:00Z' }],
          }),
          docMetric('orders', { lifecycle_status: 'RELEASED' }),
        ],
        'prune=true',
      );
      // Listed again, the removed metric is restored.
      await apply(org, [docMetric('before_hook')]);
      const feed = await t.get('/api/v1/changes?limit=500', org.key);
      const events = feed.json().data as { id: string; type: string; data: { key: string } }[];
      const afterHook = events.slice(events.findIndex((e) => e.type === 'metric.created' && e.data.key === 'revenue'));
      const received = await receiver.waitFor(afterHook.length);
      expect(received.map((r) => r.id)).toEqual(afterHook.map((e) => e.id));
      expect(received.every((r) => r.verified)).toBe(true);
      expect(received.map((r) => r.event)).toEqual(afterHook);
      expect(new Set(received.map((r) => r.event.type))).toEqual(new Set(CHANGE_EVENT_TYPES));
      expect(received.some((r) => r.event.data.key === 'before_hook' && r.event.type === 'metric.created')).toBe(false);
      // Tampering is caught by the receiver's check.
      const [first] = received;
      const { Webhook } = await import('standardwebhooks');
      expect(() => new Webhook(receiver.secret).verify(`${first?.body} `, first?.headers ?? {})).toThrow();
    } finally {
      await receiver.close();
    }
  });

  it('only the types asked for', async () => {
    const org = await newTeamOrg(t.database.prisma, 'wh-filter');
    const receiver = await startReceiver();
    try {
      await createHook(org, receiver, { types: ['metric.removed'] });
      await apply(org, [docMetric('a'), docMetric('b')]);
      await apply(org, [docMetric('a')], 'prune=true');
      const [only] = await receiver.waitFor(1);
      expect(only?.event).toMatchObject({ type: 'metric.removed', data: { key: 'b' } });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.received).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('retries a failing event with backoff, holding the later ones, then delivers in order', async () => {
    const org = await newTeamOrg(t.database.prisma, 'wh-retry');
    const receiver = await startReceiver();
    try {
      const hook = await createHook(org, receiver);
      const before = { delivered: await attempts('delivered'), failed: await attempts('failed') };
      let failures = 0;
      receiver.answer = () => (failures++ < 3 ? 503 : 200);
      await apply(org, [docMetric('first')]);
      await apply(org, [docMetric('first'), docMetric('second')]);
      await apply(org, [docMetric('first'), docMetric('second'), docMetric('third')]);
      const received = await receiver.waitFor(6, 15_000);
      const keys = received.map((r) => `${r.event.type} ${r.event.data.key}`);
      expect(keys).toEqual([
        'metric.created first',
        'metric.created first',
        'metric.created first',
        'metric.created first',
        'metric.created second',
        'metric.created third',
      ]);
      expect(new Set(received.slice(0, 4).map((r) => r.id)).size).toBe(1);
      expect(received.every((r) => r.verified)).toBe(true);
      // Backoff: 100, 200, 300 ms between the attempts.
      const gaps = received.slice(1, 4).map((r, i) => r.at - (received[i]?.at ?? 0));
      expect(gaps[0]).toBeGreaterThanOrEqual(90);
      expect(gaps[1]).toBeGreaterThanOrEqual(190);
      expect(gaps[2]).toBeGreaterThanOrEqual(290);
      // An attempt is recorded once its answer is in: the last one a moment after the receiver saw it.
      let deliveries: { attempt: number; status_code: number }[] = [];
      for (const deadline = Date.now() + 5000; deliveries.length < 6 && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        deliveries = (await call('GET', `/api/webhooks/${hook.id}/deliveries`, org)).json().data;
      }
      expect(
        deliveries.map((d: { attempt: number; status_code: number }) => [d.attempt, d.status_code]).reverse(),
      ).toEqual([
        [1, 503],
        [2, 503],
        [3, 503],
        [4, 200],
        [1, 200],
        [1, 200],
      ]);
      // The Prometheus counter of the worker's attempts (other tests' deliveries may run beside).
      expect((await attempts('failed')) - before.failed).toBeGreaterThanOrEqual(3);
      expect((await attempts('delivered')) - before.delivered).toBeGreaterThanOrEqual(3);
      const [listed] = (await call('GET', '/api/webhooks', org)).json().data;
      expect(listed).toMatchObject({ failing_since: null, disabled_at: null, last_delivery: { status_code: 200 } });
    } finally {
      await receiver.close();
    }
  });

  it('a timeout and a refused connection are failures; failing longer than the limit disables the endpoint', async () => {
    // An app and database of its own: the shared worker has other timeouts.
    const own = await startTestApp({
      webhooks: { ...FAST, timeoutMs: 300, disableAfterMs: 1000 },
      webhookWorker: { pollIntervalMs: 50, leaseMs: 5000 },
    });
    const app = own.app;
    const org = await newTeamOrg(own.database.prisma, 'wh-disable');
    const receiver = await startReceiver();
    try {
      const res = await call('POST', '/api/webhooks', org, { url: receiver.url }, app);
      const hook = res.json().data;
      receiver.secret = hook.secret;
      receiver.answer = () => new Promise((resolve) => setTimeout(() => resolve(200), 1000));
      await apply(org, [docMetric('slow')], undefined, own);
      await receiver.waitFor(1);
      const deadline = Date.now() + 10_000;
      let listed: Record<string, unknown> = {};
      while (Date.now() < deadline) {
        [listed = {}] = (await call('GET', '/api/webhooks', org, undefined, app)).json().data;
        if (listed.disabled_at) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(listed.disabled_at).toEqual(expect.any(String));
      expect(listed.disabled_reason).toBe('failing for more than 1 second without a success');
      expect(listed.failing_since).toEqual(expect.any(String));
      const deliveries = (await call('GET', `/api/webhooks/${hook.id}/deliveries`, org, undefined, app)).json().data;
      expect(deliveries[0].error).toBe('no answer within 300 ms');
      const count = receiver.received.length;
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(receiver.received).toHaveLength(count);

      // Enabled again once the receiver answers: the held event first, then a later one, in order.
      receiver.answer = () => 200;
      await apply(org, [docMetric('slow'), docMetric('later')], undefined, own);
      const enabled = await call('POST', `/api/webhooks/${hook.id}/enable`, org, {}, app);
      expect(enabled.json()).toEqual({ data: { id: hook.id, enabled: true, skipped_expired_events: false } });
      const resumed = await receiver.waitFor(count + 2, 10_000);
      expect(resumed.slice(count).map((r) => `${r.event.type} ${r.event.data.key}`)).toEqual([
        'metric.created slow',
        'metric.created later',
      ]);
      expect(resumed.slice(count).every((r) => r.verified)).toBe(true);
      const [healthy] = (await call('GET', '/api/webhooks', org, undefined, app)).json().data;
      expect(healthy).toMatchObject({ disabled_at: null, disabled_reason: null, failing_since: null });
      // Enabling an enabled endpoint changes nothing; another organization's is 404.
      const again = await call('POST', `/api/webhooks/${hook.id}/enable`, org, {}, app);
      expect(again.json().data).toMatchObject({ enabled: false });
      const stranger = await newTeamOrg(own.database.prisma, 'wh-stranger');
      expect((await call('POST', `/api/webhooks/${hook.id}/enable`, stranger, {}, app)).statusCode).toBe(404);

      // Refused connection: recorded as such.
      await receiver.close();
      const gone = await call('POST', `/api/webhooks/${hook.id}/test`, org, {}, app);
      expect(gone.json().data.error).toMatch(/connection failed: ECONNREFUSED/);
    } finally {
      await receiver.close().catch(() => {});
      await own.close();
    }
  });
});
