/**
 * The organization's home, its catalog and its settings page
 * (docs/catalog.md). Each reads with a bounded number of statements,
 * whatever the number of metrics: the catalog's page is one statement (the
 * API's list or search read, with the trust facts of its rows), its facets
 * one read of the counts the writes keep (src/metric/facets.ts); the home's
 * counts are that read too, with one of the change feed and one of the
 * metrics needing attention.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { listApiKeys } from '../../admin/api-keys.js';
import { listServiceTokens } from '../../admin/service-tokens.js';
import { latestChanges } from '../../changes/feed.js';
import { readsContractFields } from '../../context.js';
import { badRequest, errors, HttpError } from '../../errors.js';
import { metricsNeedingAttention } from '../../metric/attention.js';
import type { MetricField } from '../../metric/columns.js';
import { type FacetValue, metricFacets } from '../../metric/facets.js';
import { checkFilterValues, checkSearchText, checkTrustFilter } from '../../metric/input.js';
import { LIFECYCLE_STATUSES } from '../../metric/lifecycle.js';
import { effectiveFilter, METRIC_SCOPES, pageParameter } from '../../metric/list.js';
import { listMetricPageWithParts } from '../../metric/list-page.js';
import { searchMetricPage } from '../../metric/search-page.js';
import { TRUST_VERDICTS, trustPart, trustVerdict } from '../../metric/trust.js';
import { type CatalogQuery, type CatalogRow, catalogPage, type FacetField } from '../../pages/catalog.js';
import { homePage } from '../../pages/home.js';
import { isAdmin } from '../../pages/layout.js';
import { settingsPage } from '../../pages/settings.js';
import { param, type Query } from '../../rest/query.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../schema/metric-query.js';
import { isUuid } from '../../uuid.js';
import { listWebhooks } from '../../webhooks/endpoints.js';
import { readerOf } from '../request-auth.js';
import { admitPage, sendPage } from './page-kit.js';
import type { PageRouteOptions } from './routes.js';

/** Largest page number accepted (as the API's); beyond the data it is a page that says so. */
const MAX_PAGE = 2 ** 31 - 1;
/** Owner teams offered in the facet, the most common first (a team past them still filters by its address). */
const MAX_OWNER_TEAM_OPTIONS = 100;
/** Changes and metrics needing attention on the home, of each kind. */
const HOME_LIST_SIZE = 10;

const ROW_FIELDS: ReadonlySet<MetricField> = new Set<MetricField>([
  'name',
  'key',
  'lifecycleStatus',
  'scope',
  'domainId',
  'ownerTeam',
]);

type OrgParams = { Params: { org: string } };

/**
 * The catalog's query, bounded as the API bounds its own (src/metric/input.ts: a 400 naming the field);
 * a page or page size that is no number from 1 is its default, as the API's.
 */
function catalogQuery(query: Query): CatalogQuery {
  const value = (name: string) => {
    const text = param(query, name);
    return text === undefined || text === '' ? null : text;
  };
  const read: CatalogQuery = {
    q: value('q'),
    lifecycle: value('lifecycle'),
    scope: value('scope'),
    domain: value('domain'),
    owner: value('owner'),
    trust: value('trust'),
    page: pageParameter(param(query, 'page'), 1, MAX_PAGE),
    pageSize: pageParameter(param(query, 'pageSize'), DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
  };
  const invalid =
    checkSearchText('q', read.q) ??
    checkFilterValues({ lifecycle: read.lifecycle, scope: read.scope, domain: read.domain, owner: read.owner }) ??
    checkTrustFilter('trust', read.trust);
  if (invalid) throw new HttpError(invalid);
  if (read.domain !== null && !isUuid(read.domain))
    throw new HttpError(badRequest('domain must be the id of a domain'));
  if (read.q !== null && !read.q.trim()) read.q = null;
  return read;
}

/** Every value of an enumerated facet, with its count (0 when no metric has it). */
function everyValue(values: readonly string[], counted: FacetValue[]): FacetValue[] {
  const counts = new Map(counted.map((v) => [v.value, v.count]));
  return values.map((value) => ({ value, label: value, count: counts.get(value) ?? 0 }));
}

export async function catalogRoutes(app: FastifyInstance, { access, config }: PageRouteOptions) {
  app.get('/:org', async (request: FastifyRequest<OrgParams>, reply) => {
    const { principal, viewer } = await admitPage(access, request, reply, request.params.org);
    const reader = readerOf(access, request);
    const orgId = principal.org.id;
    const kept = { cache: access.reads, version: principal.org.metricsVersion };
    const [facets, changes, attention] = await Promise.all([
      metricFacets(reader, orgId, kept),
      latestChanges(reader, orgId, HOME_LIST_SIZE, readsContractFields(principal)),
      metricsNeedingAttention(reader, orgId, HOME_LIST_SIZE, kept),
    ]);
    return sendPage(reply, homePage({ viewer, facets, changes, attention }));
  });

  app.get('/:org/metrics', async (request: FastifyRequest<OrgParams>, reply) => {
    const { principal, viewer } = await admitPage(access, request, reply, request.params.org);
    const query = catalogQuery(request.query as Query);
    const reader = readerOf(access, request);
    const orgId = principal.org.id;
    const filter = effectiveFilter({
      lifecycleStatus: query.lifecycle,
      scope: query.scope,
      trust: query.trust,
      domainId: query.domain,
      ownerTeam: query.owner,
    });
    const page = { skip: (query.page - 1) * query.pageSize, take: query.pageSize };
    // The list's totals and search pages kept by metrics_version, as the API keeps them.
    const kept = { cache: access.reads, version: principal.org.metricsVersion };
    const [found, facets] = await Promise.all([
      query.q === null
        ? listMetricPageWithParts(reader, orgId, filter, page, ROW_FIELDS, kept, [trustPart])
        : searchMetricPage(reader, orgId, query.q, filter, page, ROW_FIELDS, kept, [trustPart]),
      metricFacets(reader, orgId, kept),
    ]);
    const domains = new Map(facets.domain.map((d) => [d.value, d.label]));
    const now = new Date();
    const rows: CatalogRow[] = found.rows.map((metric, i) => ({
      id: metric.id,
      name: metric.name ?? '',
      key: metric.key ?? '',
      lifecycle: metric.lifecycleStatus ?? '',
      scope: metric.scope ?? '',
      domain: metric.domainId ? (domains.get(metric.domainId) ?? null) : null,
      ownerTeam: metric.ownerTeam ?? '',
      verdict: trustVerdict(trustPart.read(found.partRows[i] ?? {}), config.trust, now).verdict,
    }));
    const owners = facets.ownerTeam.slice(0, MAX_OWNER_TEAM_OPTIONS);
    if (query.owner !== null && !owners.some((o) => o.value === query.owner)) {
      owners.push(
        facets.ownerTeam.find((o) => o.value === query.owner) ?? { value: query.owner, label: query.owner, count: 0 },
      );
    }
    const options: Record<FacetField, FacetValue[]> = {
      lifecycle: everyValue(LIFECYCLE_STATUSES, facets.lifecycle),
      scope: everyValue(METRIC_SCOPES, facets.scope),
      domain: facets.domain.filter((d) => d.value !== null),
      owner: owners,
      trust: everyValue(TRUST_VERDICTS, facets.trust),
    };
    const html = catalogPage({
      viewer,
      query,
      searched: query.q !== null,
      rows,
      total: found.total,
      hints: query.q === null ? null : (found.hints ?? { corrected: [], didYouMean: [] }),
      facets,
      options,
      defaultPageSize: DEFAULT_PAGE_SIZE,
    });
    return sendPage(reply, html);
  });

  app.get('/:org/settings', async (request: FastifyRequest<OrgParams>, reply) => {
    const { principal, viewer } = await admitPage(access, request, reply, request.params.org);
    if (!isAdmin(viewer)) throw new HttpError(errors.forbidden);
    const org = { id: principal.org.id };
    const [apiKeys, serviceTokens, webhooks] = await Promise.all([
      listApiKeys(access.prisma, { org, order: 'newest' }),
      listServiceTokens(access.prisma, { org }),
      listWebhooks(access.prisma, org),
    ]);
    return sendPage(reply, settingsPage({ viewer, apiKeys, serviceTokens, webhooks }));
  });
}
