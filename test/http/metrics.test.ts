/** Prometheus metrics: request durations by route, 429s by limit, on their own listener. */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
});
