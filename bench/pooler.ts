/**
 * npm run bench:pooler -- [--metrics 10000] [--connections 32] [--duration 10] [--rounds 3] [--server-connections 10]
 *
 * The detail and list routes served directly (DATABASE_POOL_MODE=session, prepared statements) and
 * through PgBouncer in transaction mode (DATABASE_POOL_MODE=transaction, unnamed statements), on
 * one seeded bench database (bench/seed.ts): two instances of the built service, loaded in turn
 * (direct, pooled, direct, ...) with autocannon (bench/load.ts). Each service has its default pool
 * of 10 connections; PgBouncer gets `--server-connections` per database. Reports requests/s,
 * latency and CPU per request of the service and of PgBouncer (docs/connection-poolers.md).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migratePostgres } from '../src/db/migrate.js';
import { type PgBouncer, startPgBouncer } from '../test/helpers/pgbouncer.js';
import { type LoadResult, type RouteName, routeRequest, runLoad } from './load.js';
import { cpuMs, projectRoot, type Started, startNode } from './processes.js';
import { median } from './report.js';
import { seed } from './seed.js';

const { values: args } = parseArgs({
  options: {
    metrics: { type: 'string', default: '10000' },
    connections: { type: 'string', default: '32' },
    duration: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    'server-connections': { type: 'string', default: '10' },
  },
});
const ROUTES: RouteName[] = ['detail', 'list'];
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const log = (message: string) => console.log(`[pooler ${new Date().toISOString().slice(11, 19)}] ${message}`);

const [SERVICE_SCRIPT, ...SERVICE_NODE_ARGS] = (() => {
  const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const [, ...words] = pkg.scripts.start.split(/\s+/);
  const script = words.pop();
  if (!script) throw new Error(`unexpected start script: ${pkg.scripts.start}`);
  return [script, ...words];
})() as [string, ...string[]];

interface Run extends LoadResult {
  /** PgBouncer's CPU time per request, ms (the pooled runs) */
  poolerCpuMsPerRequest: number | null;
  /** the CPU time per request of the PostgreSQL backends of the bench database, ms (a server on this machine) */
  postgresCpuMsPerRequest: number | null;
}

/**
 * CPU time so far of the PostgreSQL backends connected to `database`, found by their process
 * titles (`postgres: <user> <database> <client> ...`); 0 when PostgreSQL runs elsewhere.
 */
function backendsCpuMs(database: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (title.startsWith('postgres: ') && title.includes(` ${database} `)) total += cpuMs(Number(entry));
    } catch {
      // gone since the listing
    }
  }
  return total;
}

async function main() {
  if (spawnSync('npm', ['run', 'build'], { cwd: projectRoot, stdio: 'inherit' }).status !== 0) process.exit(1);
  const dbName = `pooler_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const direct = new URL(adminUrl);
  direct.pathname = `/${dbName}`;
  const running: Started[] = [];
  let bouncer: PgBouncer | undefined;
  try {
    await migratePostgres(direct.toString());
    const seeding = new pg.Pool({ connectionString: direct.toString(), max: 2 });
    const data = await seed(seeding, Number(args.metrics), direct.toString()).finally(() => seeding.end());
    log(`seeded ${args.metrics} metrics`);
    // The role's settings, which the pooled service cannot send in its startup packet
    // (docs/connection-poolers.md); after the seed, whose statements take longer than this timeout.
    await admin.query(
      `ALTER ROLE CURRENT_USER IN DATABASE ${dbName} SET statement_timeout = 5000;
       ALTER ROLE CURRENT_USER IN DATABASE ${dbName} SET max_parallel_workers_per_gather = 0`,
    );
    bouncer = await startPgBouncer({
      upstream: adminUrl,
      poolMode: 'transaction',
      defaultPoolSize: Number(args['server-connections']),
    });
    const env = (databaseUrl: string, poolMode: string) => ({
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_MODE: poolMode,
      REDIS_URL: redisUrl,
      THROTTLE_PER_MINUTE: '1000000000',
      LOG_LEVEL: 'warn',
    });
    const targets = {
      direct: await startNode('direct', SERVICE_SCRIPT, env(direct.toString(), 'session'), {
        readyPath: '/healthz',
        nodeArgs: SERVICE_NODE_ARGS,
      }),
      pooled: await startNode('pooled', SERVICE_SCRIPT, env(bouncer.urlFor(dbName), 'transaction'), {
        readyPath: '/healthz',
        nodeArgs: SERVICE_NODE_ARGS,
      }),
    };
    running.push(targets.direct, targets.pooled);
    const pooler = bouncer;
    const load = async (target: Started, route: RouteName, seconds: number): Promise<Run> => {
      const before = { service: cpuMs(target.pid), pooler: cpuMs(pooler.pid), postgres: backendsCpuMs(dbName) };
      const result = await runLoad(target.base, routeRequest(route, data), data.apiKey, {
        connections: Number(args.connections),
        duration: seconds,
      });
      const perRequest = (ms: number) => (result.requests > 0 && ms > 0 ? ms / result.requests : null);
      return {
        ...result,
        cpuMsPerRequest: perRequest(cpuMs(target.pid) - before.service),
        poolerCpuMsPerRequest: target === targets.pooled ? perRequest(cpuMs(pooler.pid) - before.pooler) : null,
        postgresCpuMsPerRequest: perRequest(backendsCpuMs(dbName) - before.postgres),
      };
    };
    for (const route of ROUTES) for (const target of Object.values(targets)) await load(target, route, 2);
    const results: Record<string, Record<'direct' | 'pooled', Run[]>> = {};
    for (let round = 1; round <= Number(args.rounds); round++) {
      for (const route of ROUTES) {
        results[route] ??= { direct: [], pooled: [] };
        for (const name of ['direct', 'pooled'] as const) {
          const run = await load(targets[name], route, Number(args.duration));
          results[route][name].push(run);
          log(
            `round ${round} ${route.padEnd(6)} ${name.padEnd(6)} ${run.rps.toFixed(0)} rps p99 ${run.p99} ms ` +
              `cpu ${run.cpuMsPerRequest?.toFixed(2)} ms/req postgres ${run.postgresCpuMsPerRequest?.toFixed(2)} ms/req` +
              (run.poolerCpuMsPerRequest === null ? '' : ` pgbouncer ${run.poolerCpuMsPerRequest.toFixed(3)} ms/req`) +
              (run.non2xx || run.errors ? ` (non-2xx ${run.non2xx}, errors ${run.errors})` : ''),
          );
        }
      }
    }
    const cell = (runs: Run[], pick: (run: Run) => number | null, digits: number) =>
      median(runs.map(pick).filter((value): value is number => value !== null)).toFixed(digits);
    console.log(
      `\nmedians of ${args.rounds} rounds, ${args.connections} connections, ${args.metrics} metrics, ` +
        `PgBouncer ${args['server-connections']} server connections:`,
    );
    console.log(
      '| route | path | requests/s | p50 ms | p99 ms | service CPU ms/request | PostgreSQL CPU ms/request | PgBouncer CPU ms/request |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const [route, byTarget] of Object.entries(results)) {
      for (const [name, runs] of Object.entries(byTarget)) {
        console.log(
          `| ${route} | ${name} | ${cell(runs, (r) => r.rps, 0)} | ${cell(runs, (r) => r.p50, 0)} | ${cell(runs, (r) => r.p99, 0)} | ` +
            `${cell(runs, (r) => r.cpuMsPerRequest, 2)} | ${cell(runs, (r) => r.postgresCpuMsPerRequest, 2)} | ${name === 'pooled' ? cell(runs, (r) => r.poolerCpuMsPerRequest, 3) : '-'} |`,
        );
      }
    }
  } finally {
    for (const started of running) await started.stop();
    await bouncer?.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
