/**
 * `npm start`: opens the configured database (embedded by default), applies
 * pending migrations (src/db/migrate.ts), loads the demo data into a new
 * embedded database when src/demo.ts says so, and serves.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { buildApp } from './app.js';
import { hashSecret } from './auth/secrets.js';
import { databaseTarget } from './db/adapter.js';
import { openDatabase } from './db/client.js';
import { shouldLoadDemo } from './demo.js';
import { env } from './env.js';
import { loadFixture } from './fixtures/load.js';
import { createMetrics, startMetricsServer } from './http/metrics.js';
import { createKeyRateLimiter } from './limits/key-rate-limiter.js';
import { summaryConfigFromEnv } from './summaries/config.js';

const demoFixture = join(dirname(fileURLToPath(import.meta.url)), '..', 'prisma', 'fixtures', 'demo.json');

const target = databaseTarget(env.DATABASE_URL, env.DATA_DIR);
const database = await openDatabase(target, { migrate: true, statementTimeoutMs: env.DB_STATEMENT_TIMEOUT_MS });
console.log(`Migrations: ${database.migrationLog}`);
const logger = pino({
  level: env.LOG_LEVEL,
  // Never log a key, session token or cookie.
  redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
});
const metrics = createMetrics();
const rateLimiter = createKeyRateLimiter({
  redisUrl: env.REDIS_URL,
  logger,
  onRedisError: () => metrics.dependencyErrors.inc({ dependency: 'redis' }),
});
// Start on the shared windows; if Redis is down the service still starts, on in-process ones.
await rateLimiter.ready().catch((error: Error) => logger.warn({ err: error.message }, 'starting without Redis'));

interface DemoFixture {
  organizations: { api_keys?: { secret: string; scopes: string[]; sandbox?: boolean; revoked_at?: string | null }[] }[];
}

/**
 * When src/demo.ts allows it, the demo data is loaded on first start and its
 * agent key printed on every start.
 */
async function demoKey(): Promise<string | null> {
  if (!shouldLoadDemo({ databaseKind: target.kind, nodeEnv: env.NODE_ENV, host: env.HOST, demo: env.DEMO }))
    return null;
  const fixture = JSON.parse(readFileSync(demoFixture, 'utf8')) as DemoFixture;
  if ((await database.prisma.organization.count()) === 0) await loadFixture(database.prisma, fixture);
  const secret = fixture.organizations[0]?.api_keys?.find(
    (key) => !key.sandbox && !key.revoked_at && key.scopes.includes('canonical-metric-api:read'),
  )?.secret;
  if (!secret) return null;
  const stored = await database.prisma.apiKey.findUnique({ where: { keyHash: hashSecret(secret) } });
  return stored && !stored.revokedAt ? secret : null;
}
const key = await demoKey();

const app = await buildApp({
  database,
  logger,
  config: {
    publicAppUrl: env.PUBLIC_APP_URL,
    summaries: summaryConfigFromEnv(env),
    trust: { staleValidationDays: env.TRUST_STALE_VALIDATION_DAYS },
    serverTiming: env.SERVER_TIMING,
    graphqlErrorDetails: env.GRAPHQL_ERROR_DETAILS,
    trustProxy: env.TRUST_PROXY,
    corsOrigins: env.CORS_ORIGINS,
    requestDeadlineMs: env.REQUEST_DEADLINE_MS,
    defaultRateLimit: env.RATE_LIMIT_PER_MINUTE,
    requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
    throttle: { pointsPerMinute: env.THROTTLE_PER_MINUTE, failureCost: env.THROTTLE_FAILURE_COST },
  },
  rateLimiter,
  metrics,
});
const metricsServer = env.METRICS_PORT
  ? await startMetricsServer(metrics, env.METRICS_PORT, env.METRICS_HOST, env.METRICS_TOKEN)
  : null;

let closing = false;
async function shutdown(signal: string) {
  if (closing) return;
  closing = true;
  app.log.info({ signal, graceMs: env.SHUTDOWN_GRACE_MS }, 'shutting down');
  try {
    // Not ready first, so a load balancer stops routing here; then stop
    // listening and let in-flight requests finish.
    app.drain();
    await new Promise((resolve) => setTimeout(resolve, env.SHUTDOWN_GRACE_MS));
    await app.close();
    metricsServer?.close();
    await rateLimiter.close();
    await database.close();
  } finally {
    process.exit(0);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

const address = await app.listen({ port: env.PORT, host: env.HOST });
const base = address.replace('://127.0.0.1', '://localhost');
console.log(`\nMetric governance API on ${base} (${database.description})`);
if (key) {
  console.log(`\nDemo API key (demo data, embedded database):\n  ${key}\n`);
  console.log('Try:');
  console.log(`  curl -H "Authorization: Bearer ${key}" ${base}/api/v1/metrics`);
  console.log(`  curl -H "Authorization: Bearer ${key}" "${base}/api/v1/metrics?q=revenue"`);
  console.log(`  open ${base}/graphql  (GraphiQL; send the key as an Authorization header)`);
}
console.log(`  ${base}/healthz  ${base}/readyz\n`);
if (env.METRICS_PORT) {
  const guarded = env.METRICS_TOKEN ? ' (Authorization: Bearer METRICS_TOKEN)' : '';
  console.log(`Prometheus metrics on http://${env.METRICS_HOST}:${env.METRICS_PORT}/metrics${guarded}\n`);
}
