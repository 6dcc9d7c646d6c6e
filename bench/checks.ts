/** Before the load: do the peers answer what the service answers, and how many statements a request costs. */
import {
  type Dashboard,
  type PeerName,
  peersOf,
  postgraphileDashboard,
  postgraphileDashboardOf,
  type RouteName,
  type RouteRequest,
  routeRequest,
  serviceDashboard,
} from './load.js';
import type { Started } from './processes.js';
import type { SeedResult } from './seed.js';

/** The first path where two JSON values differ, or null. */
export function firstDifference(a: unknown, b: unknown, path = '$'): string | null {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null)) return path;
  if (a && typeof a === 'object') {
    const ka = Object.keys(a);
    const kb = Object.keys(b as object);
    if (ka.join() !== kb.join()) return `${path} keys [${ka.join()}] vs [${kb.join()}]`;
    for (const k of ka) {
      const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
      if (d) return d;
    }
    return null;
  }
  return a === b ? null : `${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
}

/** One request of a route (GET or the GraphQL POST), its status and JSON body. */
export async function requestJson(
  base: string,
  request: RouteRequest,
  k: number,
  apiKey: string,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(base + request.path(k), {
    method: request.method,
    headers: {
      authorization: `Bearer ${apiKey}`,
      ...(request.body ? { 'content-type': 'application/json' } : {}),
      ...request.headers?.(k),
    },
    ...(request.body ? { body: request.body } : {}),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: compared as text
  }
  return { status: response.status, body };
}

const GET = (path: string): RouteRequest => ({ method: 'GET', path: () => path });

export interface EquivalenceCheck {
  peer: PeerName;
  route: string;
  path: string;
  difference: string | null;
}

/**
 * Same status and JSON from the service and the floor, on the rotation's paths plus isolation and
 * error cases, and on the dashboard; the same dashboard from PostGraphile (ids, names, statuses,
 * counts, notes and total: its JSON has PostGraphile's own shape).
 */
export async function checkEquivalence(
  service: Started,
  peers: Partial<Record<PeerName, Started>>,
  data: SeedResult,
  { routes, metrics, log }: { routes: RouteName[]; metrics: number; log: (message: string) => void },
): Promise<EquivalenceCheck[]> {
  const checks: EquivalenceCheck[] = [];
  const { floor, postgraphile } = peers;
  if (floor) {
    const cases: [string, RouteRequest, number][] = [];
    for (const route of routes.filter((r) => peersOf(r).includes('floor'))) {
      const request = routeRequest(route, data);
      // The dashboard has one request; the other routes rotate.
      for (let k = 0; k < (route === 'graphql' ? 1 : 10); k++) cases.push([route, request, k]);
    }
    cases.push(
      ['isolation', GET(`/api/v1/metrics/${data.foreignMetricId}`), 0],
      ['isolation', GET(`/api/v1/metrics/${data.foreignMetricId}/contract`), 0],
      ['errors', GET('/api/v1/metrics/not-a-uuid'), 0],
      ['list', GET(`/api/v1/metrics?page=${Math.ceil(metrics / 20) + 5}`), 0],
    );
    if (routes.includes('list')) {
      // The trust filter over the announced verdicts, pages of every verdict, sizes, and past the end.
      for (const path of [
        '/api/v1/metrics?trust=use_with_caution',
        '/api/v1/metrics?trust=use_with_caution&page=7&pageSize=100',
        '/api/v1/metrics?trust=do_not_use&page=3',
        '/api/v1/metrics?trust=use',
        `/api/v1/metrics?trust=do_not_use&page=${Math.ceil(metrics / 20) + 5}`,
      ]) {
        cases.push(['list-trust', GET(path), 0]);
      }
    }
    for (const [route, rotating, k] of cases) {
      // One path for both: a cold search's path is new on every call.
      const path = rotating.path(k);
      const request = { ...rotating, path: () => path };
      const [s, f] = await Promise.all([
        requestJson(service.base, request, k, data.apiKey),
        requestJson(floor.base, request, k, data.apiKey),
      ]);
      const difference = s.status !== f.status ? `status ${s.status} vs ${f.status}` : firstDifference(s.body, f.body);
      checks.push({ peer: 'floor', route, path, difference });
    }
  }
  if (postgraphile) {
    const [s, p] = await Promise.all([
      requestJson(service.base, routeRequest('graphql', data), 0, data.apiKey),
      requestJson(postgraphile.base, postgraphileDashboard(data.orgId), 0, data.apiKey),
    ]);
    const mine = serviceDashboard(s.body);
    const theirs = postgraphileDashboardOf(p.body);
    let difference: string | null;
    if (s.status !== 200 || p.status !== 200) difference = `status ${s.status} vs ${p.status}`;
    else if (!mine || !theirs) difference = `no data: ${JSON.stringify(mine ? p.body : s.body).slice(0, 300)}`;
    else if (mine.items.length !== Math.min(100, mine.total))
      difference = `the service returned ${mine.items.length} of ${mine.total} metrics`;
    else if (!mine.items.some((m) => m.threads && m.notes.length))
      difference = 'the page holds no discussed metric: agreeing on it would prove nothing about the counts and notes';
    else difference = firstDifference(mine, theirs);
    checks.push({ peer: 'postgraphile', route: 'graphql', path: '/graphql', difference });
    if (mine) log(`dashboard: ${describeDashboard(mine)}`);
  }
  return checks;
}

/** What the dashboard page holds, so that an equivalence on empty answers does not pass unnoticed. */
export function describeDashboard(d: Dashboard): string {
  const sum = (f: (m: Dashboard['items'][number]) => number) => d.items.reduce((n, m) => n + f(m), 0);
  return `${d.items.length} of ${d.total} metrics, ${sum((m) => m.threads ?? 0)} threads, ${sum((m) => m.messages ?? 0)} live messages, ${sum((m) => m.notes.length)} pinned notes`;
}

/** Statements per request of the service from Server-Timing (`desc="<n> queries"`), over the rotation. */
export async function statementCounts(
  service: Started,
  data: SeedResult,
  requests: Map<RouteName, RouteRequest>,
  routes: RouteName[],
): Promise<Partial<Record<RouteName, number[]>>> {
  const counts: Partial<Record<RouteName, number[]>> = {};
  for (const route of routes) {
    const request = requests.get(route) ?? routeRequest(route, data);
    const seen: number[] = [];
    for (let k = 0; k < 10; k++) {
      const response = await fetch(service.base + request.path(k), {
        method: request.method,
        headers: {
          authorization: `Bearer ${data.apiKey}`,
          'content-type': 'application/json',
          ...request.headers?.(k),
        },
        ...(request.body ? { body: request.body } : {}),
      });
      await response.arrayBuffer();
      const n = /desc="(\d+) queries"/.exec(response.headers.get('server-timing') ?? '')?.[1];
      if (n !== undefined) seen.push(Number(n));
    }
    counts[route] = seen;
  }
  return counts;
}

/** A peer's counters: statements its pool sent and requests it answered, since it started. */
async function peerCounters(peer: Started): Promise<{ statements: number; requests: number }> {
  const response = await fetch(`${peer.base}/bench/statements`);
  return (await response.json()) as { statements: number; requests: number };
}

/**
 * Statements per request of a peer, counted by the peer itself (every `query` its pool sends): the
 * rotation's first 10 requests one at a time, the counter read before and after each. A request
 * during which the peer answered anything else is left out.
 */
export async function peerStatementCounts(peer: Started, request: RouteRequest, apiKey: string): Promise<number[]> {
  const seen: number[] = [];
  for (let k = 0; k < 10; k++) {
    const before = await peerCounters(peer);
    const { status } = await requestJson(peer.base, request, k, apiKey);
    const after = await peerCounters(peer);
    if (status < 400 && after.requests - before.requests === 1) seen.push(after.statements - before.statements);
  }
  return seen;
}

/** A list page's statements without `trust` on its items, with it, and with the `trust` filter, at one page size. */
export interface ListTrustStatements {
  pageSize: number;
  /** a key of `definition:read` alone: items without `trust` */
  without: number[];
  /** the bench key: items with `trust` */
  withTrust: number[];
  /** the bench key and `trust=<verdict>` */
  filtered: Record<string, number[]>;
  /** the most the median of a page with `trust` (filtered or not) exceeds the median without */
  extra: number;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? (sorted[Math.floor((sorted.length - 1) / 2)] as number) : Number.NaN;
};

/**
 * Statements of list pages with and without `trust` (items and filter), at page sizes 20 and 100,
 * from the service's Server-Timing: a page with `trust` may cost at most 2 statements more than
 * one without, whatever its size (the verdicts' facts are read in the page's statement).
 */
export async function listTrustStatements(service: Started, data: SeedResult): Promise<ListTrustStatements[]> {
  const counts = async (key: string, query: string) => {
    const seen: number[] = [];
    for (let k = 0; k < 6; k++) {
      const response = await fetch(`${service.base}/api/v1/metrics?page=${1 + k}&${query}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`list ${query}: ${response.status}`);
      const n = /desc="(\d+) queries"/.exec(response.headers.get('server-timing') ?? '')?.[1];
      if (n !== undefined) seen.push(Number(n));
    }
    return seen;
  };
  const results: ListTrustStatements[] = [];
  for (const pageSize of [20, 100]) {
    const without = await counts(data.definitionKey, `pageSize=${pageSize}`);
    const withTrust = await counts(data.apiKey, `pageSize=${pageSize}`);
    const filtered: Record<string, number[]> = {};
    for (const verdict of ['use', 'use_with_caution', 'do_not_use']) {
      filtered[verdict] = await counts(data.apiKey, `pageSize=${pageSize}&trust=${verdict}`);
    }
    const extra = Math.max(...[withTrust, ...Object.values(filtered)].map(median)) - median(without);
    results.push({ pageSize, without, withTrust, filtered, extra });
  }
  return results;
}
