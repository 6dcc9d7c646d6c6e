/**
 * npm run bench -- [--metrics 10000] [--connections 32] [--duration 10] [--rounds 3]
 *                  [--routes list,list-304,search,search-cold,detail,detail-304,contract,graphql] [--quick] [--keep]
 *                  [--profile <route>]
 *
 * Builds the service (`npm run build`), creates bench_<timestamp> on BENCH_DATABASE_URL's server,
 * migrates and seeds it, starts the service (compiled, as in production: dist/server.js) and the
 * floor (bench/floor.ts) as child processes, checks that both answer the same JSON, then loads
 * them in turn (A B A B ...) and writes bench/results/<date>.json.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migratePostgres } from '../src/db/migrate.js';
import {
  ALL_ROUTES,
  conditionalRoute,
  FLOOR_ROUTES,
  type LoadResult,
  type RouteName,
  type RouteRequest,
  routeRequest,
  runLoad,
} from './load.js';
import { cpuMs, projectRoot, type Started, startNode, withPeakRss } from './processes.js';
import { type ProfileSummary, summarizeProfile } from './profile.js';
import { type SeedResult, seed } from './seed.js';

const { values: args } = parseArgs({
  options: {
    metrics: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '32' },
    duration: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    routes: { type: 'string', default: ALL_ROUTES.join(',') },
    quick: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    profile: { type: 'string' },
  },
});

const metrics = Number(args.metrics);
const connections = Number(args.connections);
const duration = args.quick ? 3 : Number(args.duration);
const rounds = args.quick ? 1 : Number(args.rounds);
const routes = args.routes.split(',').map((r) => r.trim()) as RouteName[];
for (const route of routes) if (!ALL_ROUTES.includes(route)) throw new Error(`unknown route ${route}`);
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const publicAppUrl = 'http://localhost:3000';
const warmup = args.quick ? 1 : 2;

const STATEMENT_TARGETS: Partial<Record<RouteName, number>> = {
  list: 3,
  'list-304': 1,
  detail: 6,
  'detail-304': 2,
  contract: 6,
  graphql: 8,
};
const log = (message: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const round1 = (x: number) => Math.round(x * 10) / 10;

/**
 * The service as `npm start` runs it in production: compiled by `npm run build`, started with
 * plain node and the start script's node flags (its heap sizes), read from package.json.
 */
const [SERVICE_SCRIPT, ...SERVICE_NODE_ARGS] = (() => {
  const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const [node, ...args] = pkg.scripts.start.split(/\s+/);
  const script = args.pop();
  if (node !== 'node' || !script) throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  return [script, ...args];
})() as [string, ...string[]];

/** Compiles src/ to dist/ so that the service measured is the current source; exits 1 if that fails. */
function build() {
  log('npm run build');
  const result = spawnSync('npm', ['run', 'build'], { cwd: projectRoot, stdio: 'inherit' });
  if (result.status !== 0) {
    const reason = result.error ? result.error.message : `exit ${result.status ?? result.signal}`;
    console.error(`[bench] npm run build failed (${reason}); not benchmarking a stale or missing dist/`);
    process.exit(1);
  }
}

function serviceEnv(databaseUrl: string, extra: Record<string, string | undefined> = {}) {
  return {
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    THROTTLE_PER_MINUTE: '1000000000',
    LOG_LEVEL: 'warn',
    PUBLIC_APP_URL: publicAppUrl,
    ...extra,
  };
}

/** The first path where two JSON values differ, or null. */
function firstDifference(a: unknown, b: unknown, path = '$'): string | null {
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

async function getJson(
  base: string,
  path: string,
  apiKey: string,
): Promise<{ status: number; body: unknown; timing: string | null }> {
  const response = await fetch(base + path, { headers: { authorization: `Bearer ${apiKey}` } });
  return { status: response.status, body: await response.json(), timing: response.headers.get('server-timing') };
}

/** Same status and JSON from service and floor, on the rotation's paths plus isolation and error cases. */
async function checkEquivalence(service: Started, floor: Started, data: SeedResult) {
  const checks: { route: string; path: string; difference: string | null }[] = [];
  const paths: [string, string][] = [];
  for (const route of FLOOR_ROUTES.filter((r) => routes.includes(r))) {
    const request = routeRequest(route, data.metricIds);
    for (let k = 0; k < 10; k++) paths.push([route, request.path(k)]);
  }
  paths.push(
    ['isolation', `/api/v1/metrics/${data.foreignMetricId}`],
    ['isolation', `/api/v1/metrics/${data.foreignMetricId}/contract`],
  );
  paths.push(['errors', '/api/v1/metrics/not-a-uuid'], ['list', `/api/v1/metrics?page=${Math.ceil(metrics / 20) + 5}`]);
  for (const [route, path] of paths) {
    const [s, f] = await Promise.all([
      getJson(service.base, path, data.apiKey),
      getJson(floor.base, path, data.apiKey),
    ]);
    const difference = s.status !== f.status ? `status ${s.status} vs ${f.status}` : firstDifference(s.body, f.body);
    checks.push({ route, path, difference });
  }
  return checks;
}

/** Statements per request from Server-Timing (`desc="<n> queries"`), over the rotation. */
async function statementCounts(
  service: Started,
  data: SeedResult,
  requests: Map<RouteName, RouteRequest>,
): Promise<Partial<Record<RouteName, number[]>>> {
  const counts: Partial<Record<RouteName, number[]>> = {};
  for (const route of routes) {
    const request = requests.get(route) ?? routeRequest(route, data.metricIds);
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

async function main() {
  const started = Date.now();
  build();
  const dbName = `bench_${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const dbUrlObject = new URL(adminUrl);
  dbUrlObject.pathname = `/${dbName}`;
  const databaseUrl = dbUrlObject.toString();
  log(`database ${dbName}`);
  const running: Started[] = [];
  try {
    await migratePostgres(databaseUrl);
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    const seedStart = Date.now();
    const data = await seed(pool, metrics);
    await pool.end();
    const seedSeconds = (Date.now() - seedStart) / 1000;
    log(`seeded in ${seedSeconds.toFixed(1)} s: ${JSON.stringify(data.counts)}`);

    const service = await startNode('service', SERVICE_SCRIPT, serviceEnv(databaseUrl), {
      readyPath: '/healthz',
      nodeArgs: SERVICE_NODE_ARGS,
    });
    running.push(service);
    const floor = await startNode('floor', 'bench/floor.ts', {
      DATABASE_URL: databaseUrl,
      PUBLIC_APP_URL: publicAppUrl,
      POOL_SIZE: '10',
    });
    running.push(floor);

    const equivalence = await checkEquivalence(service, floor, data);
    const mismatches = equivalence.filter((c) => c.difference);
    log(`same JSON from service and floor: ${equivalence.length - mismatches.length}/${equivalence.length}`);
    for (const m of mismatches.slice(0, 5)) log(`  differs ${m.path}: ${m.difference}`);

    // autocannon stops at the deadline with requests in flight; their statements (a slow search can
    // run for seconds) must not slow the next run, which is often the other target's.
    const settle = async () => {
      for (let waited = 0; waited < 60_000; waited += 100) {
        const { rows } = await admin.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND state = 'active'`,
          [dbName],
        );
        if (!rows[0]?.n) return;
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    // Conditional routes (`-304`): the rotation of the plain route with the tags its 200s carry. Every
    // instance gives the same tags (same build, data and PUBLIC_APP_URL), so they serve the other runs too.
    const requests = new Map<RouteName, RouteRequest>();
    for (const route of routes) {
      const plain = routeRequest(route, data.metricIds);
      requests.set(route, route.endsWith('-304') ? await conditionalRoute(service.base, plain, data.apiKey) : plain);
    }
    const load = async (target: Started, route: RouteName, seconds: number) => {
      const request = requests.get(route) ?? routeRequest(route, data.metricIds);
      const cpuBefore = cpuMs(target.pid);
      const result = await runLoad(target.base, request, data.apiKey, {
        connections,
        duration: seconds,
      });
      // Read before settle(): the server's CPU during the run, over the requests it completed.
      const cpu = cpuMs(target.pid) - cpuBefore;
      await settle();
      return { ...result, cpuMsPerRequest: result.requests > 0 && cpu > 0 ? cpu / result.requests : null };
    };

    log(`warm-up ${warmup} s per route and target`);
    for (const route of routes) {
      await load(service, route, warmup);
      if (FLOOR_ROUTES.includes(route)) await load(floor, route, warmup);
    }

    const results: Record<string, { service: LoadResult[]; floor: LoadResult[] }> = {};
    let peakRssMb = 0;
    for (let r = 1; r <= rounds; r++) {
      for (const route of routes) {
        results[route] ??= { service: [], floor: [] };
        const { result, peakMb } = await withPeakRss(service.pid, () => load(service, route, duration));
        peakRssMb = Math.max(peakRssMb, peakMb);
        results[route].service.push(result);
        let line = `round ${r} ${route.padEnd(8)} service ${result.rps.toFixed(0)} rps p99 ${result.p99} ms`;
        if (FLOOR_ROUTES.includes(route)) {
          const f = await load(floor, route, duration);
          results[route].floor.push(f);
          line += ` | floor ${f.rps.toFixed(0)} rps p99 ${f.p99} ms`;
        }
        log(
          line +
            (result.non2xx || result.errors ? `  (service non-2xx ${result.non2xx}, errors ${result.errors})` : ''),
        );
      }
    }

    // Rate limiter: Redis (the service above) vs in-process (no REDIS_URL), alternating on list.
    let limiter: { redisRps: number[]; inProcessRps: number[] } | null = null;
    if (routes.includes('list')) {
      const local = await startNode(
        'service (no Redis)',
        SERVICE_SCRIPT,
        serviceEnv(databaseUrl, { REDIS_URL: undefined }),
        { readyPath: '/healthz', nodeArgs: SERVICE_NODE_ARGS },
      );
      running.push(local);
      await load(local, 'list', warmup);
      limiter = { redisRps: [], inProcessRps: [] };
      for (let r = 1; r <= rounds; r++) {
        limiter.redisRps.push((await load(service, 'list', duration)).rps);
        limiter.inProcessRps.push((await load(local, 'list', duration)).rps);
      }
      log(
        `limiter on list: Redis ${median(limiter.redisRps).toFixed(0)} rps, in-process ${median(limiter.inProcessRps).toFixed(0)} rps`,
      );
      await local.stop();
    }
    const hwmMb = Number((await import('./processes.js')).memoryMb(service.pid).hwm.toFixed(1));
    await service.stop();

    const timed = await startNode(
      'service (SERVER_TIMING=1)',
      SERVICE_SCRIPT,
      serviceEnv(databaseUrl, { SERVER_TIMING: '1' }),
      { readyPath: '/healthz', nodeArgs: SERVICE_NODE_ARGS },
    );
    running.push(timed);
    const statements = await statementCounts(timed, data, requests);
    await timed.stop();

    let profile: (ProfileSummary & { route: string; file: string }) | null = null;
    if (args.profile) {
      const route = args.profile as RouteName;
      const dir = join(projectRoot, 'bench', 'results', 'profiles');
      mkdirSync(dir, { recursive: true });
      const before = new Set(readdirSync(dir));
      const profiled = await startNode('service (--cpu-prof)', SERVICE_SCRIPT, serviceEnv(databaseUrl), {
        readyPath: '/healthz',
        nodeArgs: [...SERVICE_NODE_ARGS, '--cpu-prof', '--cpu-prof-dir', dir],
      });
      running.push(profiled);
      await load(profiled, route, duration);
      await profiled.stop();
      const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile') && !before.has(f));
      if (file) profile = { route, file: join('bench/results/profiles', file), ...summarizeProfile(join(dir, file)) };
    }

    const report = buildReport(results, statements, peakRssMb, hwmMb, limiter);
    const output = {
      date: new Date().toISOString(),
      settings: {
        metrics,
        connections,
        duration,
        rounds,
        routes,
        warmup,
        cpus: (await import('node:os')).cpus().length,
        node: process.version,
      },
      seed: { seconds: seedSeconds, counts: data.counts },
      equivalence: { checked: equivalence.length, mismatches },
      ...report,
      raw: results,
      profile,
      totalSeconds: (Date.now() - started) / 1000,
    };
    const resultsDir = join(projectRoot, 'bench', 'results');
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `${output.date.replace(/:/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(output, null, 2)}\n`);
    // Formatted like the rest of the repository, so that `npm run check` stays clean.
    spawnSync(join(projectRoot, 'node_modules', '.bin', 'biome'), ['format', '--write', file], { stdio: 'ignore' });
    printReport(report, profile, output.totalSeconds);
    log(`written ${file.slice(projectRoot.length + 1)}`);
  } finally {
    for (const p of running) await p.stop().catch(() => undefined);
    if (args.keep) log(`kept database ${databaseUrl}`);
    else await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}

interface RouteFigures {
  rps: number;
  p50: number;
  p99: number;
  /** the server process's CPU (user + system) per request, ms (median over rounds) */
  cpuMsPerRequest: number | null;
}

interface RouteRow {
  route: RouteName;
  service: RouteFigures;
  floor: RouteFigures | null;
  /** median over rounds of service rps / floor rps of the same round */
  throughputRatio: number | null;
  /** median over rounds of service p99 / floor p99 */
  p99Ratio: number | null;
  statements: number | null;
  /** per request over the rotation, in order */
  statementsSeen: number[];
  errors: number;
  targets: Record<string, boolean>;
}

/** Median CPU ms per request over rounds, to 0.01 ms; null when no round could read it. */
function cpuPerRequest(rs: LoadResult[]): number | null {
  const values = rs.map((r) => r.cpuMsPerRequest).filter((v): v is number => v !== null);
  return values.length ? Math.round(median(values) * 100) / 100 : null;
}

function buildReport(
  results: Record<string, { service: LoadResult[]; floor: LoadResult[] }>,
  statements: Partial<Record<RouteName, number[]>>,
  peakRssMb: number,
  hwmMb: number,
  limiter: { redisRps: number[]; inProcessRps: number[] } | null,
) {
  const rows: RouteRow[] = [];
  for (const route of routes) {
    const { service, floor } = results[route]!;
    const summary = (rs: LoadResult[]) => ({
      rps: Math.round(median(rs.map((r) => r.rps))),
      p50: median(rs.map((r) => r.p50)),
      p99: median(rs.map((r) => r.p99)),
      cpuMsPerRequest: cpuPerRequest(rs),
    });
    // A run that completed no request measures nothing: no ratio, every target not met.
    const hasFloor = floor.length > 0 && floor.every((f) => f.requests > 0);
    const measured = service.every((r) => r.requests > 0);
    const throughputRatio = hasFloor ? median(service.map((s, i) => s.rps / floor[i]!.rps)) : null;
    const p99Ratio = hasFloor ? median(service.map((s, i) => s.p99 / Math.max(floor[i]!.p99, 1))) : null;
    const counts = statements[route] ?? [];
    // The median: the first request of a minute also carries the key's last_used_at write (see README).
    const statementsPerRequest = counts.length ? median(counts) : null;
    const targets: Record<string, boolean> = {};
    if (FLOOR_ROUTES.includes(route)) {
      targets['throughput >= 0.6 x floor'] = measured && throughputRatio !== null && throughputRatio >= 0.6;
      targets['p99 <= 3 x floor'] = measured && p99Ratio !== null && p99Ratio <= 3;
    }
    const limit = STATEMENT_TARGETS[route];
    if (limit !== undefined && statementsPerRequest !== null)
      targets[`statements <= ${limit}`] = statementsPerRequest <= limit;
    rows.push({
      route,
      service: summary(service),
      floor: hasFloor ? summary(floor) : null,
      throughputRatio: throughputRatio === null ? null : Math.round(throughputRatio * 100) / 100,
      p99Ratio: p99Ratio === null ? null : Math.round(p99Ratio * 100) / 100,
      statements: statementsPerRequest,
      statementsSeen: counts,
      errors: service.reduce((n, r) => n + r.non2xx + r.errors, 0),
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

function printReport(
  report: ReturnType<typeof buildReport>,
  profile: (ProfileSummary & { route: string }) | null,
  seconds: number,
) {
  const head = [
    'route',
    'svc rps',
    'svc p50',
    'svc p99',
    'floor rps',
    'floor p50',
    'floor p99',
    'ratio',
    'p99 x',
    'svc CPU/req',
    'floor CPU/req',
    'SQL/req',
    'targets',
  ];
  const lines = report.routes.map((r) => [
    r.route,
    String(r.service.rps),
    `${r.service.p50} ms`,
    `${r.service.p99} ms`,
    r.floor ? String(r.floor.rps) : '-',
    r.floor ? `${r.floor.p50} ms` : '-',
    r.floor ? `${r.floor.p99} ms` : '-',
    r.throughputRatio?.toFixed(2) ?? '-',
    r.p99Ratio?.toFixed(2) ?? '-',
    r.service.cpuMsPerRequest === null ? '-' : `${r.service.cpuMsPerRequest.toFixed(2)} ms`,
    r.floor?.cpuMsPerRequest == null ? '-' : `${r.floor.cpuMsPerRequest.toFixed(2)} ms`,
    r.statements === null
      ? '?'
      : `${r.statements}${Math.max(...r.statementsSeen) > r.statements ? ` (max ${Math.max(...r.statementsSeen)})` : ''}`,
    Object.entries(r.targets)
      .map(([name, met]) => `${met ? 'met' : 'NOT met'}: ${name}`)
      .join('; ') + (r.errors ? `; ${r.errors} non-2xx/errors` : ''),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join(' | ');
  console.log(`\n${fmt(head)}\n${widths.map((w) => '-'.repeat(w)).join('-|-')}`);
  for (const l of lines) console.log(fmt(l));
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

await main();
