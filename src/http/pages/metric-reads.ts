/**
 * What a metric's page shows, read with the service's own reads: the detail
 * and the contract operations and a page of the metric's direct dependents
 * (the lineage operation) in process, as the REST routes run them, with the
 * page's session; the newest threads, validation runs and change events
 * from their feature modules. Every list is bounded, so the page costs the
 * same few statements whatever the metric's history.
 */
import type { FastifyRequest } from 'fastify';
import { readMetricHistory } from '../../changes/metric-history.js';
import { createContext, type ServiceConfig } from '../../context.js';
import { readThreadPage } from '../../discussions/read.js';
import { errors, HttpError } from '../../errors.js';
import { readValidationTimeline } from '../../metric/validation-timeline.js';
import type { MetricDetail, MetricPageData } from '../../pages/metric-data.js';
import {
  MetricContractDocument,
  MetricDetailDocument,
  type OperationResult,
  runOperation,
} from '../../rest/execute.js';
import { MetricLineageDocument } from '../../rest/operations.generated.js';
import { failedRead } from '../error-reply.js';
import { type AccessDeps, readerOf, readsOf } from '../request-auth.js';
import type { SignedInPage } from './page-kit.js';

/** Each list of the page shows at most this many of its newest items. */
export const PAGE_LIST_LIMIT = 20;

/** The operation's data; its errors a failed read (500, or 503 when the database did not answer). */
function dataOf<T>(request: FastifyRequest, result: OperationResult<T>): T | null {
  if (!result.errors.length) return result.data;
  request.log.error({ err: result.errors[0], errors: result.errors.map((e) => e.message) }, 'operation failed');
  throw failedRead(result.errors, errors.fetchFailed);
}

function contextOf(access: AccessDeps, config: ServiceConfig, request: FastifyRequest, page: SignedInPage) {
  return createContext(readsOf(access, request), page.principal, config, access.metrics);
}

/** The metric's detail alone (the versions page); 404 when it is not a metric of the page's organization. */
export async function readMetricDetail(
  access: AccessDeps,
  config: ServiceConfig,
  request: FastifyRequest,
  page: SignedInPage,
  id: string,
): Promise<MetricDetail> {
  const result = await runOperation(MetricDetailDocument, { id }, contextOf(access, config, request, page));
  const metric = dataOf(request, result)?.metric;
  if (!metric) throw new HttpError(errors.metricNotFound);
  return metric;
}

/** Everything the metric's page shows; 404 when it is not a metric of the page's organization. */
export async function readMetricPage(
  access: AccessDeps,
  config: ServiceConfig,
  request: FastifyRequest,
  page: SignedInPage,
  id: string,
): Promise<MetricPageData> {
  const orgId = page.principal.org.id;
  const context = contextOf(access, config, request, page);
  const reader = readerOf(access, request);
  const [detail, contract, lineage, threads, validations, history] = await Promise.all([
    runOperation(MetricDetailDocument, { id }, context),
    runOperation(MetricContractDocument, { id, summary: false }, context),
    runOperation(
      MetricLineageDocument,
      { id, direction: 'downstream', depth: 1, first: PAGE_LIST_LIMIT, after: null },
      context,
    ),
    readThreadPage(reader, orgId, id, 1, PAGE_LIST_LIMIT),
    readValidationTimeline(reader, id, PAGE_LIST_LIMIT),
    readMetricHistory(reader, orgId, id, PAGE_LIST_LIMIT, context.contractFields),
  ]);
  const detailMetric = dataOf(request, detail)?.metric;
  const contractMetric = dataOf(request, contract)?.metric;
  if (!detailMetric || !contractMetric || !threads) throw new HttpError(errors.metricNotFound);
  const downstream = dataOf(request, lineage)?.metric?.lineage;
  return {
    detail: detailMetric,
    contract: contractMetric,
    dependents: { nodes: downstream?.nodes ?? [], total: downstream?.total ?? 0 },
    threads: { items: threads.items, total: threads.total },
    validations,
    history,
  };
}
