/**
 * Webhooks with several instances over one database, each running the
 * delivery worker: every event reaches every endpoint once, in order, and an
 * instance that stops in the middle of a delivery leaves it to another once
 * its lease expires. Also measures the time from an apply's commit to the
 * receiver (docs/webhooks.md, "Measured").
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.js';
import { doc, docMetric, HOST, newTeamOrg, putRegistry, type TeamOrg } from '../registry/support.js';

const WEBHOOKS = { allowHttp: true, allowPrivateNetworks: true, retryScheduleMs: [100, 200, 300] };

async function createHook(app: FastifyInstance, org: TeamOrg, receiver: Receiver): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: { host: HOST, cookie: `session=${org.ownerSession}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ url: receiver.url }),
  });
  expect(res.statusCode, res.body).toBe(201);
  receiver.secret = res.json().data.secret;
  return res.json().data.id;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

describe('three instances', () => {
  let t: TestApp;
  const instances: FastifyInstance[] = [];
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    t = await startTestApp({ poolSize: 4 });
    for (let i = 0; i < 3; i++) {
      instances.push(await buildTestInstance(t.database, { webhooks: WEBHOOKS, webhookWorker: {} }));
      receivers.push(await startReceiver());
    }
  });
  afterAll(async () => {
    for (const instance of instances) await instance.close();
    for (const receiver of receivers) await receiver.close();
    await t?.close();
  });

  it('deliver each event to each endpoint exactly once, in order; commit to receiver within a second', async () => {
    const org = await newTeamOrg(t.database.prisma, 'wh-three');
    for (const receiver of receivers) await createHook(instances[0] as FastifyInstance, org, receiver);
    const keys: string[] = [];
    /**
     * `applies` applies, the i-th through `via(i)`; resolves to the time from each commit to each receiver.
     * The response leaves right after the commit (in process, no socket in between).
     */
    async function measure(applies: number, via: (i: number) => FastifyInstance): Promise<number[]> {
      const latencies: number[] = [];
      for (let i = 0; i < applies; i++) {
        keys.push(`metric_${keys.length}`);
        const metrics = keys.map((key) => docMetric(key));
        const res = await putRegistry(via(i), doc(org.slug, metrics), { token: org.token });
        expect(res.statusCode, res.body).toBe(200);
        const committed = Date.now();
        for (const receiver of receivers) {
          const received = await receiver.waitFor(keys.length, 5000);
          latencies.push((received[keys.length - 1]?.at ?? Number.NaN) - committed);
        }
      }
      return latencies;
    }
    const report = (label: string, latencies: number[]) => {
      const sorted = latencies.map((ms) => Math.max(0, ms)).sort((a, b) => a - b);
      const [p50, p99] = [percentile(sorted, 50), percentile(sorted, 99)];
      console.log(
        `webhook latency, commit to receiver, 3 instances, ${latencies.length / receivers.length} applies x ` +
          `${receivers.length} endpoints, ${label}: p50 ${p50} ms, p99 ${p99} ms, max ${sorted.at(-1)} ms`,
      );
      return p99;
    };
    // Through the instances running workers: the committing instance's worker is woken at once.
    const woken = await measure(50, (i) => instances[i % instances.length] as FastifyInstance);
    // Through an instance without a worker: the others find the events by their poll.
    const polled = await measure(50, () => t.app);
    // Anything sent twice would arrive within this wait.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (const receiver of receivers) {
      expect(receiver.received).toHaveLength(keys.length);
      expect(receiver.received.every((r) => r.verified)).toBe(true);
      expect(receiver.received.map((r) => r.event.data.key)).toEqual(keys);
      expect(new Set(receiver.received.map((r) => r.id)).size).toBe(keys.length);
    }
    expect(report('applied on an instance with a worker', woken)).toBeLessThan(1000);
    expect(report('applied on an instance without one', polled)).toBeLessThan(1000);
  }, 120_000);
});

describe('an instance stopped mid-delivery', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('another instance delivers the event once the lease has expired', async () => {
    const leaseMs = 1500;
    const org = await newTeamOrg(t.database.prisma, 'wh-kill');
    const receiver = await startReceiver();
    const first = await buildTestInstance(t.database, {
      webhooks: WEBHOOKS,
      webhookWorker: { leaseMs, pollIntervalMs: 50 },
    });
    let second: FastifyInstance | null = null;
    try {
      const hook = await createHook(first, org, receiver);
      let release: (status: number) => void = () => {};
      receiver.answer = () =>
        new Promise((resolve) => {
          release = resolve;
        });
      const applied = await putRegistry(t.app, doc(org.slug, [docMetric('held')]), { token: org.token });
      expect(applied.statusCode).toBe(200);
      const [held] = await receiver.waitFor(1);
      const claimedAt = held?.at ?? 0;
      // The instance goes away while the receiver holds the request; its attempt is cut off.
      await first.close();
      receiver.answer = () => 200;
      second = await buildTestInstance(t.database, {
        webhooks: WEBHOOKS,
        webhookWorker: { leaseMs, pollIntervalMs: 50 },
      });
      await putRegistry(t.app, doc(org.slug, [docMetric('held'), docMetric('after')]), { token: org.token });
      const received = await receiver.waitFor(3, 10_000);
      release(200);
      const [again, next] = received.slice(1);
      expect(again?.id).toBe(held?.id);
      expect(again?.verified).toBe(true);
      expect((again?.at ?? 0) - claimedAt).toBeGreaterThanOrEqual(leaseMs - 100);
      expect(next?.event.data.key).toBe('after');
      // The cut-off attempt left no outcome; the two that reached the receiver are listed (each once its
      // answer is in).
      let statuses: number[] = [];
      for (const deadline = Date.now() + 5000; statuses.length < 2 && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const deliveries = await t.app.inject({
          method: 'GET',
          url: `/api/webhooks/${hook}/deliveries`,
          headers: { host: HOST, cookie: `session=${org.ownerSession}` },
        });
        statuses = deliveries.json().data.map((d: { status_code: number }) => d.status_code);
      }
      expect(statuses).toEqual([200, 200]);
    } finally {
      await first.close();
      await second?.close();
      await receiver.close();
    }
  }, 60_000);
});

describe.skipIf(lacks(POSTGRES))('a server process killed mid-delivery', () => {
  it('SIGKILL while the receiver holds the request: another instance delivers it after the lease', async () => {
    const leaseMs = 2000;
    const { target, drop } = await createTestTarget();
    if (target.kind !== 'postgres') throw new Error('expected PostgreSQL');
    const database = await openDatabase(target, { migrate: false, poolSize: 4 });
    const admin = await buildTestInstance(database, { webhooks: WEBHOOKS });
    const receiver = await startReceiver();
    let server: ServerProcess | null = null;
    let survivor: FastifyInstance | null = null;
    try {
      const org = await newTeamOrg(database.prisma, 'wh-sigkill');
      await createHook(admin, org, receiver);
      receiver.answer = () => new Promise(() => {});
      server = await startServerProcess({
        DATABASE_URL: target.url,
        LOG_LEVEL: 'error',
        WEBHOOK_ALLOW_HTTP: '1',
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: '1',
        WEBHOOK_TIMEOUT_MS: '1000',
        WEBHOOK_LEASE_MS: String(leaseMs),
      });
      // Applied here (no worker in this app): the server process's worker claims and sends it.
      const applied = await putRegistry(admin, doc(org.slug, [docMetric('killed')]), { token: org.token });
      expect(applied.statusCode).toBe(200);
      const [held] = await receiver.waitFor(1);
      await server.stop('SIGKILL');
      receiver.answer = () => 200;
      survivor = await buildTestInstance(database, {
        webhooks: WEBHOOKS,
        webhookWorker: { leaseMs, pollIntervalMs: 50 },
      });
      const [, again] = await receiver.waitFor(2, 10_000);
      expect(again?.id).toBe(held?.id);
      expect(again?.verified).toBe(true);
      expect((again?.at ?? 0) - (held?.at ?? 0)).toBeGreaterThanOrEqual(leaseMs - 300);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.received).toHaveLength(2);
    } finally {
      await server?.stop('SIGKILL');
      await survivor?.close();
      await admin.close();
      await receiver.close();
      await database.close();
      await drop();
    }
  }, 90_000);
});
