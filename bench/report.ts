/** The bench's report: per route and target, medians over rounds, ratios to the peers, targets; the console table. */
import { type LoadResult, PEERS, type PeerName, type RouteName } from './load.js';
import type { ProfileSummary } from './profile.js';

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const round1 = (x: number) => Math.round(x * 10) / 10;
/** Statements per request the service may send (median over the rotation). */
const STATEMENT_TARGETS: Partial<Record<RouteName, number>> = {
  list: 3,
  'list-304': 1,
  detail: 6,
  'detail-304': 2,
  contract: 6,
  graphql: 8,
};
/** A target's figures on a route: medians over rounds. */
export interface TargetFigures {
  rps: number;
  p50: number;
  p99: number;
  /** the slowest thousandth's bound (median over rounds) */
  p999: number;
  /** the server process's CPU (user + system) per request, ms (median over rounds) */
  cpuMsPerRequest: number | null;
  /** statements per request (median; the service's from Server-Timing, a peer's counted by the peer) */
  statements: number | null;
  /** per request over the rotation, in order */
  statementsSeen: number[];
  /** responses of an unexpected status, and socket errors/timeouts, over all rounds */
  errors: number;
}

interface PeerFigures extends TargetFigures {
  /** median over rounds of service rps / this peer's rps of the same round */
  throughputRatio: number | null;
  /** median over rounds of service p99 / this peer's p99 of the same round */
  p99Ratio: number | null;
}

export interface RouteResults {
  service: LoadResult[];
  floor: LoadResult[];
  postgraphile: LoadResult[];
}

interface RouteRow {
  route: RouteName;
  service: TargetFigures;
  floor: PeerFigures | null;
  postgraphile: PeerFigures | null;
  /** the peer the route is judged against: PostGraphile for graphql, the floor otherwise */
  reference: PeerName | null;
  targets: Record<string, boolean>;
}

/** Median CPU ms per request over rounds, to 0.01 ms; null when no round could read it. */
function cpuPerRequest(rs: LoadResult[]): number | null {
  const values = rs.map((r) => r.cpuMsPerRequest).filter((v): v is number => v !== null);
  return values.length ? Math.round(median(values) * 100) / 100 : null;
}

const round2 = (x: number | null) => (x === null ? null : Math.round(x * 100) / 100);

/** A target's medians over rounds (and its statements per request, when counted). */
export function summary(rs: LoadResult[], counts: number[] = []): TargetFigures {
  return {
    rps: Math.round(median(rs.map((r) => r.rps))),
    p50: median(rs.map((r) => r.p50)),
    p99: median(rs.map((r) => r.p99)),
    p999: median(rs.map((r) => r.p999)),
    cpuMsPerRequest: cpuPerRequest(rs),
    // The median: the service's first request of a minute also carries the key's last_used_at write (see README).
    statements: counts.length ? median(counts) : null,
    statementsSeen: counts,
    errors: rs.reduce((n, r) => n + r.non2xx + r.errors, 0),
  };
}

/** The service's figures over the peer's, round by round (the same number of rounds, each complete), medians. */
export function ratios(service: LoadResult[], peer: LoadResult[]) {
  return {
    throughputRatio: round2(median(service.map((s, i) => s.rps / peer[i]!.rps))),
    p99Ratio: round2(median(service.map((s, i) => s.p99 / Math.max(peer[i]!.p99, 1)))),
  };
}

/** Routes judged against the floor: service throughput >= 0.8 x and p99 <= 1.5 x the floor's (the read-path targets). */
const FLOOR_TARGET_ROUTES: RouteName[] = ['list', 'search', 'search-cold', 'detail', 'contract'];

/** The signed-in pages: no peer serves them; each answers within 50 ms at p99, read over one connection. */
const PAGE_ROUTES: RouteName[] = ['page-home', 'page-catalog', 'page-search', 'page-metric'];
const PAGE_P99_MS = 50;

export function buildReport(
  routes: RouteName[],
  results: Record<string, RouteResults>,
  statements: Partial<Record<RouteName, number[]>>,
  peerStatements: Record<PeerName, Partial<Record<RouteName, number[]>>>,
  peakRssMb: number,
  hwmMb: number,
  limiter: { redisRps: number[]; inProcessRps: number[] } | null,
) {
  const rows: RouteRow[] = [];
  for (const route of routes) {
    const routeResults = results[route];
    if (!routeResults) continue;
    const { service } = routeResults;
    // A run that completed no request measures nothing: no ratio, every target not met.
    const measured = service.length > 0 && service.every((r) => r.requests > 0);
    const peer = (name: PeerName): PeerFigures | null => {
      const rs = routeResults[name];
      if (!rs.length) return null;
      const complete = rs.length === service.length && rs.every((f) => f.requests > 0);
      return {
        ...summary(rs, peerStatements[name][route] ?? []),
        ...(complete ? ratios(service, rs) : { throughputRatio: null, p99Ratio: null }),
      };
    };
    const floor = peer('floor');
    const postgraphile = peer('postgraphile');
    const serviceFigures = summary(service, statements[route] ?? []);
    const targets: Record<string, boolean> = {};
    if (FLOOR_TARGET_ROUTES.includes(route)) {
      const ratio = measured ? (floor?.throughputRatio ?? null) : null;
      const p99 = measured ? (floor?.p99Ratio ?? null) : null;
      targets['throughput >= 0.8 x floor'] = ratio !== null && ratio >= 0.8;
      targets['p99 <= 1.5 x floor'] = p99 !== null && p99 <= 1.5;
    }
    if (PAGE_ROUTES.includes(route)) {
      targets[`p99 <= ${PAGE_P99_MS} ms`] = measured && serviceFigures.p99 <= PAGE_P99_MS;
    }
    if (route === 'graphql' && postgraphile) {
      const ratio = measured ? postgraphile.throughputRatio : null;
      targets['throughput >= 1.0 x PostGraphile'] = ratio !== null && ratio >= 1;
    }
    const limit = STATEMENT_TARGETS[route];
    if (limit !== undefined && serviceFigures.statements !== null)
      targets[`statements <= ${limit}`] = serviceFigures.statements <= limit;
    rows.push({
      route,
      service: serviceFigures,
      floor,
      postgraphile,
      reference: route === 'graphql' && postgraphile ? 'postgraphile' : floor ? 'floor' : null,
      targets,
    });
  }
  return {
    routes: rows,
    memory: { peakRssMb: round1(peakRssMb), vmHwmMb: hwmMb, target: 'peak RSS < 300 MB', met: peakRssMb < 300 },
    limiter: limiter && {
      redisRps: Math.round(median(limiter.redisRps)),
      inProcessRps: Math.round(median(limiter.inProcessRps)),
      redisCostPercent: round1(
        (100 * (median(limiter.inProcessRps) - median(limiter.redisRps))) / median(limiter.inProcessRps),
      ),
      rounds: limiter,
    },
  };
}

export function printReport(
  report: ReturnType<typeof buildReport>,
  profile: (ProfileSummary & { route: string }) | null,
  seconds: number,
) {
  const head = [
    'route',
    'target',
    'rps',
    'p50',
    'p99',
    'p99.9',
    'CPU/req',
    'SQL/req',
    'svc/peer rps',
    'svc/peer p99',
    'targets',
  ];
  const ms = (x: number | null, digits?: number) =>
    x === null ? '-' : `${digits === undefined ? x : x.toFixed(digits)} ms`;
  const sql = (f: TargetFigures) => {
    if (f.statements === null) return '?';
    const max = Math.max(...f.statementsSeen);
    return `${f.statements}${max > f.statements ? ` (max ${max})` : ''}`;
  };
  const lines: string[][] = [];
  for (const r of report.routes) {
    const errors = (f: TargetFigures) => (f.errors ? `${f.errors} non-2xx/errors` : '');
    lines.push([
      r.route,
      'service',
      String(r.service.rps),
      ms(r.service.p50),
      ms(r.service.p99),
      ms(r.service.p999),
      ms(r.service.cpuMsPerRequest, 2),
      sql(r.service),
      '',
      '',
      [...Object.entries(r.targets).map(([name, met]) => `${met ? 'met' : 'NOT met'}: ${name}`), errors(r.service)]
        .filter(Boolean)
        .join('; '),
    ]);
    for (const name of PEERS) {
      const f = r[name];
      if (!f) continue;
      const mark = r.reference === name && r.floor && r.postgraphile ? ' *' : '';
      lines.push([
        '',
        name + mark,
        String(f.rps),
        ms(f.p50),
        ms(f.p99),
        ms(f.p999),
        ms(f.cpuMsPerRequest, 2),
        sql(f),
        f.throughputRatio?.toFixed(2) ?? '-',
        f.p99Ratio?.toFixed(2) ?? '-',
        errors(f),
      ]);
    }
  }
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join(' | ');
  console.log(`\n${fmt(head)}\n${widths.map((w) => '-'.repeat(w)).join('-|-')}`);
  for (const l of lines) console.log(fmt(l));
  console.log(
    '\nsvc/peer: median over rounds of the service figure over the peer figure of the same round; * the peer a route is judged against (PostGraphile for graphql).',
  );
  const m = report.memory;
  console.log(
    `\npeak RSS of the service under load: ${m.peakRssMb} MB (VmHWM ${m.vmHwmMb} MB) — ${m.met ? 'met' : 'NOT met'}: ${m.target}`,
  );
  if (report.limiter) {
    const l = report.limiter;
    console.log(
      `rate limiter on list: Redis ${l.redisRps} rps vs in-process ${l.inProcessRps} rps (Redis costs ${l.redisCostPercent}%)`,
    );
  }
  if (profile) {
    console.log(
      `\nCPU profile of the service under ${profile.route} (${profile.totalMs.toFixed(0)} ms sampled), self time by package:`,
    );
    for (const p of profile.packages.slice(0, 10)) console.log(`  ${p.percent.toFixed(1).padStart(5)}%  ${p.package}`);
    console.log('top frames:');
    for (const f of profile.frames.slice(0, 12)) console.log(`  ${f.percent.toFixed(1).padStart(5)}%  ${f.frame}`);
  }
  console.log(`\ntotal ${seconds.toFixed(0)} s`);
}
