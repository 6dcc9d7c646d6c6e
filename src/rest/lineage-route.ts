/**
 * `GET /api/v1/metrics/{id}/lineage`: a page of a metric's lineage
 * (docs/lineage.md), the `MetricLineage` operation. Admitted as the detail
 * is (scope `metrics:read`, the key's rate limit); its query parameters are
 * checked before anything is read, each out of its values a 400 naming it.
 * No conditional GET: a lineage is made of many metrics, which no one
 * version covers.
 */
import type { FastifyInstance } from 'fastify';
import { createContext, type ServiceConfig } from '../context.js';
import { errors, HttpError } from '../errors.js';
import { failedRead } from '../http/error-reply.js';
import { type AccessDeps, admitApiKey, readsOf } from '../http/request-auth.js';
import { encodeLineageCursor, lineageRequest } from '../metric/lineage.js';
import { isUuid } from '../uuid.js';
import { runOperation } from './execute.js';
import { MetricLineageDocument } from './operations.generated.js';
import { param, type Query } from './query.js';

export interface LineageRouteDeps {
  access: AccessDeps;
  config: ServiceConfig;
}

export async function lineageRoute(app: FastifyInstance, deps: LineageRouteDeps) {
  const { access, config } = deps;

  app.get('/api/v1/metrics/:id/lineage', async (request, reply) => {
    const principal = await admitApiKey(access, request, reply, 'metrics:read');
    const { id } = request.params as { id: string };
    if (!isUuid(id)) throw new HttpError(errors.invalidMetricId);
    const query = request.query as Query;
    const checked = lineageRequest(
      {
        direction: param(query, 'direction'),
        depth: param(query, 'depth'),
        limit: param(query, 'limit'),
        after: param(query, 'after'),
      },
      { limit: 'limit', after: 'after' },
    );
    if ('error' in checked) throw new HttpError(checked.error);
    const { direction, depth, limit, after } = checked.request;
    const result = await runOperation(
      MetricLineageDocument,
      { id, direction, depth, first: limit, after: after ? encodeLineageCursor(after) : null },
      createContext(readsOf(access, request), principal, config, access.metrics),
    );
    if (result.errors.length) {
      request.log.error({ err: result.errors[0], errors: result.errors.map((e) => e.message) }, 'operation failed');
      throw failedRead(result.errors, errors.fetchFailed);
    }
    const metric = result.data?.metric;
    if (!metric) throw new HttpError(errors.metricNotFound);
    const { next_cursor, ...lineage } = metric.lineage;
    reply.header('Cache-Control', 'no-store');
    return { data: { metric_id: metric.id, ...lineage }, next_cursor, meta: { apiVersion: 'v1' } };
  });
}
