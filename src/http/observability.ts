/**
 * Request ids and one structured log line per request: request id (an
 * incoming `X-Request-Id` when it is a sane token, else a new UUID, echoed
 * back), method, route, status, duration, organization and key. Nothing
 * from headers is logged, so no key, session token or cookie can leak.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../context.js';
import type { Metrics } from './metrics.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'fastify' {
  interface FastifyRequest {
    /** who the request was admitted as, once it was (for logs) */
    principal: Principal | null;
  }
}

export function requestId(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id'];
  const value = Array.isArray(incoming) ? incoming[0] : incoming;
  return value && REQUEST_ID.test(value) ? value : randomUUID();
}

export function notePrincipal(request: FastifyRequest, principal: Principal): void {
  request.principal = principal;
}

export function instrumentRequests(app: FastifyInstance, metrics: Metrics): void {
  app.decorateRequest('principal', null);
  // Callback hooks rather than async ones: they run on every request, and an async hook costs a promise each.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const principal = request.principal;
    // Unmatched URLs share one label so that scanners cannot blow up the series count.
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.requestDuration.observe(
      { method: request.method, route, status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    request.log.info(
      {
        method: request.method,
        route,
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 10) / 10,
        orgId: principal?.org.id ?? null,
        keyId: principal?.kind === 'api_key' ? principal.keyId : null,
        userId: principal?.kind === 'session' ? principal.userId : null,
      },
      'request completed',
    );
    done();
  });
}
