/** Request ids and request logs: fields present, secrets absent. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ slug: 'observed' });
const key = org.key();
const owner = org.user({ role: 'owner', session_token: true });
org.metric({ name: 'Revenue' });

const lines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    lines.push(...chunk.toString().split('\n').filter(Boolean));
    done();
  },
});

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build(), logger: pino({ level: 'info' }, sink) });
});
afterAll(() => t.close());

function logOf(requestId: string) {
  return lines.map((line) => JSON.parse(line)).filter((entry) => entry.requestId === requestId);
}

describe('request ids', () => {
  it('echoes a sane incoming X-Request-Id', async () => {
    const res = await t.get('/api/v1/metrics', key.secret, { 'x-request-id': 'trace-abc.123' });
    expect(res.headers['x-request-id']).toBe('trace-abc.123');
  });

  it('replaces a missing or unsafe one with a new UUID', async () => {
    const cases: Record<string, string>[] = [
      {},
      { 'x-request-id': 'bad id\twith spaces' },
      { 'x-request-id': 'x'.repeat(500) },
    ];
    for (const headers of cases) {
      const res = await t.get('/healthz', null, headers);
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});

describe('request logs', () => {
  it('carry route, status, duration, organization and key', async () => {
    await t.get('/api/v1/metrics?q=revenue', key.secret, { 'x-request-id': 'logged-1' });
    const [entry] = logOf('logged-1');
    expect(entry).toMatchObject({
      msg: 'request completed',
      method: 'GET',
      route: '/api/v1/metrics',
      status: 200,
      orgId: org.id,
      keyId: key.id,
    });
    expect(typeof entry.durationMs).toBe('number');
  });

  it('never contain a key, session token or Authorization header', async () => {
    await t.get('/api/v1/metrics', key.secret, { 'x-request-id': 'secret-1' });
    await t.get('/api/v1/metrics', `${key.secret.slice(0, -1)}0`, { 'x-request-id': 'secret-2' });
    await t.inject({
      method: 'GET',
      url: '/api/api-keys',
      headers: { cookie: `session=${owner.session_token}`, 'x-request-id': 'secret-3' },
    });
    await t.inject({
      method: 'POST',
      url: '/graphql',
      headers: {
        authorization: `Bearer ${key.secret}`,
        'content-type': 'application/json',
        'x-request-id': 'secret-4',
      },
      payload: { query: '{ metrics { pagination { total } } }' },
    });
    const all = lines.join('\n');
    expect(logOf('secret-3')[0]).toMatchObject({ status: 200, userId: owner.id });
    expect(all).not.toContain(key.secret);
    expect(all).not.toContain(key.secret.slice(3));
    expect(all).not.toContain(String(owner.session_token));
    expect(all.toLowerCase()).not.toContain('authorization');
    expect(all.toLowerCase()).not.toContain('bearer');
  });
});
