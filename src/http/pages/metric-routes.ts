/**
 * A metric's page (`/{org}/metrics/{id}`, the contract's `canonical_url`)
 * and the comparison of two of its versions
 * (`/{org}/metrics/{id}/versions?from=&to=`). An id that is no UUID, or no
 * metric of the organization of the path, is a 404 page; a version that is
 * not one of the metric's is a 400 page naming the parameter.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ServiceConfig } from '../../context.js';
import { errors, HttpError } from '../../errors.js';
import { metricPage } from '../../pages/metric.js';
import type { MetricDetail } from '../../pages/metric-data.js';
import { versionNamed, versionsPage } from '../../pages/metric-versions.js';
import { param, type Query } from '../../rest/query.js';
import { isUuid } from '../../uuid.js';
import type { AccessDeps } from '../request-auth.js';
import { readMetricDetail, readMetricPage } from './metric-reads.js';
import { admitPage, sendPage } from './page-kit.js';

type MetricRequest = FastifyRequest<{ Params: { org: string; id: string }; Querystring: Query }>;

/** A version named by `from` or `to`: one of the metric's definition versions. */
function versionParameter(detail: MetricDetail, query: Query, name: 'from' | 'to') {
  const value = param(query, name);
  const version = value === undefined ? undefined : versionNamed(detail, value);
  if (!version) throw new HttpError(errors.invalidParameter(name, "one of the metric's definition versions"));
  return version;
}

export async function metricPageRoutes(
  app: FastifyInstance,
  { access, config }: { access: AccessDeps; config: ServiceConfig },
) {
  /** The page's admission, then its id: not a UUID is no metric (404), as any unknown id. */
  async function admit(request: MetricRequest, reply: Parameters<typeof admitPage>[2]) {
    const page = await admitPage(access, request, reply, request.params.org);
    if (!isUuid(request.params.id)) throw new HttpError(errors.metricNotFound);
    return page;
  }

  app.get('/:org/metrics/:id', async (request: MetricRequest, reply) => {
    const page = await admit(request, reply);
    const data = await readMetricPage(access, config, request, page, request.params.id);
    return sendPage(reply, metricPage(page.viewer, data, config.publicAppUrl, new Date()));
  });

  app.get('/:org/metrics/:id/versions', async (request: MetricRequest, reply) => {
    const page = await admit(request, reply);
    const detail = await readMetricDetail(access, config, request, page, request.params.id);
    const from = versionParameter(detail, request.query, 'from');
    const to = versionParameter(detail, request.query, 'to');
    return sendPage(reply, versionsPage(page.viewer, detail, from, to));
  });
}
