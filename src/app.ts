/**
 * Builds the HTTP application (Fastify); never listens (src/server.ts does).
 * Tests build it and call it in process.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import { createLastUsedRecorder } from './auth/last-used.js';
import { presentedServiceToken } from './auth/service-token.js';
import { startSweeper } from './changes/sweep.js';
import { createChangeWatcher, WATCH_INTERVAL_MS } from './changes/watcher.js';
import { createContext, type ServiceConfig } from './context.js';
import type { Database } from './db/client.js';
import { currentQueryStats, withQueryStats } from './db/query-stats.js';
import type { ReadRouting } from './db/read-routing.js';
import { isDatabaseUnavailable } from './db/unavailable.js';
import { DEFAULT_DISCUSSION_WRITES_PER_MINUTE } from './discussions/limits.js';
import type { TrustProxy } from './env.js';
import { BEARER_CHALLENGE, badRequest, type ErrorResponse, errors, HttpError } from './errors.js';
import { graphiqlAssets, graphiqlRoutes } from './graphiql-page.js';
import { createGraphqlServer, wantsGraphiql } from './graphql-server.js';
import { apiKeyRoutes } from './http/admin-routes.js';
import { allowListedOrigins, rejectCrossOrigin } from './http/cross-origin.js';
import { discussionRoutes, discussionWritesFor } from './http/discussion-routes.js';
import { sendHttpError } from './http/error-reply.js';
import { exportRoutes } from './http/export-routes.js';
import { firstHeader, sessionCookie } from './http/headers.js';
import { metricAdminRoutes } from './http/metric-admin-routes.js';
import { createMetrics, type Metrics } from './http/metrics.js';
import { instrumentRequests, requestId } from './http/observability.js';
import { pageRoutes } from './http/pages/routes.js';
import { observeReplicas, replicaStatus } from './http/replica-status.js';
import {
  type AccessDeps,
  admitApiKeyOrSession,
  admitServiceToken,
  readsOf,
  spendOperationCost,
  type ThrottleConfig,
  throttleClient,
} from './http/request-auth.js';
import { rootRoute } from './http/root.js';
import { sendAsset } from './http/static-assets.js';
import { uploadRoutes } from './http/upload-routes.js';
import { webhookRoutes } from './http/webhook-routes.js';
import { writeRoutes } from './http/write-routes.js';
import type { KeyRateLimiter } from './limits/key-rate-limiter.js';
import { mcpRoutes } from './mcp/route.js';
import { createReadCache, type ReadCache } from './metric/read-cache.js';
import { createUsageCounter } from './metric/usage.js';
import { openApiRoutes } from './openapi/routes.js';
import {
  createDocumentReader,
  DEFAULT_DOCUMENT_READ_SETTINGS,
  type DocumentReadSettings,
} from './registry/read-off-thread.js';
import {
  createRegistryWriteQueue,
  DEFAULT_REGISTRY_WRITE_SETTINGS,
  type RegistryWriteSettings,
  writeConnections,
} from './registry/write-queue.js';
import { changesRoute } from './rest/changes-route.js';
import { lineageRoute } from './rest/lineage-route.js';
import { restRoutes } from './rest/routes.js';
import {
  DEFAULT_WEBHOOK_SETTINGS,
  DEFAULT_WORKER_SETTINGS,
  type WebhookSettings,
  type WebhookWorkerSettings,
} from './webhooks/settings.js';
import { startWebhookWorker } from './webhooks/worker.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Marks the app as shutting down: /readyz answers 503, everything else is still served. */
    drain(): void;
    /** Writes the metric reads this instance counted and holds (src/metric/usage.ts); they are also written every 10 s and at close. */
    flushUsage(): Promise<void>;
  }
}

export interface AppOptions {
  database: Database;
  config: ServiceConfig & {
    serverTiming: boolean;
    /** GraphQL errors carry the original error (message, stack) to clients; default false, whatever NODE_ENV */
    graphqlErrorDetails?: boolean;
    /** Fastify's trustProxy: false, true (every hop), a hop count, or proxy addresses and CIDR ranges */
    trustProxy: TrustProxy;
    /** origins whose pages may call /api/v1/* and /graphql with a bearer key (CORS); empty: none */
    corsOrigins: readonly string[];
    /** a request not answered within this time is cut off: 500 (`Failed to fetch metric` on metric routes) */
    requestDeadlineMs: number;
    defaultRateLimit: number;
    /** requests per minute of a service token; default 60 */
    serviceTokenRateLimit?: number;
    /** discussion writes per minute of one member or service token; default DEFAULT_DISCUSSION_WRITES_PER_MINUTE */
    discussionWritesPerMinute?: number;
    /** a client must have sent its whole request within this time (408 otherwise) */
    requestTimeoutMs: number;
    throttle: ThrottleConfig;
    /**
     * The trust sweep and the feed's retention (src/changes/sweep.ts), run by this app while it
     * is open; unset: not run (tests run a sweep themselves).
     */
    changeSweep?: { intervalMs: number; retentionDays: number };
    /** removals a prune makes without allow_removals (PRUNE_MAX_REMOVALS); default DEFAULT_PRUNE_MAX_REMOVALS */
    pruneMaxRemovals?: number;
    /** what webhook endpoints may be and how deliveries are retried; default DEFAULT_WEBHOOK_SETTINGS */
    webhooks?: Partial<WebhookSettings>;
    /** the webhook delivery worker (src/webhooks/worker.ts), run by this app while it is open; unset: not run */
    webhookWorker?: Partial<WebhookWorkerSettings>;
    /** how registry writes queue (src/registry/write-queue.ts); default DEFAULT_REGISTRY_WRITE_SETTINGS, a quarter of the pool */
    registryWrites?: Partial<RegistryWriteSettings>;
    /** how write bodies are read off the event loop (src/registry/read-off-thread.ts); default DEFAULT_DOCUMENT_READ_SETTINGS */
    documentReads?: Partial<DocumentReadSettings>;
  };
  rateLimiter: KeyRateLimiter;
  logger?: FastifyBaseLogger;
  /** default: a registry of this app's own (tests) */
  metrics?: Metrics;
  /** the kept list totals and search pages (src/metric/read-cache.ts); default: 4 and 16 MiB of the app's own */
  readCache?: ReadCache;
  /** with read replicas: where reads go (src/db/read-routing.ts); absent: every read on the primary */
  readRouting?: ReadRouting;
}

/**
 * Fastify 5.12 takes a hop count but then trusts no hop at all ("fails closed"), which behind a
 * load balancer puts every client in the balancer's throttle bucket. A hop count here means what
 * it means in proxy-addr and Express: the nearest `hops` addresses (the socket's first) are
 * proxies, and the client is the next one, from the right of X-Forwarded-For. Safe only when
 * clients cannot reach the service except through those proxies; an address list is stricter.
 */
function trustProxyOption(trust: TrustProxy): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { database, config } = options;
  const prisma = database.prisma;
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    trustProxy: trustProxyOption(config.trustProxy),
    // Request size and time limits: a larger body is a 413, and a client that
    // has not sent its whole request within REQUEST_TIMEOUT_MS is cut off (408) rather than
    // holding a connection. Headers are capped by Node (16 KiB, 431).
    bodyLimit: 1024 * 1024,
    requestTimeout: config.requestTimeoutMs,
    // The deadline of a request from routing to its response: past it the
    // error handler answers 500 and request.signal aborts. Statements are cut
    // off sooner by the database's statement_timeout (src/db/adapter.ts).
    handlerTimeout: config.requestDeadlineMs,
    // Node checks request timeouts on this interval (30 s by default, which
    // would let a slow client hold a connection that long past its limit).
    http: { connectionsCheckingInterval: Math.min(1000, Math.max(100, config.requestTimeoutMs / 4)) },
    // A URL that cannot be decoded (a lone surrogate's bytes) never reaches a route: it is answered
    // in the catalogue's shape, the metric routes' as their id check answers.
    frameworkErrors: (error, request, reply) => {
      const response: ErrorResponse = request.url.startsWith('/api/v1/metrics/')
        ? errors.invalidMetricId
        : badRequest(error.message);
      (reply as unknown as FastifyReply).status(response.status).send(response.body);
    },
    requestIdHeader: false,
    genReqId: requestId,
    // One line per request of our own (src/http/observability.ts) instead of Fastify's two.
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
  });
  const metrics = options.metrics ?? createMetrics();
  instrumentRequests(app, metrics);
  allowListedOrigins(app, config.corsOrigins);

  // SERVER_TIMING=1: every request counts its SQL statements and reports them. Only then: the
  // count rides on AsyncLocalStorage, whose hook on every promise costs about a tenth of the CPU
  // of a GraphQL page of 100 metrics.
  if (config.serverTiming) {
    app.addHook('onRequest', (_request, _reply, done) => {
      withQueryStats(async () => done()).catch(done);
    });
    app.addHook('onSend', async (_request, reply, payload) => {
      const stats = currentQueryStats();
      if (stats) {
        reply.header('Server-Timing', `db;dur=${stats.durationMs.toFixed(1)};desc="${stats.queries} queries"`);
      }
      return payload;
    });
  }

  // Every 401 names the scheme to authenticate with (RFC 9110 section 15.5.2); the errors that know
  // better (src/errors.ts) have set theirs.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (reply.statusCode === 401 && !reply.hasHeader('WWW-Authenticate')) {
      reply.header('WWW-Authenticate', BEARER_CHALLENGE);
    }
    return payload;
  });

  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    if (error instanceof HttpError) return sendHttpError(reply, error);
    const status = error.statusCode;
    if (status && status >= 400 && status < 500) {
      return reply.status(status).send({ error: error.message });
    }
    metrics.dependencyErrors.inc({ dependency: 'database' });
    // An outage is the client's to retry (503, Retry-After), whichever route it reached.
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable');
      return sendHttpError(reply, new HttpError(errors.serviceUnavailable));
    }
    request.log.error({ err: error }, 'request failed');
    const isMetricRoute = request.routeOptions.url?.startsWith('/api/v1/metrics');
    const response = isMetricRoute ? errors.fetchFailed : errors.internal;
    return reply.status(response.status).send(response.body);
  });
  app.setNotFoundHandler((_request, reply) => reply.status(404).send(errors.notFound.body));

  app.get('/healthz', async () => ({ status: 'ok' }));
  // 503 while the database or a configured Redis does not answer, and once
  // the app is draining (shutdown has begun): the load balancer stops sending
  // work while the app still serves what reaches it.
  let draining = false;
  app.decorate('drain', () => {
    draining = true;
  });
  app.get('/readyz', async (_request, reply) => {
    if (draining) return reply.status(503).send({ status: 'draining' });
    const [database, redis] = await Promise.all([
      prisma.$queryRaw`SELECT 1`.then(
        () => true,
        () => false,
      ),
      options.rateLimiter.reachable(),
    ]);
    const body = {
      status: database && redis ? 'ready' : 'unavailable',
      database: database ? 'up' : 'down',
      redis: redis ? 'up' : 'down',
      // Replicas out of the read set leave the app ready: their reads go to the primary.
      ...(options.readRouting ? { replicas: replicaStatus(options.readRouting.replicas) } : {}),
    };
    return reply.status(database && redis ? 200 : 503).send(body);
  });

  const usage = createUsageCounter(prisma, (error) => app.log.warn({ err: error }, 'could not write metric usage'));
  // After the routes have answered (onClose runs once the server has closed), before the database closes.
  app.addHook('onClose', () => usage.close());
  app.decorate('flushUsage', () => usage.flush());
  const access: AccessDeps = {
    prisma,
    sql: database.sql,
    reads: options.readCache ?? createReadCache(),
    rateLimiter: options.rateLimiter,
    defaultRateLimit: config.defaultRateLimit,
    serviceTokenRateLimit: config.serviceTokenRateLimit ?? 60,
    throttle: config.throttle,
    metrics,
    lastUsed: createLastUsedRecorder(prisma, (error) => app.log.warn({ err: error }, 'could not record last_used_at')),
    usage,
    ...(options.readRouting ? { routing: options.readRouting } : {}),
  };
  if (options.readRouting) observeReplicas(metrics, options.readRouting.replicas);
  const webhookSettings = { ...DEFAULT_WEBHOOK_SETTINGS, ...config.webhooks };
  const webhookWorker = config.webhookWorker
    ? startWebhookWorker(
        prisma,
        webhookSettings,
        { ...DEFAULT_WORKER_SETTINGS, ...config.webhookWorker },
        app.log,
        (outcome) => metrics.webhookAttempts.inc({ outcome: outcome.ok ? 'delivered' : 'failed' }),
      )
    : null;
  if (webhookWorker) app.addHook('onClose', () => webhookWorker.stop());
  // A commit of this instance wakes its webhook worker at once; others' are found by its poll.
  const watcher = createChangeWatcher(database.sql, app.log, WATCH_INTERVAL_MS, () => webhookWorker?.poke());
  // Waiting long-polls answer at once (empty) when the app closes, rather than holding it open.
  app.addHook('preClose', async () => watcher.close());
  if (config.changeSweep) {
    const sweeper = startSweeper(prisma, { ...config.changeSweep, trust: config.trust }, app.log, watcher.poke);
    app.addHook('onClose', () => sweeper.stop());
  }
  await app.register(restRoutes, { access, config });
  await app.register(changesRoute, { access, config, watcher });
  await app.register(lineageRoute, { access, config });
  await app.register(apiKeyRoutes, { access });
  await app.register(webhookRoutes, { access, settings: webhookSettings });
  const writeQueue = createRegistryWriteQueue(prisma, {
    ...DEFAULT_REGISTRY_WRITE_SETTINGS,
    connections: writeConnections(database.connections),
    ...config.registryWrites,
  });
  const documentReader = createDocumentReader({ ...DEFAULT_DOCUMENT_READ_SETTINGS, ...config.documentReads });
  app.addHook('onClose', () => documentReader.close());
  const writeDeps = {
    access,
    config,
    watcher,
    writeQueue,
    documentReader,
    pruneMaxRemovals: config.pruneMaxRemovals,
  };
  await app.register(writeRoutes, writeDeps);
  await app.register(uploadRoutes, writeDeps);
  await app.register(metricAdminRoutes, { access });
  await app.register(exportRoutes, { access });
  const discussionWrites = {
    access,
    watcher,
    writeQueue,
    writesPerMinute: config.discussionWritesPerMinute ?? DEFAULT_DISCUSSION_WRITES_PER_MINUTE,
  };
  await app.register(discussionRoutes, { ...discussionWrites, config });
  await app.register(openApiRoutes, { access });
  await app.register(graphiqlRoutes, { access });
  await app.register(rootRoute, { access });
  await app.register(pageRoutes, { access, config, discussionWrites });
  await app.register(mcpRoutes, { access, config });

  const yoga = createGraphqlServer(app.log, { errorDetails: config.graphqlErrorDetails === true });
  app.route({
    url: '/graphql',
    method: ['GET', 'POST', 'OPTIONS'],
    handler: async (request, reply) => {
      // GraphiQL's page runs no operation (a `?query=` only fills the editor); its queries come
      // back with credentials. The page is a static file, counted in the client's throttle.
      if (wantsGraphiql(request)) {
        await throttleClient(access, request, reply);
        return sendAsset(request, reply, (await graphiqlAssets()).page);
      }
      // A session cookie is honoured only from this origin: a page elsewhere gets no data
      // through a signed-in browser (a bearer key is no ambient credential).
      if (firstHeader(request, 'authorization') === undefined && sessionCookie(request)) {
        rejectCrossOrigin(request);
      }
      // A bot's service token (discussions:write) reads and writes discussions only
      // (src/schema/service-token-access.ts); an API key reads, a session reads and writes.
      const principal = presentedServiceToken(firstHeader(request, 'authorization')).ok
        ? await admitServiceToken(access, request, reply, 'discussions:write')
        : await admitApiKeyOrSession(access, request, reply);
      let overBudget = false;
      const response = await yoga.handleNodeRequestAndResponse(request, reply, {
        req: request,
        reply,
        graphqlContext: createContext(readsOf(access, request), principal, config, metrics, {
          discussionWrites: discussionWritesFor(discussionWrites, request),
        }),
        // Admission spent one unit; an operation that asks for more spends the rest before it runs.
        spendCost: async (cost) => {
          overBudget = !(await spendOperationCost(access, reply, principal, cost));
          return !overBudget;
        },
      });
      if (overBudget) throw new HttpError(errors.rateLimited);
      response.headers.forEach((value, key) => {
        reply.header(key, value);
      });
      reply.status(response.status);
      reply.send(response.body);
      return reply;
    },
  });

  return app;
}
