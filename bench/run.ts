/**
 * npm run bench -- [--metrics 10000] [--connections 32] [--duration 10] [--rounds 3]
 *                  [--routes list,list-304,search,search-cold,search-written,detail,detail-304,contract,graphql]
 *                  [--quick] [--keep] [--profile <route>] [--apply-metrics 10000 | --skip-apply] [--skip-changes]
 *                  [--queue-metrics 2000 | --skip-queue] [--tenants 1000]
 *                  [--upload-metrics 100000] [--upload-part-metrics 10000]
 *
 * Builds the service (`npm run build`), creates bench_<timestamp> on BENCH_DATABASE_URL's server,
 * migrates and seeds it, starts the service (compiled, as in production: dist/server.js), the
 * floor (bench/floor.ts) and, for the GraphQL dashboard, PostGraphile (bench/postgraphile.ts) as
 * child processes, checks that they answer the same, then loads them in turn (A B A B ..., A B C
 * for graphql), then the tenants scenario (bench/tenants.ts: 1,000 organizations of 100 metrics, read
 * by each one's key in turn), the apply scenario (bench/apply.ts), the lineage apply scenario
 * (bench/lineage-apply.ts: deprecating a metric with 1,000 transitive dependents), with --upload-metrics
 * the upload scenario (bench/upload.ts: a registry of more metrics than one document lists, sent in parts), the queued-applies scenario
 * (bench/queued-applies.ts: another organization's reads beside 10 concurrent applies) and the change-feed scenario with three
 * instances (bench/changes.ts), and writes bench/results/<date>.json.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migratePostgres } from '../src/db/migrate.js';
import { runApplyScenario } from './apply.js';
import { runChangesScenario } from './changes.js';
import { checkEquivalence, listTrustStatements, peerStatementCounts, statementCounts } from './checks.js';
import { runLineageApplyScenario } from './lineage-apply.js';
import {
  ALL_ROUTES,
  conditionalRoute,
  PEERS,
  type PeerName,
  peersOf,
  postgraphileDashboard,
  type RouteName,
  type RouteRequest,
  routeRequest,
  runLoad,
} from './load.js';
import { COMPUTED_COLUMNS } from './postgraphile.js';
import { cpuMs, memoryMb, projectRoot, type Started, startNode, withPeakRss } from './processes.js';
import { type ProfileSummary, summarizeProfile } from './profile.js';
import { runQueuedAppliesScenario } from './queued-applies.js';
import { buildReport, median, printReport, type RouteResults } from './report.js';
import { seed } from './seed.js';
import { runTenantsScenario } from './tenants.js';
import { runUploadScenario } from './upload.js';

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
    'apply-metrics': { type: 'string', default: '10000' },
    'skip-apply': { type: 'boolean', default: false },
    'skip-changes': { type: 'boolean', default: false },
    'queue-metrics': { type: 'string', default: '2000' },
    'skip-queue': { type: 'boolean', default: false },
    tenants: { type: 'string', default: '1000' },
    'upload-metrics': { type: 'string', default: '0' },
    'upload-part-metrics': { type: 'string', default: '10000' },
  },
});

const metrics = Number(args.metrics);
const connections = Number(args.connections);
const duration = args.quick ? 3 : Number(args.duration);
const rounds = args.quick ? 1 : Number(args.rounds);
const tenantCount = Number(args.tenants);
const routes = args.routes.split(',').map((r) => r.trim()) as RouteName[];
for (const route of routes) if (!ALL_ROUTES.includes(route)) throw new Error(`unknown route ${route}`);
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const publicAppUrl = 'http://localhost:3000';
const warmup = args.quick ? 1 : 2;

const log = (message: string) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

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
    // the pages' reader is a session, whose budget is this default (the bench keys have their own)
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOG_LEVEL: 'warn',
    PUBLIC_APP_URL: publicAppUrl,
    ...extra,
  };
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
    const data = await seed(pool, metrics, databaseUrl);
    await pool.end();
    const seedSeconds = (Date.now() - seedStart) / 1000;
    log(`seeded in ${seedSeconds.toFixed(1)} s: ${JSON.stringify(data.counts)}`);

    const service = await startNode('service', SERVICE_SCRIPT, serviceEnv(databaseUrl), {
      readyPath: '/healthz',
      nodeArgs: SERVICE_NODE_ARGS,
    });
    running.push(service);
    // The peers the chosen routes need: the floor for all but the conditional routes, PostGraphile for graphql.
    const peers: Partial<Record<PeerName, Started>> = {};
    if (routes.some((r) => peersOf(r).includes('floor'))) {
      peers.floor = await startNode('floor', 'bench/floor.ts', {
        NODE_ENV: 'production',
        DATABASE_URL: databaseUrl,
        PUBLIC_APP_URL: publicAppUrl,
        POOL_SIZE: '10',
      });
      running.push(peers.floor);
    }
    if (routes.some((r) => peersOf(r).includes('postgraphile'))) {
      // Its computed columns, in this bench database only (dropped with it).
      const bench = new pg.Client({ connectionString: databaseUrl });
      await bench.connect();
      await bench.query(COMPUTED_COLUMNS);
      await bench.end();
      peers.postgraphile = await startNode(
        'postgraphile',
        'bench/postgraphile.ts',
        // GRAPHILE_ENV: Grafast's production mode (its default too, but it warns when unset).
        { NODE_ENV: 'production', GRAPHILE_ENV: 'production', DATABASE_URL: databaseUrl, POOL_SIZE: '10' },
        { readyPath: '/bench/statements' },
      );
      running.push(peers.postgraphile);
    }

    const equivalence = await checkEquivalence(service, peers, data, { routes, metrics, log });
    for (const peer of PEERS) {
      const checks = equivalence.filter((c) => c.peer === peer);
      if (!checks.length) continue;
      const differing = checks.filter((c) => c.difference);
      log(`same answers from service and ${peer}: ${checks.length - differing.length}/${checks.length}`);
      for (const m of differing.slice(0, 5)) log(`  differs ${m.path}: ${m.difference}`);
    }
    const mismatches = equivalence.filter((c) => c.difference);

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
      const plain = routeRequest(route, data);
      requests.set(route, route.endsWith('-304') ? await conditionalRoute(service.base, plain, data.apiKey) : plain);
    }
    /** What a target is sent for a route: PostGraphile gets the dashboard in its own schema. */
    const requestFor = (target: Started, route: RouteName) =>
      target === peers.postgraphile
        ? postgraphileDashboard(data.orgId)
        : (requests.get(route) ?? routeRequest(route, data));
    const loadRequest = async (target: Started, request: RouteRequest, seconds: number, clients = connections) => {
      const cpuBefore = cpuMs(target.pid);
      const result = await runLoad(target.base, request, data.apiKey, { connections: clients, duration: seconds });
      // Read before settle(): the server's CPU during the run, over the requests it completed.
      const cpu = cpuMs(target.pid) - cpuBefore;
      await settle();
      return { ...result, cpuMsPerRequest: result.requests > 0 && cpu > 0 ? cpu / result.requests : null };
    };
    // A page is measured as one person reads it (one connection at a time): its p99 is the time the
    // service takes to answer it, not a queue behind 32 connections of API traffic.
    const load = (target: Started, route: RouteName, seconds: number) =>
      loadRequest(target, requestFor(target, route), seconds, route.startsWith('page-') ? 1 : connections);
    const peersFor = (route: RouteName) =>
      peersOf(route).flatMap((peer) => (peers[peer] ? [[peer, peers[peer]] as const] : []));

    log(`warm-up ${warmup} s per route and target`);
    for (const route of routes) {
      await load(service, route, warmup);
      for (const [, target] of peersFor(route)) await load(target, route, warmup);
    }

    // Rounds alternate the targets of a route: service, floor (A B A B ...), and PostGraphile on graphql (A B C ...).
    const results: Record<string, RouteResults> = {};
    let peakRssMb = 0;
    for (let r = 1; r <= rounds; r++) {
      for (const route of routes) {
        results[route] ??= { service: [], floor: [], postgraphile: [] };
        const rr = results[route];
        const { result, peakMb } = await withPeakRss(service.pid, () => load(service, route, duration));
        peakRssMb = Math.max(peakRssMb, peakMb);
        rr.service.push(result);
        let line = `round ${r} ${route.padEnd(11)} service ${result.rps.toFixed(0)} rps p99 ${result.p99} ms peak RSS ${peakMb.toFixed(0)} MB`;
        for (const [peer, target] of peersFor(route)) {
          const f = await load(target, route, duration);
          rr[peer].push(f);
          line += ` | ${peer} ${f.rps.toFixed(0)} rps p99 ${f.p99} ms`;
          if (f.non2xx || f.errors) line += ` (${peer} non-2xx ${f.non2xx}, errors ${f.errors})`;
        }
        log(
          line +
            (result.non2xx || result.errors ? `  (service non-2xx ${result.non2xx}, errors ${result.errors})` : ''),
        );
      }
    }

    // Statements per request of the peers, counted by each (after the load: every connection is warm).
    const peerStatements: Record<PeerName, Partial<Record<RouteName, number[]>>> = { floor: {}, postgraphile: {} };
    for (const route of routes) {
      for (const [peer, target] of peersFor(route)) {
        peerStatements[peer][route] = await peerStatementCounts(target, requestFor(target, route), data.apiKey);
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
    const tenants =
      tenantCount > 0 && peers.floor
        ? await runTenantsScenario(service, peers.floor, {
            count: tenantCount,
            databaseUrl,
            rounds,
            warmup,
            duration,
            load: loadRequest,
            log,
          })
        : null;
    const hwmMb = Number(memoryMb(service.pid).hwm.toFixed(1));
    await service.stop();

    const timed = await startNode(
      'service (SERVER_TIMING=1)',
      SERVICE_SCRIPT,
      serviceEnv(databaseUrl, { SERVER_TIMING: '1' }),
      { readyPath: '/healthz', nodeArgs: SERVICE_NODE_ARGS },
    );
    running.push(timed);
    const statements = await statementCounts(timed, data, requests, routes);
    // A list page with `trust` (on its items, or as the filter) against one without, at two page sizes.
    let listTrust = null;
    if (routes.includes('list')) {
      const pages = await listTrustStatements(timed, data);
      listTrust = { pages, target: 'at most 2 statements more', met: pages.every((p) => p.extra <= 2) };
      for (const p of pages) {
        log(
          `list statements, pageSize ${p.pageSize}: without trust ${p.without.join(',')}; with ${p.withTrust.join(',')}; ` +
            `${Object.entries(p.filtered)
              .map(([verdict, seen]) => `trust=${verdict} ${seen.join(',')}`)
              .join('; ')} (at most ${p.extra} more: ${p.extra <= 2 ? 'met' : 'NOT met'})`,
        );
      }
    }
    const scenario = (metrics: string | undefined) => ({
      metrics: Number(metrics),
      apiKey: data.apiKey,
      detail: routeRequest('detail', data),
      connections,
      duration,
      log,
    });
    const apply = args['skip-apply']
      ? null
      : await runApplyScenario(timed, databaseUrl, scenario(args['apply-metrics']));
    const lineageApply = args['skip-apply'] ? null : await runLineageApplyScenario(timed, databaseUrl, { log });
    const upload =
      Number(args['upload-metrics']) > 0
        ? await runUploadScenario(timed, databaseUrl, {
            metrics: Number(args['upload-metrics']),
            partMetrics: Number(args['upload-part-metrics']),
            log,
          })
        : null;
    const queuedApplies = args['skip-queue']
      ? null
      : await runQueuedAppliesScenario(timed, databaseUrl, scenario(args['queue-metrics']));
    let changes = null;
    if (!args['skip-changes']) {
      // Two more instances beside this one: the feed's long-polls and commits cross instances.
      const others: Started[] = [];
      for (const name of ['service 2', 'service 3']) {
        const other = await startNode(name, SERVICE_SCRIPT, serviceEnv(databaseUrl), {
          readyPath: '/healthz',
          nodeArgs: SERVICE_NODE_ARGS,
        });
        running.push(other);
        others.push(other);
      }
      changes = await runChangesScenario([timed, ...others], databaseUrl, {
        rounds: 50,
        apiKey: data.apiKey,
        detail: routeRequest('detail', data),
        connections,
        duration,
        log,
      });
      for (const other of others) await other.stop();
    }
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

    const report = buildReport(routes, results, statements, peerStatements, peakRssMb, hwmMb, limiter);
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
      equivalence: {
        checked: equivalence.length,
        byPeer: Object.fromEntries(
          PEERS.map((peer) => {
            const checks = equivalence.filter((c) => c.peer === peer);
            return [peer, { checked: checks.length, same: checks.filter((c) => !c.difference).length }];
          }),
        ),
        mismatches,
      },
      ...report,
      listTrust,
      tenants,
      apply,
      lineageApply,
      upload,
      queuedApplies,
      changes,
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

await main();
