/**
 * A connection to Redis: one server (REDIS_URL) or a Redis Cluster
 * (REDIS_CLUSTER_NODES, docs/redis-cluster.md), for the rate limits
 * (src/limits/key-rate-limiter.ts) and the read-your-writes marks
 * (src/db/write-marks.ts). Either way it fails fast while it is not ready, so
 * that what each keeps in process answers at once, and reconnects by itself;
 * an outage and the recovery are logged once each.
 */
import { Cluster, Redis } from 'ioredis';
import type { RedisClusterConfig } from './env.js';

export type RedisClient = Redis | Cluster;

/** One Redis by its URL, or the seed nodes of a cluster. */
export type RedisTarget = { url: string } | { cluster: RedisClusterConfig };

/** The Redis configured (REDIS_URL or REDIS_CLUSTER_NODES, never both); undefined: none. */
export const redisTarget = (
  url: string | undefined,
  cluster: RedisClusterConfig | undefined,
): RedisTarget | undefined => (cluster ? { cluster } : url ? { url } : undefined);

/** What a user of the connection says of an outage and of the recovery, and hears of every error. */
export interface RedisUse {
  /** what falls back while Redis is unreachable ("rate limits fall back to in-process windows") */
  outage: string;
  /** what is shared again once it answers */
  recovery: string;
  onError?: () => void;
}

interface Logger {
  warn(object: object, message: string): void;
  info(object: object, message: string): void;
}

/** Redis Cluster's hash slots. */
const SLOTS = 16384;

const retryStrategy = (attempt: number) => Math.min(attempt * 200, 2000);

/**
 * A command a server has not answered by then fails ("Command timed out"):
 * a frozen server (its connection open, nothing answering) would otherwise
 * hold every admission waiting on it for as long as it stays frozen.
 */
const COMMAND_TIMEOUT_MS = 500;

/** Of a server's connection (a cluster's: each node's). */
const connectionOptions = { maxRetriesPerRequest: 1, connectTimeout: 2000, commandTimeout: COMMAND_TIMEOUT_MS };

function createClient(target: RedisTarget): RedisClient {
  if ('url' in target) {
    return new Redis(target.url, {
      ...connectionOptions,
      // Fail fast while disconnected, so that what is kept in process answers at once.
      enableOfflineQueue: false,
      // An admission is one command (spendEach); a pipeline a tick would cost an object a request.
      enableAutoPipelining: false,
      retryStrategy,
    });
  }
  const { nodes, username, password, tls } = target.cluster;
  return new Cluster(nodes, {
    // As above; a cluster's spends are pipelined per master by cluster-spends.ts.
    enableOfflineQueue: false,
    clusterRetryStrategy: retryStrategy,
    slotsRefreshTimeout: connectionOptions.connectTimeout,
    // A lost master (its connection closed) and a cluster that lost one, which refuses every command
    // (CLUSTERDOWN) until it recovers: answer from the in-process windows at once, as with one Redis,
    // rather than retry (up to maxRedirections times, 100 ms apart: over a second an admission).
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 0,
    // Without it a master that was lost and came back is connected to again only when a command is
    // redirected to it: the readiness check sends none there.
    slotsRefreshInterval: 5000,
    redisOptions: { ...connectionOptions, username, password, ...(tls ? { tls: {} } : {}) },
  });
}

/** A client of `target` whose every error is counted (`use.onError`) and whose outages are logged once each. */
export function connectRedis(target: RedisTarget, logger: Logger, use: RedisUse): RedisClient {
  const client = createClient(target);
  let down = false;
  const failed = (error: Error) => {
    use.onError?.();
    if (down) return;
    down = true;
    logger.warn({ err: error.message }, `Redis unreachable: ${use.outage}`);
  };
  client.on('error', failed);
  // A cluster reports a node's connection errors apart from its own (slots it cannot refresh).
  if (client instanceof Cluster) client.on('node error', failed);
  client.on('ready', () => {
    if (!down) return;
    down = false;
    logger.info({}, `Redis reachable again: ${use.recovery}`);
  });
  return client;
}

/**
 * Whether every window can be spent in Redis: the server answers, or on a
 * cluster every hash slot has a master the client is connected to and every
 * such master answers (a lost master leaves its slots' windows in process
 * until the cluster fails over or it comes back).
 */
/** How long readiness waits for every server's PONG. */
const PING_TIMEOUT_MS = 1000;

export async function redisAnswers(client: RedisClient): Promise<boolean> {
  if (client.status !== 'ready') return false;
  let servers: Redis[] = [];
  if (client instanceof Cluster) {
    servers = client.nodes('master');
    const connected = new Set(servers.map((server) => `${server.options.host}:${server.options.port}`));
    for (let slot = 0; slot < SLOTS; slot++) {
      if (!connected.has(client.slots[slot]?.[0] ?? '')) return false;
    }
  } else {
    servers = [client];
  }
  // A lost master's connection may hold a PING until it reconnects: readiness answers within a bound.
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS);
  });
  // Caught here: a PING failing after the bound must not become an unhandled rejection.
  const answered = Promise.all(servers.map((server) => server.ping())).then(
    (replies) => replies.every((reply) => reply === 'PONG'),
    () => false,
  );
  try {
    return await Promise.race([answered, late]);
  } finally {
    clearTimeout(timer);
  }
}
