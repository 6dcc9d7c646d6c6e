/**
 * Read replicas on one machine (docs/replicas.md): detail and list
 * throughput with reads on one streaming replica against all on the primary,
 * the transactions each server runs per request, and how long a write on the
 * primary takes to be visible on the replica (p50, p99).
 *
 *   npx tsx bench/replicas.ts [--metrics 10000] [--duration 10] [--rounds 2] [--connections 32] [--writes 200]
 *
 * Starts its own primary and replica (`pg_basebackup -R`, as root: the
 * servers run as `postgres`), seeds the bench registry (bench/seed.ts), and
 * runs the service (`src/server.ts` under tsx, NODE_ENV=production) once per
 * configuration and route, so that the servers' counters are flushed when it
 * stops. Redis at BENCH_REDIS_URL (default redis://127.0.0.1:6379; `none`: without Redis).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migratePostgres } from '../src/db/migrate.js';
import { startPrimaryWithReplica } from '../test/helpers/streaming-replica.js';
import { routeRequest, runLoad } from './load.js';
import { cpuMs, startNode } from './processes.js';
import { seed } from './seed.js';

const { values: args } = parseArgs({
  options: {
    metrics: { type: 'string', default: '10000' },
    duration: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '32' },
    writes: { type: 'string', default: '200' },
  },
});
/** `none`: no Redis (in-process limits and read-your-writes marks), to see what Redis costs per request. */
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

const servers = await startPrimaryWithReplica();
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

try {
  await migratePostgres(servers.primary.url);
  const pool = new pg.Pool({ connectionString: servers.primary.url, max: 4 });
  const data = await seed(pool, Number(args.metrics), servers.primary.url);
  await pool.end();
  await servers.caughtUp(120_000);

  const commits = async (url: string) =>
    Number(
      (
        await servers.query<{ n: string }>(
          url,
          `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`,
        )
      )[0]?.n,
    );

  type Row = { config: string; route: string; round: number; rps: number; p50: number; p99: number } & {
    primaryPerRequest: number;
    replicaPerRequest: number;
    primaryCpuMsPerRequest: number;
    replicaCpuMsPerRequest: number;
    cpuMsPerRequest: number;
    bad: number;
  };
  const rows: Row[] = [];
  const configs = [
    { config: 'primary only', env: {} },
    { config: 'reads on the replica', env: { DATABASE_REPLICA_URLS: servers.replica.url } },
  ];
  for (let round = 1; round <= Number(args.rounds); round++) {
    for (const route of ['detail', 'list'] as const) {
      for (const { config, env } of configs) {
        const before = {
          primary: await commits(servers.primary.url),
          replica: await commits(servers.replica.url),
          primaryCpu: servers.primary.cpuMs(),
          replicaCpu: servers.replica.cpuMs(),
        };
        const service = await startNode(
          'service',
          'src/server.ts',
          {
            ...env,
            DATABASE_URL: servers.primary.url,
            ...(redisUrl === 'none' ? {} : { REDIS_URL: redisUrl }),
            THROTTLE_PER_MINUTE: '1000000000',
            LOG_LEVEL: 'warn',
            NODE_ENV: 'production',
          },
          { readyPath: '/healthz' },
        );
        let requests = 0;
        try {
          const request = routeRequest(route, data);
          const options = { connections: Number(args.connections), duration: Number(args.duration) };
          requests += (await runLoad(service.base, request, data.apiKey, { ...options, duration: 2 })).requests;
          const cpuBefore = cpuMs(service.pid);
          const result = await runLoad(service.base, request, data.apiKey, options);
          const cpu = cpuMs(service.pid) - cpuBefore;
          requests += result.requests;
          rows.push({
            config,
            route,
            round,
            rps: result.rps,
            p50: result.p50,
            p99: result.p99,
            cpuMsPerRequest: cpu / result.requests,
            bad: result.non2xx + result.errors,
            primaryPerRequest: 0,
            replicaPerRequest: 0,
            primaryCpuMsPerRequest: 0,
            replicaCpuMsPerRequest: 0,
          });
        } finally {
          // A backend flushes its counters when its connection closes: stop the service, then count.
          await service.stop();
        }
        const row = rows[rows.length - 1];
        if (row) {
          row.primaryPerRequest = ((await commits(servers.primary.url)) - before.primary) / requests;
          row.replicaPerRequest = ((await commits(servers.replica.url)) - before.replica) / requests;
          // Over warm-up and run, the service's start and stop included: a little over the requests' own.
          row.primaryCpuMsPerRequest = (servers.primary.cpuMs() - before.primaryCpu) / requests;
          row.replicaCpuMsPerRequest = (servers.replica.cpuMs() - before.replicaCpu) / requests;
        }
        console.log(JSON.stringify(rows[rows.length - 1]));
      }
    }
  }

  // Write-to-visible: a one-row commit on the primary, then the replica read until it shows it.
  const primary = new pg.Client({ connectionString: servers.primary.url });
  const replica = new pg.Client({ connectionString: servers.replica.url });
  await primary.connect();
  await replica.connect();
  const latencies: number[] = [];
  const id = data.metricIds[0];
  for (let i = 0; i < Number(args.writes); i++) {
    const text = `visible ${i} ${Date.now()}`;
    await primary.query('UPDATE metric SET description = $1 WHERE id = $2', [text, id]);
    const committed = performance.now();
    for (;;) {
      const { rows: seen } = await replica.query('SELECT description FROM metric WHERE id = $1', [id]);
      if (seen[0]?.description === text) break;
      if (performance.now() - committed > 10_000) throw new Error('a write was not visible on the replica in 10 s');
    }
    latencies.push(performance.now() - committed);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await primary.end();
  await replica.end();
  latencies.sort((a, b) => a - b);

  console.log(
    '\n| configuration | route | round | rps | p50 ms | p99 ms | service CPU ms/req | primary xacts/req | replica xacts/req | primary CPU ms/req | replica CPU ms/req | bad |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const row of rows) {
    console.log(
      `| ${row.config} | ${row.route} | ${row.round} | ${Math.round(row.rps)} | ${row.p50} | ${row.p99} | ${row.cpuMsPerRequest.toFixed(2)} | ${row.primaryPerRequest.toFixed(2)} | ${row.replicaPerRequest.toFixed(2)} | ${row.primaryCpuMsPerRequest.toFixed(3)} | ${row.replicaCpuMsPerRequest.toFixed(3)} | ${row.bad} |`,
    );
  }
  console.log(
    `\nwrite-to-visible on the replica over ${latencies.length} writes: p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms, max ${(latencies[latencies.length - 1] ?? 0).toFixed(2)} ms`,
  );
} finally {
  servers.close();
}
