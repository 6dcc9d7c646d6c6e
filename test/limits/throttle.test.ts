/**
 * The pre-verification throttle: a per-client budget spent before any key
 * lookup, where a failed authentication costs more than a success, and
 * which answers identically whatever key (or prefix) was guessed.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ slug: 'throttled' });
const key = org.key();
org.metric({ name: 'Revenue' });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build(), throttle: { pointsPerMinute: 20, failureCost: 5 } });
});
afterAll(() => t.close());

let client = 0;
/** Each test is its own client address, so budgets do not leak between tests. */
function newClient() {
  client += 1;
  const remoteAddress = `10.0.0.${client}`;
  return (authorization?: string) =>
    t.inject({
      method: 'GET',
      url: '/api/v1/metrics',
      remoteAddress,
      headers: authorization ? { authorization } : {},
    });
}

function shape(res: LightMyRequestResponse) {
  return { status: res.statusCode, body: res.body, retryAfter: res.headers['retry-after'] !== undefined };
}

describe('pre-verification throttle', () => {
  it('lets successful requests spend one point each', async () => {
    const send = newClient();
    for (let i = 0; i < 20; i++) expect((await send(`Bearer ${key.secret}`)).statusCode).toBe(200);
    const blocked = await send(`Bearer ${key.secret}`);
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json()).toEqual({ error: 'Rate limit exceeded' });
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('charges failed attempts more, and then stops even a valid key from that client', async () => {
    const send = newClient();
    for (let i = 0; i < 4; i++) expect((await send(`Bearer cl_${'0'.repeat(40)}`)).statusCode).toBe(401);
    expect((await send(`Bearer ${key.secret}`)).statusCode).toBe(429);
    // Another client is unaffected.
    expect((await newClient()(`Bearer ${key.secret}`)).statusCode).toBe(200);
  });

  it('counts malformed headers as failures too', async () => {
    const send = newClient();
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await send(i % 2 ? 'Basic abc' : 'Bearer nope')).statusCode);
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
  });

  it('answers the same whether or not a guessed key shares a real key’s prefix', async () => {
    const withRealPrefix = `Bearer ${key.secret.slice(0, 11)}${'f'.repeat(32)}`;
    const withUnknownPrefix = `Bearer cl_${'e'.repeat(40)}`;
    const a = newClient();
    const b = newClient();
    const seenA = [];
    const seenB = [];
    for (let i = 0; i < 6; i++) {
      seenA.push(shape(await a(withRealPrefix)));
      seenB.push(shape(await b(withUnknownPrefix)));
    }
    expect(seenA).toEqual(seenB);
    expect(seenA.map((s) => s.status)).toEqual([401, 401, 401, 401, 429, 429]);
  });
});
