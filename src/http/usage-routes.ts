/**
 * GET /api/metrics/{id}/usage: who read a metric lately (docs/impact.md), for
 * the people and the automation that change the registry: a signed-in admin
 * or owner, or a service token with `registry:write` (admitted as on
 * PUT /api/registry). A read API key is refused, as on every write route.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../context.js';
import { errors, HttpError } from '../errors.js';
import { readUsageReport } from '../metric/usage-report.js';
import { type Query, rejectUnknownParameters } from '../rest/query.js';
import { isUuid } from '../uuid.js';
import { clientErrorHandler } from './error-reply.js';
import type { AccessDeps } from './request-auth.js';
import { admitWriter } from './write-routes.js';

export interface UsageRoutesDeps {
  access: AccessDeps;
}

export async function usageRoutes(app: FastifyInstance, deps: UsageRoutesDeps) {
  const { access } = deps;
  const principals = new WeakMap<FastifyRequest, Principal>();
  app.setErrorHandler(clientErrorHandler);

  app.get('/api/metrics/:id/usage', {
    onRequest: async (request, reply) => {
      principals.set(request, await admitWriter(access, request, reply, 'registry:write'));
      rejectUnknownParameters(request.query as Query, []);
    },
    handler: async (request) => {
      const principal = principals.get(request);
      if (!principal) throw new Error('usage route reached without an admitted caller');
      const { id } = request.params as { id: string };
      if (!isUuid(id)) throw new HttpError(errors.invalidMetricId);
      // What this instance counted and holds is written first; other instances' is up to 10 s behind.
      await access.usage?.flush();
      const report = await readUsageReport(access.prisma, principal.org.id, id, new Date());
      if (!report) throw new HttpError(errors.metricNotFound);
      return { data: report };
    },
  });
}
