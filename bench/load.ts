/** The routes under load and one autocannon run against a base URL. */
import autocannon from 'autocannon';
import type { SeedResult } from './seed.js';

export type RouteName =
  | 'list'
  | 'list-304'
  | 'search'
  | 'search-cold'
  | 'search-written'
  | 'detail'
  | 'detail-304'
  | 'contract'
  | 'graphql'
  | 'page-home'
  | 'page-catalog'
  | 'page-search'
  | 'page-metric';
export const ALL_ROUTES: RouteName[] = [
  'list',
  'list-304',
  'search',
  'search-cold',
  'search-written',
  'detail',
  'detail-304',
  'contract',
  'graphql',
  'page-home',
  'page-catalog',
  'page-search',
  'page-metric',
];
/** The servers measured next to the service (bench/floor.ts, bench/postgraphile.ts). */
export type PeerName = 'floor' | 'postgraphile';
export const PEERS: PeerName[] = ['floor', 'postgraphile'];
/** Routes each peer serves: the floor every route but the conditional ones, PostGraphile the dashboard. */
export const PEER_ROUTES: Record<PeerName, RouteName[]> = {
  floor: ['list', 'search', 'search-cold', 'search-written', 'detail', 'contract', 'graphql'],
  postgraphile: ['graphql'],
};
/** The peers of a route, in the order of a round (after the service: A B, or A B C for graphql). */
export const peersOf = (route: RouteName): PeerName[] => PEERS.filter((peer) => PEER_ROUTES[peer].includes(route));

/** Typos and multi-word terms included: the corrections are part of the work. */
export const SEARCH_TERMS = [
  'revenue',
  'weekly active users emea',
  'churn rate',
  'revnue',
  'gross margin',
  'conversion',
  'orders apac',
  'net promoter score',
  'cart abandonment',
  'customer lifetime value',
];

/**
 * search-cold: each request a search the service has not seen, so none is
 * served from its kept search pages (src/metric/search-page.ts), with the
 * terms as a user types them (typos included, so corrections run): each term
 * comes with a page and page size of its own, which changes the statement's
 * values and the kept page's key, not the search's path. search-written is
 * the earlier way (`-zq<n>` excludes a word no metric has): websearch syntax
 * takes the as-written path, with no corrections and no partial coverage.
 */
let coldQueries = 0;

function coldSearch(n: number): string {
  const term = SEARCH_TERMS[n % SEARCH_TERMS.length] as string;
  const m = Math.floor(n / SEARCH_TERMS.length);
  return `/api/v1/metrics?q=${encodeURIComponent(term)}&page=${1 + (m % 50)}&pageSize=${1 + (Math.floor(m / 50) % 100)}`;
}

const WRITTEN_TERMS = SEARCH_TERMS.filter((term) => term !== 'revnue');

export const DASHBOARD_QUERY =
  '{ metrics(pageSize: 100) { items { id name lifecycleStatus discussionThreadCount discussionMessageCount agentContextNotes { messageId body } } pagination { total } } }';

/**
 * The same dashboard in PostGraphile's schema (bench/postgraphile.ts): the organization's first 100
 * metrics by name, then id, with the computed columns for the counts and the pinned notes, and the
 * total. PostGraphile has no authentication here, so the organization is a condition.
 */
export const POSTGRAPHILE_DASHBOARD_QUERY =
  'query Dashboard($org: UUID!) { allMetrics(first: 100, condition: { orgId: $org }, orderBy: [NAME_ASC, ROW_ID_ASC]) { nodes { rowId name lifecycleStatus discussionThreadCount discussionMessageCount agentContextNotes { nodes { rowId body } } } totalCount } }';

/** The dashboard request of PostGraphile, for the organization of the bench key. */
export function postgraphileDashboard(orgId: string): RouteRequest {
  return {
    method: 'POST',
    path: () => '/graphql',
    body: JSON.stringify({ query: POSTGRAPHILE_DASHBOARD_QUERY, variables: { org: orgId } }),
  };
}

/** A dashboard answer reduced to what every peer must agree on: ids, names, statuses, counts, notes, total. */
export interface Dashboard {
  total: number;
  items: {
    id: string;
    name: string;
    lifecycleStatus: string;
    threads: number | null;
    messages: number | null;
    notes: { id: string; body: string }[];
  }[];
}

interface ServiceDashboard {
  data?: {
    metrics?: {
      items: {
        id: string;
        name: string;
        lifecycleStatus: string;
        discussionThreadCount: number | null;
        discussionMessageCount: number | null;
        agentContextNotes: { messageId: string; body: string }[] | null;
      }[];
      pagination: { total: number };
    };
  };
}

interface PostGraphileDashboard {
  data?: {
    allMetrics?: {
      nodes: {
        rowId: string;
        name: string;
        lifecycleStatus: string;
        discussionThreadCount: number | null;
        discussionMessageCount: number | null;
        agentContextNotes: { nodes: { rowId: string; body: string }[] };
      }[];
      totalCount: number;
    };
  };
}

/** The service's (and the floor's) dashboard answer as a {@link Dashboard}; null when it has no data. */
export function serviceDashboard(body: unknown): Dashboard | null {
  const page = (body as ServiceDashboard).data?.metrics;
  if (!page) return null;
  return {
    total: page.pagination.total,
    items: page.items.map((m) => ({
      id: m.id,
      name: m.name,
      lifecycleStatus: m.lifecycleStatus,
      threads: m.discussionThreadCount,
      messages: m.discussionMessageCount,
      notes: (m.agentContextNotes ?? []).map((n) => ({ id: n.messageId, body: n.body })),
    })),
  };
}

/** PostGraphile's dashboard answer as a {@link Dashboard}; null when it has no data. */
export function postgraphileDashboardOf(body: unknown): Dashboard | null {
  const page = (body as PostGraphileDashboard).data?.allMetrics;
  if (!page) return null;
  return {
    total: page.totalCount,
    items: page.nodes.map((m) => ({
      id: m.rowId,
      name: m.name,
      lifecycleStatus: m.lifecycleStatus,
      threads: m.discussionThreadCount,
      messages: m.discussionMessageCount,
      notes: m.agentContextNotes.nodes.map((n) => ({ id: n.rowId, body: n.body })),
    })),
  };
}

export interface RouteRequest {
  method: 'GET' | 'POST';
  body?: string;
  /** the k-th path of the rotation */
  path(k: number): string;
  /** extra headers of the k-th request */
  headers?(k: number): Record<string, string>;
  /** the status every request should get (default: any 2xx) */
  expectStatus?: 304;
}

/**
 * A route's rotation as conditional requests that all hit 304: each path with
 * the ETag its 200 carried (read by {@link conditionalRoute} before the load;
 * nothing changes the data during a bench).
 */
export async function conditionalRoute(base: string, plain: RouteRequest, apiKey: string): Promise<RouteRequest> {
  const tags: string[] = [];
  for (let k = 0; k < ROTATION; k++) {
    const response = await fetch(base + plain.path(k), { headers: { authorization: `Bearer ${apiKey}` } });
    await response.arrayBuffer();
    const tag = response.headers.get('etag');
    if (response.status !== 200 || !tag) throw new Error(`${plain.path(k)}: ${response.status}, no ETag`);
    tags.push(tag);
  }
  return {
    ...plain,
    path: (k) => plain.path(k % ROTATION),
    headers: (k) => ({ 'if-none-match': tags[k % ROTATION] ?? '' }),
    expectStatus: 304,
  };
}

/** Distinct requests of a conditional route's rotation. */
const ROTATION = 20;

/**
 * A route's requests. The pages (`page-*`: the organization's home, the catalog, a catalog search and the
 * metric page, each a `canonical_url`) are read by a signed-in member (`sessionToken`, organization `bench`).
 */
export function routeRequest(
  route: RouteName,
  { metricIds, sessionToken }: Pick<SeedResult, 'metricIds' | 'sessionToken'>,
): RouteRequest {
  const id = (k: number) => metricIds[k % metricIds.length]!;
  const signedIn = () => ({ cookie: `session=${sessionToken}`, accept: 'text/html' });
  switch (route) {
    case 'list':
    case 'list-304':
      return { method: 'GET', path: (k) => `/api/v1/metrics?page=${1 + (k % 50)}` };
    case 'search':
      return {
        method: 'GET',
        path: (k) => `/api/v1/metrics?q=${encodeURIComponent(SEARCH_TERMS[k % SEARCH_TERMS.length]!)}`,
      };
    case 'search-cold':
      return { method: 'GET', path: () => coldSearch(coldQueries++) };
    case 'search-written':
      return {
        method: 'GET',
        path: (k) =>
          `/api/v1/metrics?q=${encodeURIComponent(`${WRITTEN_TERMS[k % WRITTEN_TERMS.length]} -zq${coldQueries++}`)}`,
      };
    case 'detail':
    case 'detail-304':
      return { method: 'GET', path: (k) => `/api/v1/metrics/${id(k)}` };
    case 'contract':
      return { method: 'GET', path: (k) => `/api/v1/metrics/${id(k)}/contract` };
    case 'graphql':
      return { method: 'POST', path: () => '/graphql', body: JSON.stringify({ query: DASHBOARD_QUERY }) };
    case 'page-home':
      return { method: 'GET', path: () => '/bench', headers: signedIn };
    case 'page-catalog':
      return { method: 'GET', path: (k) => `/bench/metrics?page=${1 + (k % 50)}`, headers: signedIn };
    case 'page-search':
      return {
        method: 'GET',
        path: (k) => `/bench/metrics?q=${encodeURIComponent(SEARCH_TERMS[k % SEARCH_TERMS.length]!)}`,
        headers: signedIn,
      };
    case 'page-metric':
      return { method: 'GET', path: (k) => `/bench/metrics/${id(k)}`, headers: signedIn };
  }
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  /** the slowest thousandth's bound */
  p999: number;
  requests: number;
  /** responses of a status the route does not expect: non-2xx, or for a `-304` route anything but its 304 */
  non2xx: number;
  errors: number;
  /** the server process's CPU time (user + system) per request, ms; set by the caller that knows the pid */
  cpuMsPerRequest: number | null;
}

export async function runLoad(
  base: string,
  request: RouteRequest,
  apiKey: string,
  options: { connections: number; duration: number },
): Promise<LoadResult> {
  let k = 0;
  const result = await autocannon({
    url: base,
    connections: options.connections,
    duration: options.duration,
    requests: [
      {
        method: request.method,
        headers: {
          authorization: `Bearer ${apiKey}`,
          accept: 'application/json',
          ...(request.body ? { 'content-type': 'application/json' } : {}),
        },
        ...(request.body ? { body: request.body } : {}),
        setupRequest: (req) => {
          const n = k++;
          return {
            ...req,
            path: request.path(n),
            ...(request.headers ? { headers: { ...req.headers, ...request.headers(n) } } : {}),
          };
        },
      },
    ],
  });
  // A conditional route counts what was not its 304 (autocannon counts a 304 as non-2xx).
  const unexpected = request.expectStatus === 304 ? result.non2xx - result['3xx'] + result['2xx'] : result.non2xx;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    p999: result.latency.p99_9,
    requests: result.requests.total,
    non2xx: unexpected,
    errors: result.errors + result.timeouts,
    cpuMsPerRequest: null,
  };
}
