/**
 * GET /: a browser (Accept: text/html) is sent to the API reference at /docs;
 * any other client gets the service's links as JSON. Counted in the client's
 * throttle like the other pages that need no credentials.
 */
import type { FastifyInstance } from 'fastify';
import { type AccessDeps, throttleClient } from './request-auth.js';

/** The service's entry points, relative to its base URL (the start banner lists the same). */
export const serviceLinks = {
  api: '/api/v1/metrics',
  openapi: '/api/v1/openapi.json',
  docs: '/docs',
  graphql: '/graphql',
  mcp: '/mcp',
  healthz: '/healthz',
  readyz: '/readyz',
} as const;

export async function rootRoute(app: FastifyInstance, { access }: { access: AccessDeps }) {
  app.get('/', async (request, reply) => {
    await throttleClient(access, request, reply);
    reply.header('Vary', 'Accept');
    if ((request.headers.accept ?? '').includes('text/html')) return reply.redirect(serviceLinks.docs, 302);
    return { name: 'Metric Governance API', links: serviceLinks };
  });
}
