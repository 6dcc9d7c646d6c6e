/**
 * Prometheus metrics (prom-client), served on their own listener
 * (METRICS_PORT, off by default; on loopback unless METRICS_HOST says otherwise,
 * and then behind METRICS_TOKEN) so that they are never exposed with the API.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    requestDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    rejections: new Counter({
      name: 'rate_limit_rejections_total',
      help: 'Requests refused with 429, by limit (key: per-key or per-user budget, throttle: pre-verification)',
      labelNames: ['limit'] as const,
      registers,
    }),
    summaries: new Counter({
      name: 'discussion_summaries_total',
      help: 'Discussion summaries asked for, by outcome (generated, cache_hit, or the degraded reason)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    summaryCharges: new Counter({
      name: 'discussion_summary_charges_total',
      help: 'Meter events persisted for generated summaries',
      registers,
    }),
    longPolls: new Gauge({
      name: 'change_feed_long_polls',
      help: 'Requests of GET /api/v1/changes waiting for an event (long-polls) on this instance',
      registers,
    }),
    webhookAttempts: new Counter({
      name: 'webhook_attempts_total',
      help: 'Webhook delivery attempts by this instance, by outcome (delivered: a 2xx answer; failed: retried later)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    dependencyErrors: new Counter({
      name: 'dependency_errors_total',
      help: 'Failures of the database or Redis seen while serving',
      labelNames: ['dependency'] as const,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** Whether `authorization` is `Bearer <token>`, compared in constant time. */
function bearerMatches(authorization: string | undefined, token: string): boolean {
  const given = hash('sha256', authorization ?? '', 'buffer');
  return timingSafeEqual(given, hash('sha256', `Bearer ${token}`, 'buffer'));
}

/**
 * A listener that answers GET /metrics and nothing else; with `token`, only
 * to `Authorization: Bearer <token>` (METRICS_TOKEN, required by src/env.ts
 * when the listener is not on loopback).
 */
export function startMetricsServer(metrics: Metrics, port: number, host: string, token?: string): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json; charset=utf-8' }).end('{"error":"Not found"}');
      return;
    }
    if (token !== undefined && !bearerMatches(request.headers.authorization, token)) {
      response
        .writeHead(401, { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': 'Bearer' })
        .end('{"error":"Invalid or missing metrics token"}');
      return;
    }
    metrics.registry.metrics().then(
      (body) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
      () => response.writeHead(500).end(),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
