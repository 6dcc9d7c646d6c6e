/**
 * GET /api/metrics/{id}/sources: which source owns which fields of a metric
 * (docs/registry.md#sources), for the people and the automation that change
 * the registry, admitted as on PUT /api/registry: a signed-in admin or owner,
 * or a service token with `registry:write`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../context.js';
import { errors, HttpError } from '../errors.js';
import { ownersOf } from '../registry/ownership.js';
import { type Query, rejectUnknownParameters } from '../rest/query.js';
import { isUuid } from '../uuid.js';
import { clientErrorHandler } from './error-reply.js';
import type { AccessDeps } from './request-auth.js';
import { admitWriter } from './write-routes.js';

export interface SourcesRoutesDeps {
  access: AccessDeps;
}

export async function sourcesRoutes(app: FastifyInstance, deps: SourcesRoutesDeps) {
  const { access } = deps;
  const principals = new WeakMap<FastifyRequest, Principal>();
  app.setErrorHandler(clientErrorHandler);

  app.get('/api/metrics/:id/sources', {
    onRequest: async (request, reply) => {
      principals.set(request, await admitWriter(access, request, reply, 'registry:write'));
      rejectUnknownParameters(request.query as Query, []);
    },
    handler: async (request) => {
      const principal = principals.get(request);
      if (!principal) throw new Error('sources route reached without an admitted caller');
      const { id } = request.params as { id: string };
      if (!isUuid(id)) throw new HttpError(errors.invalidMetricId);
      const metric = await access.prisma.metric.findFirst({
        where: { id, orgId: principal.org.id },
        select: { id: true, key: true, source: true, fieldSources: true },
      });
      if (!metric) throw new HttpError(errors.metricNotFound);
      const owners = ownersOf(metric.fieldSources);
      return {
        data: {
          metric_id: metric.id,
          key: metric.key,
          source: metric.source,
          fields: Object.keys(owners)
            .sort()
            .map((field) => ({ field, source: owners[field] as string })),
        },
      };
    },
  });
}
