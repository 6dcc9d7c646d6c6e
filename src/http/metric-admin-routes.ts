/**
 * What the people and the automation that change the registry read of one
 * metric, admitted as on PUT /api/registry (a signed-in admin or owner, or a
 * service token with `registry:write`; a read API key is refused, as on
 * every write route):
 *
 * - GET /api/metrics/{id}/usage: who read it lately (docs/impact.md);
 * - GET /api/metrics/{id}/sources: which source created it and which owns
 *   each of its fields (docs/registry.md#sources).
 */
import type { FastifyInstance } from 'fastify';
import { errors, HttpError } from '../errors.js';
import { readUsageReport } from '../metric/usage-report.js';
import { ownersOf } from '../registry/ownership.js';
import { type Query, rejectUnknownParameters } from '../rest/query.js';
import { isUuid } from '../uuid.js';
import { clientErrorHandler } from './error-reply.js';
import type { AccessDeps } from './request-auth.js';
import { admittedWriters, admitWriter } from './write-requests.js';

export interface MetricAdminRoutesDeps {
  access: AccessDeps;
}

export async function metricAdminRoutes(app: FastifyInstance, deps: MetricAdminRoutesDeps) {
  const { access } = deps;
  const writers = admittedWriters();
  app.setErrorHandler(clientErrorHandler);

  /** A GET of one metric of the caller's organization; `read` answers null for no such metric (404). */
  function metricRoute(path: string, read: (orgId: string, id: string) => Promise<unknown>) {
    app.get(`/api/metrics/:id/${path}`, {
      onRequest: async (request, reply) => {
        writers.admit(request, await admitWriter(access, request, reply, 'registry:write'));
        rejectUnknownParameters(request.query as Query, []);
      },
      handler: async (request) => {
        const principal = writers.of(request);
        const { id } = request.params as { id: string };
        if (!isUuid(id)) throw new HttpError(errors.invalidMetricId);
        const data = await read(principal.org.id, id);
        if (!data) throw new HttpError(errors.metricNotFound);
        return { data };
      },
    });
  }

  metricRoute('usage', async (orgId, id) => {
    // What this instance counted and holds is written first; other instances' is up to 10 s behind.
    await access.usage?.flush();
    return readUsageReport(access.prisma, orgId, id, new Date());
  });

  metricRoute('sources', async (orgId, id) => {
    const metric = await access.prisma.metric.findFirst({
      where: { id, orgId },
      select: { id: true, key: true, source: true, fieldSources: true },
    });
    if (!metric) return null;
    const owners = ownersOf(metric.fieldSources);
    return {
      metric_id: metric.id,
      key: metric.key,
      source: metric.source,
      fields: Object.keys(owners)
        .sort()
        .map((field) => ({ field, source: owners[field] as string })),
    };
  });
}
