/**
 * The only reader of process.env. Every variable of the service interface is
 * validated here at start-up; a bad value prints every problem and exits 1.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { DEFAULT_DISCUSSION_WRITES_PER_MINUTE } from './discussions/limits.js';
import { DEFAULT_DOCUMENT_READ_SETTINGS } from './registry/read-off-thread.js';
import { DEFAULT_PRUNE_MAX_REMOVALS } from './registry/removals.js';
import {
  DEFAULT_RETRY_SCHEDULE_MS,
  DEFAULT_WEBHOOK_SETTINGS,
  DEFAULT_WORKER_SETTINGS,
  parseDuration,
} from './webhooks/settings.js';

const booleanString = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

const positiveInt = z.coerce.number().int().positive();

/** What Fastify's `trustProxy` is given: trust no proxy, every one, the nearest n hops, or these addresses. */
export type TrustProxy = boolean | number | string[];

/** proxy-addr's names for the loopback, link-local and unique-local ranges. */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isAddressOrRange(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address = '', prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (!version || rest.length) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY: `false` (default; the socket's address is the client), `true` (every hop: only when
 * no client can reach the service except through proxies that overwrite X-Forwarded-For), a hop
 * count (`1`: one load balancer in front), or a comma-separated list of proxy addresses and CIDR
 * ranges (the load balancer's), as Fastify's `trustProxy` takes them.
 */
const trustProxy = z
  .string()
  .trim()
  .transform((value, ctx): TrustProxy => {
    const lower = value.toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
    if (/^\d+$/.test(value)) {
      const hops = Number(value);
      if (hops > 255) ctx.addIssue({ code: 'custom', message: 'a hop count is at most 255' });
      return hops === 0 ? false : hops;
    }
    const entries = value.split(',').map((entry) => entry.trim());
    const bad = entries.filter((entry) => !isAddressOrRange(entry));
    if (bad.length) {
      ctx.addIssue({
        code: 'custom',
        message: `must be true, false, a hop count, or a comma-separated list of IP addresses and CIDR ranges (not: ${bad.join(', ')})`,
      });
      return z.NEVER;
    }
    return entries;
  });

/** CORS_ORIGINS: comma-separated origins (scheme://host[:port]) whose pages may call with a bearer key. */
const corsOrigins = z
  .string()
  .transform((value, ctx): string[] => {
    const origins: string[] = [];
    for (const entry of value.split(',').map((item) => item.trim())) {
      if (!entry) continue;
      let origin: string | null = null;
      try {
        const url = new URL(entry);
        if (
          (url.protocol === 'http:' || url.protocol === 'https:') &&
          url.origin === entry.replace(/\/$/, '').toLowerCase()
        ) {
          origin = url.origin;
        }
      } catch {}
      if (!origin) {
        ctx.addIssue({ code: 'custom', message: `not an origin (scheme://host[:port], nothing else): ${entry}` });
        return z.NEVER;
      }
      origins.push(origin);
    }
    return origins;
  })
  .default([]);

/** DATABASE_REPLICA_URLS: comma-separated postgresql:// URLs of streaming replicas of DATABASE_URL. */
const replicaUrls = z
  .string()
  .transform((value, ctx): string[] => {
    const urls = value
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
    const bad = urls.filter((url) => !/^postgres(ql)?:\/\/./.test(url) || !URL.canParse(url));
    if (bad.length) {
      ctx.addIssue({ code: 'custom', message: `not a postgresql:// URL: ${bad.map(redactUrl).join(', ')}` });
      return z.NEVER;
    }
    if (new Set(urls).size !== urls.length) ctx.addIssue({ code: 'custom', message: 'a replica is named twice' });
    return urls;
  })
  .default([]);

/** A URL as a message may show it: no password. */
export const redactUrl = (url: string) => url.replace(/\/\/[^@/]*@/, '//***@');

/** Where a Redis Cluster is (REDIS_CLUSTER_NODES): its seed nodes, and how every node is reached. */
export interface RedisClusterConfig {
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
  tls: boolean;
}

/**
 * REDIS_CLUSTER_NODES: comma-separated seed nodes of a Redis Cluster (the client learns the others
 * from them), `host:port` or as URLs, `redis://[user:password@]host:port` (`rediss://` for TLS),
 * whose scheme and credentials then apply to every node, so the URLs must agree on them.
 */
const redisClusterNodes = z.string().transform((value, ctx): RedisClusterConfig => {
  const nodes: RedisClusterConfig['nodes'] = [];
  const access = new Map<string, URL>();
  for (const entry of value.split(',').map((item) => item.trim())) {
    if (!entry) continue;
    const isUrl = /^rediss?:\/\//.test(entry);
    let url: URL | null = null;
    try {
      url = new URL(isUrl ? entry : `redis://${entry}`);
    } catch {}
    if (!url?.hostname || !url.port || !['', '/'].includes(url.pathname) || url.search || url.hash) {
      ctx.addIssue({ code: 'custom', message: `not host:port or redis://[user:password@]host:port: ${entry}` });
      return z.NEVER;
    }
    nodes.push({ host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port) });
    if (isUrl) access.set(`${url.protocol}${url.username}:${url.password}`, url);
  }
  if (nodes.length === 0) {
    ctx.addIssue({ code: 'custom', message: 'names no node (host:port, comma-separated)' });
    return z.NEVER;
  }
  if (access.size > 1) {
    ctx.addIssue({
      code: 'custom',
      message: 'the node URLs differ in scheme or credentials; every node is reached alike',
    });
    return z.NEVER;
  }
  const [url] = access.values();
  return {
    nodes,
    ...(url?.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url?.password ? { password: decodeURIComponent(url.password) } : {}),
    tls: url?.protocol === 'rediss:',
  };
});

/** WEBHOOK_RETRY_SCHEDULE: comma-separated waits before each retry of a failed delivery, `5s,5m,30m,2h`. */
const retrySchedule = z
  .string()
  .transform((value, ctx): number[] => {
    const entries = value.split(',').map((entry) => entry.trim());
    const bad = entries.filter((entry) => parseDuration(entry) === null);
    if (bad.length || entries.length > 50) {
      ctx.addIssue({
        code: 'custom',
        message: `must be 1 to 50 comma-separated durations such as 250ms, 5s, 5m, 2h, 1d (not: ${bad.join(', ') || 'more than 50'})`,
      });
      return z.NEVER;
    }
    return entries.map((entry) => parseDuration(entry) ?? 0);
  })
  .default([...DEFAULT_RETRY_SCHEDULE_MS]);

/** A single duration (`5d`, `30s`) in milliseconds. */
const duration = z.string().transform((value, ctx): number => {
  const parsed = parseDuration(value);
  if (parsed === null) {
    ctx.addIssue({ code: 'custom', message: `must be a duration such as 30s, 5m, 2h, 5d (not: ${value})` });
    return z.NEVER;
  }
  return parsed;
});

/** 127.0.0.0/8, ::1 or localhost: reachable from this host only. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}

export const envSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().min(1).default('127.0.0.1'),
    METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
    /** the Prometheus listener's address: loopback unless said otherwise (a scraper on the same host) */
    METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    /** bearer token /metrics then requires (`Authorization: Bearer <token>`); required off loopback */
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgresql:// URL')
      .optional(),
    DATABASE_REPLICA_URLS: replicaUrls,
    /** a replica further behind the primary (or not answering) takes no reads until it catches up */
    REPLICA_MAX_LAG_MS: z.coerce.number().int().min(10).max(600_000).default(1000),
    /**
     * `transaction`: DATABASE_URL is a transaction pooler (PgBouncer, PgCat, Supavisor, RDS Proxy), so no
     * statement relies on a server session: no prepared statements, no settings in the startup packet
     * (docs/connection-poolers.md). `session` (default): PostgreSQL itself or a session pooler.
     */
    DATABASE_POOL_MODE: z.enum(['session', 'transaction']).default('session'),
    DATA_DIR: z.string().min(1).default('./.data'),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// URL')
      .optional(),
    /** a Redis Cluster instead of one Redis (REDIS_URL): the seed nodes, see redisClusterNodes */
    REDIS_CLUSTER_NODES: redisClusterNodes.optional(),
    RATE_LIMIT_PER_MINUTE: positiveInt.default(60),
    SERVICE_TOKEN_RATE_LIMIT_PER_MINUTE: positiveInt.default(60),
    /** discussion writes a minute of one member (all their sessions) or one service token (docs/discussions.md) */
    DISCUSSION_WRITES_PER_MINUTE: positiveInt.default(DEFAULT_DISCUSSION_WRITES_PER_MINUTE),
    THROTTLE_PER_MINUTE: positiveInt.default(600),
    THROTTLE_FAILURE_COST: positiveInt.default(10),
    /** unset: http://localhost:{PORT}, so that canonical_url points at this instance */
    PUBLIC_APP_URL: z.url().optional(),
    SUMMARY_PROVIDER: z.enum(['extractive', 'openai']).default('extractive'),
    SUMMARY_OPENAI_BASE_URL: z.url().optional(),
    SUMMARY_OPENAI_API_KEY: z.string().optional(),
    SUMMARY_MODEL: z.string().optional(),
    SUMMARY_TIMEOUT_MS: positiveInt.default(10000),
    SUMMARY_DAILY_CAP: z.coerce.number().int().min(0).default(500),
    SUMMARY_MAX_CONCURRENT: positiveInt.default(4),
    TRUST_PROXY: trustProxy.default(false),
    CORS_ORIGINS: corsOrigins,
    /** a fraction of a day is allowed (tests and demos of the time-driven trust transitions) */
    TRUST_STALE_VALIDATION_DAYS: z.coerce.number().positive().max(36_500).default(30),
    /** how often the trust sweep looks for verdicts that time changed (src/changes/sweep.ts) */
    TRUST_SWEEP_INTERVAL_S: z.coerce.number().int().min(1).max(86_400).default(60),
    /** change-feed events are kept at least this many days; a cursor before them answers 410 */
    CHANGES_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
    /** a prune removing more metrics than this (or every metric) needs allow_removals (src/registry/removals.ts) */
    // The CLI's own: the service token of `registry:apply --check --url` (docs/registry.md#ci-over-http).
    METRIC_GOVERNANCE_TOKEN: z.string().optional(),
    PRUNE_MAX_REMOVALS: z.coerce.number().int().min(0).max(1_000_000).default(DEFAULT_PRUNE_MAX_REMOVALS),
    /** the heap of the thread that reads a write's body; a body that needs more is 422 (src/registry/read-off-thread.ts) */
    DOCUMENT_READ_MEMORY_MB: z.coerce.number().int().min(32).max(4096).default(DEFAULT_DOCUMENT_READ_SETTINGS.memoryMb),
    /** a write's body not read within this time is 422, its thread ended */
    DOCUMENT_READ_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(600_000)
      .default(DEFAULT_DOCUMENT_READ_SETTINGS.timeBudgetMs),
    /** the waits before each retry of a failed webhook delivery; past the last, the last again (src/webhooks/worker.ts) */
    WEBHOOK_RETRY_SCHEDULE: retrySchedule,
    /** a webhook endpoint failing without a success this long is disabled */
    WEBHOOK_DISABLE_AFTER: duration.default(DEFAULT_WEBHOOK_SETTINGS.disableAfterMs),
    /** a delivery attempt not answered within this time fails */
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(DEFAULT_WEBHOOK_SETTINGS.timeoutMs),
    /**
     * how long an instance holds a webhook endpoint it delivers to; one that dies mid-delivery is taken over by
     * another after this (must be above WEBHOOK_TIMEOUT_MS, so that a slow answer does not cause a second sender)
     */
    WEBHOOK_LEASE_MS: z.coerce.number().int().min(1000).max(600_000).default(DEFAULT_WORKER_SETTINGS.leaseMs),
    /** 1: webhook URLs may be http:// (otherwise https:// only) */
    WEBHOOK_ALLOW_HTTP: booleanString.optional().transform((value) => value === true),
    /**
     * 1: webhook URLs may resolve to loopback, private, link-local and other non-public addresses (tests, a
     * receiver on the same network); never by default: a webhook could otherwise reach internal services (SSRF)
     */
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: booleanString.optional().transform((value) => value === true),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    DB_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(5_000),
    REQUEST_DEADLINE_MS: z.coerce.number().int().min(100).max(600_000).default(20_000),
    SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(120_000).default(0),
    SERVER_TIMING: booleanString.optional().transform((value) => value === true),
    /**
     * 1: GraphQL errors show the original error (message, stack) to clients, for debugging; never by default,
     * whatever NODE_ENV says (yoga shows them when NODE_ENV=development unless told otherwise).
     */
    GRAPHQL_ERROR_DETAILS: booleanString.optional().transform((value) => value === true),
    /** sign-in with an OpenID Connect provider (docs/sign-in.md): all three, or none (one-time links only) */
    OIDC_ISSUER: z.url().optional(),
    OIDC_CLIENT_ID: z.string().optional(),
    OIDC_CLIENT_SECRET: z.string().optional(),
    /** unset: the demo rule of src/demo.ts; 1 loads the demo registry into an empty embedded database, 0 never */
    DEMO: booleanString.optional(),
  })
  .superRefine((env, ctx) => {
    if (env.REDIS_URL && env.REDIS_CLUSTER_NODES) {
      ctx.addIssue({
        code: 'custom',
        path: ['REDIS_CLUSTER_NODES'],
        message: 'set REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both',
      });
    }
    if (env.REQUEST_DEADLINE_MS <= env.SUMMARY_TIMEOUT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['REQUEST_DEADLINE_MS'],
        message: `must be above SUMMARY_TIMEOUT_MS (${env.SUMMARY_TIMEOUT_MS}), else a summary generation is always cut off`,
      });
    }
    if (env.REQUEST_DEADLINE_MS <= env.WEBHOOK_TIMEOUT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['REQUEST_DEADLINE_MS'],
        message: `must be above WEBHOOK_TIMEOUT_MS (${env.WEBHOOK_TIMEOUT_MS}), else a webhook's test event may be cut off`,
      });
    }
    // An endpoint behind by more than the feed keeps would skip the removed events.
    if (
      env.CHANGES_RETENTION_DAYS * 86_400_000 <=
      env.WEBHOOK_DISABLE_AFTER + Math.max(...env.WEBHOOK_RETRY_SCHEDULE)
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['CHANGES_RETENTION_DAYS'],
        message:
          'must be longer than WEBHOOK_DISABLE_AFTER and the longest retry wait, else retention could remove events an enabled webhook endpoint has still to deliver',
      });
    }
    if (env.WEBHOOK_LEASE_MS <= env.WEBHOOK_TIMEOUT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['WEBHOOK_LEASE_MS'],
        message: `must be above WEBHOOK_TIMEOUT_MS (${env.WEBHOOK_TIMEOUT_MS}), else a slow answer lets a second instance send the event again`,
      });
    }
    if (env.METRICS_PORT && !env.METRICS_TOKEN && !isLoopback(env.METRICS_HOST)) {
      ctx.addIssue({
        code: 'custom',
        path: ['METRICS_TOKEN'],
        message: `required when METRICS_HOST (${env.METRICS_HOST}) is not a loopback address: the metrics would be open to the network`,
      });
    }
    if (env.DATABASE_REPLICA_URLS.length && !env.DATABASE_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['DATABASE_REPLICA_URLS'],
        message: 'read replicas need DATABASE_URL (a PostgreSQL primary); the embedded database has none',
      });
    }
    if (env.DATABASE_URL && env.DATABASE_REPLICA_URLS.includes(env.DATABASE_URL)) {
      ctx.addIssue({
        code: 'custom',
        path: ['DATABASE_REPLICA_URLS'],
        message: 'names DATABASE_URL itself: a replica is another server, a streaming standby of it',
      });
    }
    if (env.DATABASE_POOL_MODE === 'transaction' && !env.DATABASE_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['DATABASE_POOL_MODE'],
        message: 'transaction needs DATABASE_URL (the pooler); the embedded database has none',
      });
    }
    const oidc = ['OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET'] as const;
    const missing = oidc.filter((name) => !env[name]);
    if (missing.length > 0 && missing.length < oidc.length) {
      for (const name of missing) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `required with ${oidc.filter((other) => env[other]).join(' and ')}: sign-in with a provider needs all three`,
        });
      }
    }
    if (env.SUMMARY_PROVIDER === 'openai') {
      for (const name of ['SUMMARY_OPENAI_BASE_URL', 'SUMMARY_MODEL'] as const) {
        if (!env[name])
          ctx.addIssue({ code: 'custom', path: [name], message: 'required when SUMMARY_PROVIDER=openai' });
      }
    }
  })
  .transform((env) => ({ ...env, PUBLIC_APP_URL: env.PUBLIC_APP_URL ?? `http://localhost:${env.PORT}` }));

export type Env = z.infer<typeof envSchema>;

/** Parses an environment; throws with one line per problem. */
export function parseEnv(source: Record<string, string | undefined>): Env {
  // An empty variable means "unset", as in most shells' `VAR= cmd`.
  const defined = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value !== ''));
  const result = envSchema.safeParse(defined);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join('.') || '(env)'}: ${issue.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

function loadEnv(): Env {
  try {
    return parseEnv(process.env);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

export const env: Env = loadEnv();
