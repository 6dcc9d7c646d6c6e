/**
 * `npm start`: opens the configured database (embedded by default), applies
 * pending migrations (src/db/migrate.ts), loads the demo data into a new
 * embedded database when src/demo.ts says so, and serves.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createLoginLink, LOGIN_LINK_TTL_MINUTES } from './admin/login-links.js';
import { buildApp } from './app.js';
import { hashSecret } from './auth/secrets.js';
import { databaseTarget } from './db/adapter.js';
import { openDatabase } from './db/client.js';
import { ReadRouting } from './db/read-routing.js';
import { createWriteMarks } from './db/write-marks.js';
import { demoAsOf, demoRefusal, isLoopbackHost, shouldLoadDemo } from './demo.js';
import { env, redactUrl as redact } from './env.js';
import { loadFixture } from './fixtures/load.js';
import { createMetrics, startMetricsServer } from './http/metrics.js';
import { serviceLinks } from './http/root.js';
import { createKeyRateLimiter } from './limits/key-rate-limiter.js';
import { redisTarget } from './redis.js';
import { summaryConfigFromEnv } from './summaries/config.js';
import { webhookSettingsFromEnv } from './webhooks/settings.js';

const demoFixture = join(dirname(fileURLToPath(import.meta.url)), '..', 'prisma', 'fixtures', 'demo.json');

/**
 * A start-up failure is one line naming the setting and the cause, and exit 1: no stack (what
 * went wrong is the environment, not the code).
 */
function cannotStart(setting: string, error: unknown): never {
  const cause = error instanceof Error ? error.message || String((error as { code?: string }).code) : String(error);
  console.error(`Cannot start: ${setting}: ${cause.split('\n')[0]}`);
  process.exit(1);
}

const target = databaseTarget(env.DATABASE_URL, env.DATA_DIR);
const databaseSetting = env.DATABASE_URL ? `DATABASE_URL (${redact(env.DATABASE_URL)})` : `DATA_DIR (${env.DATA_DIR})`;
const logger = pino({
  level: env.LOG_LEVEL,
  // Never log a key, session token or cookie.
  redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
});
const database = await openDatabase(target, {
  migrate: true,
  statementTimeoutMs: env.DB_STATEMENT_TIMEOUT_MS,
  poolMode: env.DATABASE_POOL_MODE,
  owner: 'the server',
  replicas: { urls: env.DATABASE_REPLICA_URLS, maxLagMs: env.REPLICA_MAX_LAG_MS, logger },
}).catch((error: unknown) => cannotStart(databaseSetting, error));
console.log(`Migrations: ${database.migrationLog}`);
if (database.settingsNotice) console.warn(database.settingsNotice);
// With replicas, reads go to them (src/db/read-routing.ts); read-your-writes marks are shared through Redis.
const readRouting = database.replicas
  ? new ReadRouting(
      database.sql,
      database.replicas,
      createWriteMarks({ redis: redisTarget(env.REDIS_URL, env.REDIS_CLUSTER_NODES), logger }),
    )
  : undefined;
const metrics = createMetrics();
const rateLimiter = createKeyRateLimiter({
  redisUrl: env.REDIS_URL,
  redisCluster: env.REDIS_CLUSTER_NODES,
  logger,
  onRedisError: () => metrics.dependencyErrors.inc({ dependency: 'redis' }),
});
// A configured Redis must answer at start (the limits are shared through it); once running, an
// outage falls back to in-process windows (src/limits/key-rate-limiter.ts).
const redisSetting = env.REDIS_CLUSTER_NODES
  ? `REDIS_CLUSTER_NODES (${env.REDIS_CLUSTER_NODES.nodes.map((node) => `${node.host}:${node.port}`).join(',')})`
  : `REDIS_URL (${redact(env.REDIS_URL ?? '')})`;
await rateLimiter.ready().catch((error: unknown) => cannotStart(redisSetting, error));

interface DemoFixture {
  organizations: {
    id: string;
    api_keys?: { secret: string; scopes: string[]; sandbox?: boolean; revoked_at?: string | null }[];
    users?: { email: string; role: string }[];
    metrics?: { validations?: { ran_at: string }[] }[];
  }[];
}

const demoInput = {
  databaseKind: target.kind,
  nodeEnv: env.NODE_ENV,
  host: env.HOST,
  demo: env.DEMO,
  trustProxy: env.TRUST_PROXY,
};

/**
 * When src/demo.ts allows it, the demo data is loaded on first start (its
 * dates moved to now) and, while its organization is in the database, its
 * agent key printed on every start with a warning.
 */
async function demoRegistry(): Promise<{ key: string | null; orgId: string; owner: string | null } | null> {
  const readFixture = () => JSON.parse(readFileSync(demoFixture, 'utf8')) as DemoFixture;
  if (!shouldLoadDemo(demoInput)) {
    // Loaded by an earlier start, the demo's public keys and session would be served here too: an
    // instance reachable from elsewhere (behind a proxy, or on another address) refuses to start.
    const exposed = env.TRUST_PROXY !== false || (!isLoopbackHost(env.HOST) && env.DEMO !== true);
    const demoId = exposed ? readFixture().organizations[0]?.id : undefined;
    if (demoId && (await database.prisma.organization.findUnique({ where: { id: demoId } }))) {
      cannotStart(
        databaseSetting,
        'it holds the demo registry, whose API keys and sessions are public; it is served on a loopback HOST ' +
          'without TRUST_PROXY only (start with another DATA_DIR, or delete this one)',
      );
    }
    return null;
  }
  const fixture = readFixture();
  if ((await database.prisma.organization.count()) === 0) {
    await loadFixture(database.prisma, demoAsOf(fixture, new Date()), {
      trust: { staleValidationDays: env.TRUST_STALE_VALIDATION_DAYS },
    });
  }
  const [organization] = fixture.organizations;
  if (!organization || !(await database.prisma.organization.findUnique({ where: { id: organization.id } }))) {
    return null;
  }
  const secret = organization.api_keys?.find(
    (key) => !key.sandbox && !key.revoked_at && key.scopes.includes('canonical-metric-api:read'),
  )?.secret;
  // Whom the banner's sign-in link signs in: the demo organization's owner.
  const owner = organization.users?.find((user) => user.role === 'owner')?.email ?? null;
  const found = { orgId: organization.id, owner };
  if (!secret) return { key: null, ...found };
  const stored = await database.prisma.apiKey.findUnique({ where: { keyHash: hashSecret(secret) } });
  return { key: stored && !stored.revokedAt ? secret : null, ...found };
}
const demo = await demoRegistry();
const demoNote = demoRefusal(demoInput);

const app = await buildApp({
  database,
  logger,
  config: {
    publicAppUrl: env.PUBLIC_APP_URL,
    oidc:
      env.OIDC_ISSUER && env.OIDC_CLIENT_ID && env.OIDC_CLIENT_SECRET
        ? { issuer: env.OIDC_ISSUER, clientId: env.OIDC_CLIENT_ID, clientSecret: env.OIDC_CLIENT_SECRET }
        : undefined,
    summaries: summaryConfigFromEnv(env),
    trust: { staleValidationDays: env.TRUST_STALE_VALIDATION_DAYS },
    serverTiming: env.SERVER_TIMING,
    graphqlErrorDetails: env.GRAPHQL_ERROR_DETAILS,
    trustProxy: env.TRUST_PROXY,
    corsOrigins: env.CORS_ORIGINS,
    requestDeadlineMs: env.REQUEST_DEADLINE_MS,
    defaultRateLimit: env.RATE_LIMIT_PER_MINUTE,
    serviceTokenRateLimit: env.SERVICE_TOKEN_RATE_LIMIT_PER_MINUTE,
    discussionWritesPerMinute: env.DISCUSSION_WRITES_PER_MINUTE,
    requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
    throttle: { pointsPerMinute: env.THROTTLE_PER_MINUTE, failureCost: env.THROTTLE_FAILURE_COST },
    changeSweep: { intervalMs: env.TRUST_SWEEP_INTERVAL_S * 1000, retentionDays: env.CHANGES_RETENTION_DAYS },
    pruneMaxRemovals: env.PRUNE_MAX_REMOVALS,
    documentReads: { memoryMb: env.DOCUMENT_READ_MEMORY_MB, timeBudgetMs: env.DOCUMENT_READ_TIMEOUT_MS },
    webhooks: webhookSettingsFromEnv(env),
    webhookWorker: { leaseMs: env.WEBHOOK_LEASE_MS },
  },
  rateLimiter,
  metrics,
  readRouting,
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
    await readRouting?.close();
    await database.close();
  } finally {
    process.exit(0);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

const address = await app.listen({ port: env.PORT, host: env.HOST }).catch((error: NodeJS.ErrnoException) => {
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') {
    return cannotStart(`HOST (${env.HOST})`, `no network interface of this machine has the address ${env.HOST}`);
  }
  const cause = error.code === 'EADDRINUSE' ? `port ${env.PORT} is already in use on ${env.HOST}` : error;
  return cannotStart(`PORT (${env.PORT})`, cause);
});
const base = address.replace('://127.0.0.1', '://localhost');
console.log(`\nMetric governance API on ${base} (${database.description})`);
console.log(`  API        ${base}${serviceLinks.api}  (OpenAPI: ${base}${serviceLinks.openapi})`);
console.log(`  Reference  ${base}${serviceLinks.docs}`);
console.log(`  GraphQL    ${base}${serviceLinks.graphql}  (GraphiQL in a browser)`);
console.log(`  MCP        ${base}${serviceLinks.mcp}`);
console.log(`  Health     ${base}${serviceLinks.healthz}  ${base}${serviceLinks.readyz}`);
if (demoNote) console.warn(`\n${demoNote}`);
if (demo) {
  console.warn(
    '\nWARNING: demo registry in use. Its API keys and sessions are public in the repository: anyone who can ' +
      'reach this port can read its data. Keep the instance private to this machine (DEMO=0 turns the demo off).',
  );
}
const key = demo?.key;
if (key) {
  console.log(`\nDemo API key (demo data, embedded database):\n  ${key}\n`);
  console.log('Try:');
  console.log(`  curl -H "Authorization: Bearer ${key}" ${base}/api/v1/metrics`);
  console.log(`  curl -H "Authorization: Bearer ${key}" "${base}/api/v1/metrics?q=revenue"`);
  console.log(`  open ${base}/graphql  (GraphiQL; send the key as an Authorization header)`);
}
// A one-time link into the catalog as the demo's owner, for this instance's own address; another
// one comes with the next start (the embedded database is this process's while it runs).
const demoLink =
  demo?.owner &&
  (await createLoginLink(database.prisma, { org: demo.orgId, email: demo.owner, publicAppUrl: base }).catch(
    (error: unknown) => {
      app.log.warn({ err: error }, 'no demo sign-in link');
      return null;
    },
  ));
if (demoLink) {
  console.log(
    `\nSign in to the catalog as ${demoLink.email} (once, within ${LOGIN_LINK_TTL_MINUTES} minutes; restart for another):`,
  );
  console.log(`  ${demoLink.url}`);
}
console.log('');
if (env.METRICS_PORT) {
  const guarded = env.METRICS_TOKEN ? ' (Authorization: Bearer METRICS_TOKEN)' : '';
  console.log(`Prometheus metrics on http://${env.METRICS_HOST}:${env.METRICS_PORT}/metrics${guarded}\n`);
}
