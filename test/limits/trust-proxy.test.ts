/**
 * TRUST_PROXY (issue: `true` let a client name its own address in
 * X-Forwarded-For and escape the pre-verification throttle; `false` behind a
 * load balancer put every client in one bucket). A hop count or the
 * balancer's addresses take the client from the right of X-Forwarded-For,
 * where the balancer wrote it, so a spoofed leftmost entry buys nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseEnv, type TrustProxy } from '../../src/env.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const r = registry();
const org = r.org();
org.metric({ name: 'Revenue' });
const fixture = r.build();

const BALANCER = '10.1.2.3';
const BUDGET = 5;

describe('TRUST_PROXY parsing', () => {
  const parse = (value: string) => parseEnv({ TRUST_PROXY: value }).TRUST_PROXY;
  it('takes false, true, a hop count, or addresses and CIDR ranges', () => {
    expect(parseEnv({}).TRUST_PROXY).toBe(false);
    expect(parse('false')).toBe(false);
    expect(parse('true')).toBe(true);
    expect(parse('1')).toBe(1);
    expect(parse('0')).toBe(false);
    expect(parse('10.0.0.0/8, 192.168.1.7,::1/128, fd00::/8')).toEqual([
      '10.0.0.0/8',
      '192.168.1.7',
      '::1/128',
      'fd00::/8',
    ]);
    expect(parse('loopback')).toEqual(['loopback']);
  });

  it.each(['yes', '10.0.0.0/33', '300.1.1.1', '10.0.0.1,', 'true,10.0.0.1', '-1', '1000'])('refuses %j', (value) => {
    expect(() => parse(value)).toThrow(/TRUST_PROXY/);
  });
});

describe('the throttle behind a proxy', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function start(trustProxy: TrustProxy) {
    t = await startTestApp({ fixture, trustProxy, throttle: { pointsPerMinute: BUDGET, failureCost: 1 } });
    const app = t;
    return (forwardedFor: string, remoteAddress = BALANCER) =>
      app.inject({
        method: 'GET',
        url: '/api/v1/metrics',
        remoteAddress,
        headers: { 'x-forwarded-for': forwardedFor },
      });
  }

  /** One client behind the balancer, naming a new address of its own in every request. */
  async function spoofing(send: (xff: string) => ReturnType<TestApp['inject']>) {
    const statuses: number[] = [];
    for (let i = 0; i < BUDGET + 2; i++) statuses.push((await send(`198.51.100.${i}, 203.0.113.9`)).statusCode);
    return statuses;
  }

  it.each<[string, TrustProxy]>([
    ['a hop count of 1', 1],
    ['the balancer address', [BALANCER]],
    ['the balancer range', ['10.0.0.0/8']],
  ])('with %s, a spoofed leftmost X-Forwarded-For gets no fresh bucket', async (_name, trust) => {
    const send = await start(trust);
    const statuses = await spoofing(send);
    expect(statuses.slice(0, BUDGET).every((s) => s === 401)).toBe(true);
    expect(statuses.slice(BUDGET)).toEqual([429, 429]);
    // Another client behind the same balancer has its own budget.
    expect((await send('203.0.113.10')).statusCode).toBe(401);
  });

  it('with an address list, a client that is not the balancer cannot name an address at all', async () => {
    const send = await start([BALANCER]);
    const statuses: number[] = [];
    for (let i = 0; i < BUDGET + 1; i++) statuses.push((await send(`203.0.113.${i}`, '192.0.2.50')).statusCode);
    expect(statuses.at(-1)).toBe(429);
  });

  it('with false, X-Forwarded-For is ignored: the socket address is the client', async () => {
    const send = await start(false);
    const statuses: number[] = [];
    for (let i = 0; i < BUDGET + 1; i++) statuses.push((await send(`203.0.113.${i}`)).statusCode);
    expect(statuses.at(-1)).toBe(429);
  });

  it('with true (unsafe on the open internet), a spoofed leftmost entry is a fresh bucket', async () => {
    const send = await start(true);
    const statuses = await spoofing(send);
    expect(statuses.every((s) => s === 401)).toBe(true);
  });
});
