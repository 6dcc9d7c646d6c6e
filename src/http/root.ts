/**
 * GET /: a signed-in browser (Accept: text/html, a live session cookie) is
 * sent to its organization's home; another browser to the API reference at
 * /docs; any other client gets the service's links as JSON. Counted in the
 * client's throttle like the other pages that need no credentials.
 */
import type { FastifyInstance } from 'fastify';
import { authenticateSession } from '../auth/authenticate.js';
import { sessionCookie } from './headers.js';
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
    reply.header('Vary', 'Accept, Cookie');
    if ((request.headers.accept ?? '').includes('text/html')) {
      const token = sessionCookie(request);
      const session = token ? await authenticateSession(access.sql, token) : null;
      if (session?.ok) {
        reply.header('Cache-Control', 'no-store');
        return reply.redirect(`/${encodeURIComponent(session.principal.org.slug)}`, 302);
      }
      return reply.redirect(serviceLinks.docs, 302);
    }
    return { name: 'Metric Governance API', links: serviceLinks };
  });
}
