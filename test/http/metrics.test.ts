/** Prometheus metrics: request durations by route, 429s by limit, on their own listener. */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEnv } from '../../src/env.js';
import { createMetrics, startMetricsServer } from '../../src/http/metrics.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ slug: 'metered', plan: 'team' });
const key = org.key({ rate_limit_per_minute: 1 });
org.metric({ name: 'Revenue' });
const summaryKey = org.key();
const discussed = org.metric({ name: 'Bookings' });
org.message(org.thread(discussed, { intent: 'objection' }), { body: 'This double counts refunds.' });

const metrics = createMetrics();
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build(), metrics, throttle: { pointsPerMinute: 5, failureCost: 1 } });
});
afterAll(() => t.close());

describe('Prometheus metrics', () => {
  it('are served on their own listener, and count durations and rejections', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await t.get(`/api/v1/metrics/${discussed.id}/contract?summary=true`, summaryKey.secret);
      expect(res.statusCode).toBe(200);
    }
    expect((await t.get('/api/v1/metrics', key.secret)).statusCode).toBe(200);
    expect((await t.get('/api/v1/metrics', key.secret)).statusCode).toBe(429);
    expect((await t.get('/api/v1/metrics', key.secret)).statusCode).toBe(429);
    expect((await t.get('/api/v1/metrics', key.secret)).statusCode).toBe(429);

    const server = await startMetricsServer(metrics, 0, '127.0.0.1');
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const res = await fetch(`${base}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toMatch(
        /http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/metrics",status="200"\} 1/,
      );
      expect(text).toMatch(
        /http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/metrics",status="429"\} 3/,
      );
      expect(text).toMatch(/rate_limit_rejections_total\{limit="key"\} 2/);
      expect(text).toMatch(/rate_limit_rejections_total\{limit="throttle"\} 1/);
      expect(text).toContain('process_resident_memory_bytes');
      expect(text).toMatch(/discussion_summaries_total\{outcome="generated"\} 1/);
      expect(text).toMatch(/discussion_summaries_total\{outcome="cache_hit"\} 1/);
      expect(text).toMatch(/discussion_summary_charges_total 1/);
      expect((await fetch(`${base}/api/v1/metrics`)).status).toBe(404);
    } finally {
      server.close();
    }
  });

  it('listen on loopback by default; anywhere else only with METRICS_TOKEN', () => {
    const defaults = parseEnv({ METRICS_PORT: '9464' });
    expect([defaults.METRICS_HOST, defaults.METRICS_TOKEN]).toEqual(['127.0.0.1', undefined]);
    expect(parseEnv({ METRICS_PORT: '9464', METRICS_HOST: '::1' }).METRICS_HOST).toBe('::1');
    expect(() => parseEnv({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' })).toThrow(
      'METRICS_TOKEN: required when METRICS_HOST (0.0.0.0) is not a loopback address',
    );
    expect(() => parseEnv({ METRICS_PORT: '9464', HOST: '0.0.0.0' })).not.toThrow();
    const token = 'a-long-metrics-token-0123';
    expect(parseEnv({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0', METRICS_TOKEN: token }).METRICS_TOKEN).toBe(token);
    expect(() => parseEnv({ METRICS_TOKEN: 'short' })).toThrow('METRICS_TOKEN: must be at least 16 characters');
  });

  it('with a token, /metrics answers only its bearer: 401 with a challenge otherwise', async () => {
    const token = 'a-long-metrics-token-0123';
    const server = await startMetricsServer(metrics, 0, '127.0.0.1', token);
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
      const refused: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: token }];
      for (const headers of refused) {
        const res = await fetch(url, { headers });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        expect(await res.json()).toEqual({ error: 'Invalid or missing metrics token' });
      }
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('process_resident_memory_bytes');
    } finally {
      server.close();
    }
  });
});
