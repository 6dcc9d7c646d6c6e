/**
 * The public REST routes of /api/v1. Each authenticates, validates its own
 * input and runs one named GraphQL operation; no route reads the database by
 * itself. Each answers a conditional GET (src/rest/etag.ts): the tag is
 * decided before the body is read, from the key lookup and at most one small
 * statement, so that a 304 costs no more.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RequestedScope } from '../auth/scopes.js';
import { createContext, type Principal, readsContractFields, type ServiceConfig } from '../context.js';
import { errors, HttpError } from '../errors.js';
import { failedRead } from '../http/error-reply.js';
import { type AccessDeps, admitApiKey, admitApiKeyWithRead, readerOf, readsOf } from '../http/request-auth.js';
import { type FoundMetricRow, metricRowWithKey } from '../metric/by-id.js';
import { checkFilterValues, checkSearchText, checkTrustFilter } from '../metric/input.js';
import { effectiveFilter, pageParameter } from '../metric/list.js';
import { METRIC_PARTS, type MetricReadPlan, primeMetricRead } from '../metric/loaders.js';
import { readMetricsVersion } from '../metric/metrics-version.js';
import { type MetricState, readMetricState } from '../metric/state.js';
import { trustVerdict } from '../metric/trust.js';
import { countRead } from '../metric/usage.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../schema/metric-query.js';
import { planDocumentField } from '../schema/metric-selection.js';
import { summaryGeneratorName } from '../summaries/service.js';
import { isUuid } from '../uuid.js';
import { contractEnvelope, detailEnvelope, listEnvelope, type SummaryHeaders } from './envelopes.js';
import { entityTag, noneMatchFails, releaseId, sendNotModified, setValidators } from './etag.js';
import { ListMetricsDocument, MetricContractDocument, MetricDetailDocument, runOperation } from './execute.js';
import type { TrustVerdict } from './operations.generated.js';
import { param, type Query } from './query.js';

/**
 * What the detail's and the contract's `metric(id)` read (the plan its
 * resolver gets), and that read as a read with the key lookup (admitForMetric).
 */
function metricRoute(document: Parameters<typeof planDocumentField>[0]) {
  const plan = planDocumentField(document, 'metric');
  const withKey = metricRowWithKey(
    [...plan.parts].map((name) => METRIC_PARTS[name]),
    plan.fields,
  );
  return { plan, withKey };
}
const DETAIL = metricRoute(MetricDetailDocument);
const CONTRACT = metricRoute(MetricContractDocument);

/** Largest page number accepted; beyond the data it is just an empty page. */
const MAX_PAGE = 2 ** 31 - 1;

export interface RestDeps {
  access: AccessDeps;
  config: ServiceConfig;
}

export async function restRoutes(app: FastifyInstance, deps: RestDeps) {
  const { access, config } = deps;
  // Hashes the build once now (tens of milliseconds) rather than in the first request.
  releaseId();

  function metricId(request: FastifyRequest): string {
    const { id } = request.params as { id: string };
    if (!isUuid(id)) throw new HttpError(errors.invalidMetricId);
    return id;
  }

  /**
   * Operation errors on the primary read are a 500 with the cause logged, not returned (a 503 when
   * the database did not answer).
   */
  function failIfErrors(request: FastifyRequest, result: { errors: readonly Error[] }, primary: boolean) {
    if (!result.errors.length) return;
    request.log.error({ err: result.errors[0], errors: result.errors.map((e) => e.message) }, 'operation failed');
    if (primary) throw failedRead(result.errors, errors.fetchFailed);
  }

  /**
   * A conditional request that its replica cannot answer with 304 moves to
   * the primary (src/db/read-routing.ts): its tag is opaque, so it may name
   * a version newer than the replica has, and the replica's body would take
   * the client back in time. True when it moved (the caller reads again).
   */
  function leaveReplica(request: FastifyRequest): boolean {
    const route = access.routing?.routeOf(request);
    if (!route?.onReplica) return false;
    route.usePrimary();
    return true;
  }

  app.get('/api/v1/metrics', async (request, reply) => {
    let principal = await admitApiKey(access, request, reply, 'metrics:read');
    const query = request.query as Query;
    const search = param(query, 'q');
    const filter = {
      lifecycleStatus: param(query, 'lifecycle_status') ?? null,
      status: param(query, 'status') ?? null,
      policyTier: param(query, 'policy_tier') ?? null,
      scope: param(query, 'scope') ?? null,
      type: param(query, 'type') ?? null,
      trust: param(query, 'trust') ?? null,
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
        trust: filter.trust,
      }) ??
      checkTrustFilter('trust', filter.trust);
    if (invalid) throw new HttpError(invalid);
    // Items carry the verdict for a key that may read the contract's (a key of `definition:read` alone reads
    // neither); filtering by verdict would tell such a key the verdicts it may not read.
    const withTrust = readsContractFields(principal);
    if (filter.trust !== null && !withTrust) throw new HttpError(errors.insufficientScope);
    const variables = {
      page: pageParameter(param(query, 'page'), 1, MAX_PAGE),
      pageSize: pageParameter(param(query, 'pageSize'), DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
      // checkTrustFilter let only a verdict through
      filter: { ...filter, trust: filter.trust as TrustVerdict | null },
      search: search?.trim() ? search : null,
      withTrust,
    };
    // A page is made of the organization's metrics only: metrics_version (read with the key) covers them.
    const tagOf = ({ org }: Principal) =>
      entityTag([
        'list',
        org.id,
        org.metricsVersion,
        variables.page,
        variables.pageSize,
        effectiveFilter(variables.filter),
        variables.search,
        variables.withTrust,
      ]);
    let tag = tagOf(principal);
    if (noneMatchFails(request, tag)) return sendNotModified(reply, tag);
    if (conditional(request) && leaveReplica(request)) {
      // The client may have seen a later version than the replica's: the version and the page from the primary.
      const version = await readMetricsVersion(access.sql, principal.org.id);
      if (version !== null) principal = { ...principal, org: { ...principal.org, metricsVersion: version } };
      tag = tagOf(principal);
      if (noneMatchFails(request, tag)) return sendNotModified(reply, tag);
    }
    const result = await runOperation(
      ListMetricsDocument,
      variables,
      createContext(readsOf(access, request), principal, config, access.metrics),
    );
    failIfErrors(request, result, true);
    if (!result.data) throw new HttpError(errors.fetchFailed);
    setValidators(reply, tag);
    return listEnvelope(result.data.metrics);
  });

  /**
   * The metric's version (and discussion state), read before its body: a
   * change in between makes the tag older than the body, which costs the
   * client one more 200, never a stale 304. null when there is no such metric
   * or the read failed (then no 304; the route reads and answers as usual).
   */
  async function metricState(
    request: FastifyRequest,
    orgId: string,
    id: string,
    summaryGenerator: string | null,
    withTrust = false,
  ) {
    return readMetricState(readerOf(access, request), orgId, id, summaryGenerator, withTrust).catch(
      (error: unknown): MetricState | null => {
        request.log.warn({ err: error }, 'could not read the metric version');
        return null;
      },
    );
  }

  /**
   * Admits a key for a metric's route and, when the route reads the metric
   * straight away (`readAhead`), reads it (with the parts the operation
   * selects) in the key lookup's own statement: one round trip to the
   * database for both. The id is checked after the admission, as the order
   * of checks says; an id that is no UUID is not read ahead.
   */
  async function admitForMetric(
    request: FastifyRequest,
    reply: FastifyReply,
    scope: RequestedScope,
    route: typeof DETAIL,
    readAhead: boolean,
  ) {
    const { id: raw } = request.params as { id: string };
    if (!readAhead || !isUuid(raw)) return { principal: await admitApiKey(access, request, reply, scope), ahead: null };
    const admitted = await admitApiKeyWithRead(access, request, reply, scope, route.withKey(raw));
    return { principal: admitted.principal, ahead: admitted.read === undefined ? null : { found: admitted.read } };
  }

  /** The operation's context; a metric read ahead primes its loaders. */
  function metricContext(
    request: FastifyRequest,
    principal: Principal,
    id: string,
    plan: MetricReadPlan,
    ahead: { found: FoundMetricRow | null } | null,
  ) {
    const context = createContext(readsOf(access, request), principal, config, access.metrics);
    if (ahead) primeMetricRead(context.loaders, id, plan, ahead.found);
    return context;
  }

  /**
   * A 304 for a metric the key reads: a read like a 200 (src/metric/usage.ts), so that a client that
   * keeps its copy fresh is still seen reading it (the operation, which counts a 200, does not run).
   */
  function notModifiedRead(reply: FastifyReply, principal: Principal, id: string, tag: string) {
    countRead(access.usage, principal, id);
    return sendNotModified(reply, tag);
  }

  app.get('/api/v1/metrics/:id', async (request, reply) => {
    // Only a conditional request reads the version first; any other takes it from the body's own statement.
    const isConditional = conditional(request);
    const { principal, ahead } = await admitForMetric(request, reply, 'metrics:read', DETAIL, !isConditional);
    const id = metricId(request);
    const { org } = principal;
    // The body shows the organization's fiscal month besides the metric and what its version covers, and
    // its inputs' verdicts to a key that may read verdicts (null to any other).
    const verdicts = readsContractFields(principal);
    const tagOf = (version: string | null | undefined) =>
      entityTag(['detail', org.id, org.fiscalCalendarStartMonth, id, version ?? 'unversioned', verdicts]);
    let state = isConditional ? await metricState(request, org.id, id, null) : null;
    if (state && noneMatchFails(request, tagOf(state.version)))
      return notModifiedRead(reply, principal, id, tagOf(state.version));
    if (isConditional && leaveReplica(request)) {
      state = await metricState(request, org.id, id, null);
      if (state && noneMatchFails(request, tagOf(state.version)))
        return notModifiedRead(reply, principal, id, tagOf(state.version));
    }
    const result = await runOperation(
      MetricDetailDocument,
      { id },
      metricContext(request, principal, id, DETAIL.plan, ahead),
    );
    failIfErrors(request, result, true);
    if (!result.data?.metric) throw new HttpError(errors.metricNotFound);
    setValidators(reply, tagOf(state ? state.version : result.data.metric.revision));
    return detailEnvelope(result.data.metric);
  });

  app.get('/api/v1/metrics/:id/contract', async (request, reply) => {
    // Only the exact value `true` asks for the discussion summary (which may bill the organization).
    const summary = param(request.query as Query, 'summary') === 'true';
    // A conditional request, or one that asks for the summary (whose state is the discussion's), reads the
    // version first; any other takes it, and the trust verdict, from the body's own statement.
    const stateFirst = summary || conditional(request);
    const { principal, ahead } = await admitForMetric(
      request,
      reply,
      'canonical-metric-api:read',
      CONTRACT,
      !stateFirst,
    );
    const id = metricId(request);
    const { org } = principal;
    const generator = summary ? summaryGeneratorName(config.summaries) : null;
    // canonical_url shows PUBLIC_APP_URL and the organization's slug; `trust` depends on other
    // metrics and on the time, so the tag carries the verdict as it stands now.
    const tagOf = (version: string | null | undefined, trust: TrustTag | null, summaryPart: string) =>
      entityTag(['contract', org.id, org.slug, config.publicAppUrl, id, version ?? 'unversioned', trust, summaryPart]);
    const tagState = (state: MetricState | null) => {
      const trust = state?.trust ? trustTag(trustVerdict(state.trust, config.trust, new Date())) : null;
      const current = state && currentSummaryPart(generator, state);
      const tag = state && current !== null ? tagOf(state.version, trust, current) : null;
      return { state, trust, current, tag, matches: tag !== null && noneMatchFails(request, tag) };
    };
    let read = tagState(stateFirst ? await metricState(request, org.id, id, generator, true) : null);
    if (!read.matches && conditional(request) && leaveReplica(request)) {
      read = tagState(await metricState(request, org.id, id, generator, true));
    }
    const { state, trust: stateTrust, current, tag: currentTag } = read;
    if (currentTag && read.matches) {
      countRead(access.usage, principal, id);
      // Only a summary the cache (or the lack of any discussion) answers is a 304: nothing generated or billed.
      return sendNotModified(reply, currentTag, {
        ...(generator ? { 'X-Discussion-Summary-Charged': '0' } : {}),
        ...(current === 'no_discussion' ? { 'X-Discussion-Summary': 'no_discussion' } : {}),
      });
    }
    const result = await runOperation(
      MetricContractDocument,
      { id, summary },
      metricContext(request, principal, id, CONTRACT.plan, ahead),
    );
    // Supporting reads degrade (envelopes.ts); only a failed metric read is fatal. A non-null field
    // that failed (the trust verdict) nulls the metric itself: that is a failed read, not a missing metric.
    const metricFailed =
      result.errors.some((error) => error.path?.length === 1) || (!result.data?.metric && result.errors.length > 0);
    failIfErrors(request, result, metricFailed);
    if (!result.data?.metric) throw new HttpError(errors.metricNotFound);
    const { body, headers } = contractEnvelope(result.data.metric);
    if (headers) reply.headers(headers);
    const served = result.data.metric;
    setValidators(
      reply,
      tagOf(
        state ? state.version : served.revision,
        state ? stateTrust : trustTag(served.trust),
        servedSummaryPart(generator, state, result.errors.length > 0, body, headers),
      ),
    );
    return body;
  });
}

/**
 * The part of a contract's tag that a conditional request can match: `none`
 * without summary; with it, `no_discussion`, or `cached:<fingerprint>` when
 * the cache holds the summary of the current discussion; null (no 304) when
 * answering would generate one.
 */
function currentSummaryPart(generator: string | null, state: MetricState): string | null {
  if (generator === null) return 'none';
  const discussion = state.discussion;
  if (!discussion) return null;
  if (discussion.messageCount === 0) return 'no_discussion';
  return discussion.cached ? `cached:${discussion.fingerprint}` : null;
}

/**
 * The same part for a 200, from what was served. A body with a degraded
 * supporting read, a summary just generated (`cache_hit` false, `charged`
 * as it was) or a degraded summary gets a part no conditional request
 * matches: its next request gets a 200, the cached summary and a tag that
 * matches from then on.
 */
function servedSummaryPart(
  generator: string | null,
  state: MetricState | null,
  degraded: boolean,
  body: unknown,
  headers: SummaryHeaders | null,
): string {
  if (degraded) return 'partial';
  if (generator === null) return 'none';
  const served = (body as { data: { discussion_summary_meta?: { cache_hit: boolean; charged: boolean } } }).data
    .discussion_summary_meta;
  const fingerprint = state?.discussion?.fingerprint;
  if (served?.cache_hit && fingerprint) return `cached:${fingerprint}`;
  if (headers?.['X-Discussion-Summary'] === 'no_discussion') return 'no_discussion';
  return `served:${JSON.stringify(served)}:${headers?.['X-Discussion-Summary'] ?? ''}`;
}

/** Whether the request asks a condition (If-None-Match); only then is a version read before the body. */
const conditional = (request: FastifyRequest) => request.headers['if-none-match'] !== undefined;

/** The trust verdict as a tag carries it, the same from the verdict and from the served body. */
type TrustTag = [verdict: string, reasons: readonly string[], preferredMetricId: string | null];

function trustTag(
  trust: { verdict: string; reasons: readonly string[] } & (
    | { preferredMetricId: string | null }
    | { preferred_metric_id: string | null }
  ),
): TrustTag {
  const preferred = 'preferredMetricId' in trust ? trust.preferredMetricId : trust.preferred_metric_id;
  return [trust.verdict, trust.reasons, preferred];
}
