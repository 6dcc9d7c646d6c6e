/**
 * The HTTP app in process over an isolated test database with a fixture
 * loaded. Requests go through `app.inject` (no socket).
 */
import { readFileSync } from 'node:fs';
import type { FastifyBaseLogger, FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { OidcSettings } from '../../src/auth/oidc.js';
import type { Database } from '../../src/db/client.js';
import type { ReadRouting } from '../../src/db/read-routing.js';
import type { TrustProxy } from '../../src/env.js';
import { loadFixture } from '../../src/fixtures/load.js';
import type { Metrics } from '../../src/http/metrics.js';
import type { ThrottleConfig } from '../../src/http/request-auth.js';
import { createKeyRateLimiter, type KeyRateLimiter } from '../../src/limits/key-rate-limiter.js';
import type { ReadCache } from '../../src/metric/read-cache.js';
import type { RegistryWriteSettings } from '../../src/registry/write-queue.js';
import type { SummaryConfig } from '../../src/summaries/generator.js';
import type { WebhookSettings, WebhookWorkerSettings } from '../../src/webhooks/settings.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export const demoFixture = JSON.parse(
  readFileSync(new URL('../../prisma/fixtures/demo.json', import.meta.url), 'utf8'),
);

export const TEST_PUBLIC_APP_URL = 'https://app.test.example';

export const TEST_SUMMARIES: SummaryConfig = {
  provider: { kind: 'extractive' },
  timeoutMs: 10_000,
  defaultDailyCap: 500,
  maxConcurrent: 4,
};

export interface TestApp {
  app: FastifyInstance;
  database: TestDatabase;
  /** GET with an optional bearer key and extra headers */
  get(url: string, key?: string | null, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  fixture?: unknown;
  serverTiming?: boolean;
  publicAppUrl?: string;
  /** default: an in-process limiter of this app alone */
  rateLimiter?: KeyRateLimiter;
  defaultRateLimit?: number;
  requestTimeoutMs?: number;
  /** default: extractive, 10 s timeout, 500 a day (TEST_SUMMARIES) */
  summaries?: Partial<SummaryConfig>;
  /** default: a registry of the app's own */
  metrics?: Metrics;
  /** default: 30 days, as TRUST_STALE_VALIDATION_DAYS */
  staleValidationDays?: number;
  /** default: no logging */
  logger?: FastifyBaseLogger;
  /** default: generous enough that no suite trips it unless it means to */
  throttle?: ThrottleConfig;
  /** default: false */
  trustProxy?: TrustProxy;
  /** default: none */
  corsOrigins?: string[];
  /** default: 20 s */
  requestDeadlineMs?: number;
  /** requests per minute of a service token; default 60 */
  serviceTokenRateLimit?: number;
  /** discussion writes per minute of a member or token; default: the service's (DISCUSSION_WRITES_PER_MINUTE) */
  discussionWritesPerMinute?: number;
  /** connections of the test database's pool (PostgreSQL); default 4 */
  poolSize?: number;
  /** default: one of the app's own, of the service's bounds */
  readCache?: ReadCache;
  /** sign-in with an OpenID Connect provider (OIDC_*); default: none */
  oidc?: OidcSettings;
  /** default: false (GRAPHQL_ERROR_DETAILS) */
  graphqlErrorDetails?: boolean;
  /** default: none (every read on the primary) */
  readRouting?: ReadRouting;
  /** default: the service's (https:// and public addresses only) */
  webhooks?: Partial<WebhookSettings>;
  /** default: no delivery worker */
  webhookWorker?: Partial<WebhookWorkerSettings>;
  /** default: the service's (src/registry/write-queue.ts) */
  registryWrites?: Partial<RegistryWriteSettings>;
  /** removals a prune makes without allow_removals; default: the service's (PRUNE_MAX_REMOVALS) */
  pruneMaxRemovals?: number;
}

/** Builds one more app (an instance) over an existing test database. */
export async function buildTestInstance(database: Database, options: TestAppOptions = {}): Promise<FastifyInstance> {
  const rateLimiter = options.rateLimiter ?? createKeyRateLimiter({ logger: silentLogger });
  const app = await buildApp({
    database,
    logger: options.logger,
    metrics: options.metrics,
    rateLimiter,
    readCache: options.readCache,
    readRouting: options.readRouting,
    config: {
      publicAppUrl: options.publicAppUrl ?? TEST_PUBLIC_APP_URL,
      oidc: options.oidc,
      summaries: { ...TEST_SUMMARIES, ...options.summaries },
      trust: trustPolicyOf(options),
      serverTiming: options.serverTiming ?? false,
      graphqlErrorDetails: options.graphqlErrorDetails ?? false,
      trustProxy: options.trustProxy ?? false,
      corsOrigins: options.corsOrigins ?? [],
      requestDeadlineMs: options.requestDeadlineMs ?? 20_000,
      defaultRateLimit: options.defaultRateLimit ?? 60,
      serviceTokenRateLimit: options.serviceTokenRateLimit ?? 60,
      discussionWritesPerMinute: options.discussionWritesPerMinute,
      requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
      throttle: options.throttle ?? { pointsPerMinute: 100_000, failureCost: 10 },
      webhooks: options.webhooks,
      webhookWorker: options.webhookWorker,
      registryWrites: options.registryWrites,
      pruneMaxRemovals: options.pruneMaxRemovals,
    },
  });
  if (!options.rateLimiter) app.addHook('onClose', () => rateLimiter.close());
  await app.ready();
  return app;
}

const trustPolicyOf = (options: TestAppOptions) => ({ staleValidationDays: options.staleValidationDays ?? 30 });

export const silentLogger = { warn: () => {}, info: () => {} };

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = await createTestDatabase({ poolSize: options.poolSize });
  // The verdicts announced at load with the app's thresholds, as the app's own writes and sweep would.
  if (options.fixture) await loadFixture(database.prisma, options.fixture, { trust: trustPolicyOf(options) });
  const app = await buildTestInstance(database, options);
  return {
    app,
    database,
    get: (url, key, headers = {}) =>
      app.inject({ method: 'GET', url, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } }),
    inject: (injectOptions) => app.inject(injectOptions),
    close: async () => {
      await app.close();
      await database.drop();
    },
  };
}
