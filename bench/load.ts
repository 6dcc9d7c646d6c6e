/** The routes under load and one autocannon run against a base URL. */
import autocannon from 'autocannon';

export type RouteName = 'list' | 'search' | 'search-cold' | 'detail' | 'contract' | 'graphql';
export const ALL_ROUTES: RouteName[] = ['list', 'search', 'search-cold', 'detail', 'contract', 'graphql'];
/** Routes the floor serves too. */
export const FLOOR_ROUTES: RouteName[] = ['list', 'search', 'search-cold', 'detail', 'contract'];

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
 * search-cold: the terms as written, each request a query the service has not
 * seen, so none is served from its kept search pages (src/metric/rows.ts):
 * `-zq<n>` excludes a word no metric has, which changes no result. Typos are
 * left out, as a query in websearch syntax is not corrected.
 */
const COLD_TERMS = SEARCH_TERMS.filter((term) => term !== 'revnue');
let coldQueries = 0;

export const DASHBOARD_QUERY =
  '{ metrics(pageSize: 100) { items { id name lifecycleStatus discussionThreadCount discussionMessageCount agentContextNotes { messageId body } } pagination { total } } }';

export interface RouteRequest {
  method: 'GET' | 'POST';
  body?: string;
  /** the k-th path of the rotation */
  path(k: number): string;
}

export function routeRequest(route: RouteName, metricIds: string[]): RouteRequest {
  const id = (k: number) => metricIds[k % metricIds.length]!;
  switch (route) {
    case 'list':
      return { method: 'GET', path: (k) => `/api/v1/metrics?page=${1 + (k % 50)}` };
    case 'search':
      return {
        method: 'GET',
        path: (k) => `/api/v1/metrics?q=${encodeURIComponent(SEARCH_TERMS[k % SEARCH_TERMS.length]!)}`,
      };
    case 'search-cold':
      return {
        method: 'GET',
        path: (k) =>
          `/api/v1/metrics?q=${encodeURIComponent(`${COLD_TERMS[k % COLD_TERMS.length]} -zq${coldQueries++}`)}`,
      };
    case 'detail':
      return { method: 'GET', path: (k) => `/api/v1/metrics/${id(k)}` };
    case 'contract':
      return { method: 'GET', path: (k) => `/api/v1/metrics/${id(k)}/contract` };
    case 'graphql':
      return { method: 'POST', path: () => '/graphql', body: JSON.stringify({ query: DASHBOARD_QUERY }) };
  }
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
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
        setupRequest: (req) => ({ ...req, path: request.path(k++) }),
      },
    ],
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}
