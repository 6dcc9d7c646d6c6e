/**
 * The public REST routes of /api/v1. Each authenticates, validates its own
 * input and runs one named GraphQL operation; no route reads the database by
 * itself.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createContext, type ServiceConfig } from '../context.js';
import { errors, HttpError } from '../errors.js';
import { type AccessDeps, admitApiKey } from '../http/request-auth.js';
import { checkFilterValues, checkSearchText } from '../metric/input.js';
import { pageParameter } from '../metric/list.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../schema/metric-query.js';
import { isUuid } from '../uuid.js';
import { contractEnvelope, detailEnvelope, listEnvelope } from './envelopes.js';
import { ListMetricsDocument, MetricContractDocument, MetricDetailDocument, runOperation } from './execute.js';

/** Largest page number accepted; beyond the data it is just an empty page. */
const MAX_PAGE = 2 ** 31 - 1;

type Query = Record<string, string | string[] | undefined>;

/** A repeated query parameter counts with its first value. */
function param(query: Query, name: string): string | undefined {
  const value = query[name];
  return Array.isArray(value) ? value[0] : value;
}

export interface RestDeps {
  access: AccessDeps;
  config: ServiceConfig;
}

export async function restRoutes(app: FastifyInstance, deps: RestDeps) {
  const { access, config } = deps;

  function metricId(request: FastifyRequest): string {
    const { id } = request.params as { id: string };
    if (!isUuid(id)) throw new HttpError(errors.invalidMetricId);
    return id;
  }

  /** Operation errors on the primary read are a 500 with the cause logged, not returned. */
  function failIfErrors(request: FastifyRequest, result: { errors: readonly Error[] }, primary: boolean) {
    if (!result.errors.length) return;
    request.log.error({ err: result.errors[0], errors: result.errors.map((e) => e.message) }, 'operation failed');
    if (primary) throw new HttpError(errors.fetchFailed);
  }

  app.get('/api/v1/metrics', async (request, reply) => {
    const principal = await admitApiKey(access, request, reply, 'metrics:read');
    const query = request.query as Query;
    const search = param(query, 'q');
    const filter = {
      lifecycleStatus: param(query, 'lifecycle_status') ?? null,
      status: param(query, 'status') ?? null,
      policyTier: param(query, 'policy_tier') ?? null,
      scope: param(query, 'scope') ?? null,
      type: param(query, 'type') ?? null,
    };
    // Bounded input (src/metric/input.ts), named as the client sent it: 400, never cut short.
    const invalid =
      checkSearchText('q', search) ??
      checkFilterValues({
        lifecycle_status: filter.lifecycleStatus,
        status: filter.status,
        policy_tier: filter.policyTier,
        scope: filter.scope,
        type: filter.type,
      });
    if (invalid) throw new HttpError(invalid);
    const result = await runOperation(
      ListMetricsDocument,
      {
        page: pageParameter(param(query, 'page'), 1, MAX_PAGE),
        pageSize: pageParameter(param(query, 'pageSize'), DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
        filter,
        search: search?.trim() ? search : null,
      },
      createContext(access, principal, config, access.metrics),
    );
    failIfErrors(request, result, true);
    if (!result.data) throw new HttpError(errors.fetchFailed);
    return listEnvelope(result.data.metrics);
  });

  app.get('/api/v1/metrics/:id', async (request, reply) => {
    const principal = await admitApiKey(access, request, reply, 'metrics:read');
    const id = metricId(request);
    const result = await runOperation(
      MetricDetailDocument,
      { id },
      createContext(access, principal, config, access.metrics),
    );
    failIfErrors(request, result, true);
    if (!result.data?.metric) throw new HttpError(errors.metricNotFound);
    return detailEnvelope(result.data.metric);
  });

  app.get('/api/v1/metrics/:id/contract', async (request, reply) => {
    const principal = await admitApiKey(access, request, reply, 'canonical-metric-api:read');
    const id = metricId(request);
    // Only the exact value `true` asks for the discussion summary (which may bill the organization).
    const summary = param(request.query as Query, 'summary') === 'true';
    const result = await runOperation(
      MetricContractDocument,
      { id, summary },
      createContext(access, principal, config, access.metrics),
    );
    // Supporting reads degrade (envelopes.ts); only a failed metric read is fatal.
    const metricFailed = result.errors.some((error) => error.path?.length === 1);
    failIfErrors(request, result, metricFailed);
    if (!result.data?.metric) throw new HttpError(errors.metricNotFound);
    const { body, headers } = contractEnvelope(result.data.metric);
    if (headers) reply.headers(headers);
    return body;
  });
}
