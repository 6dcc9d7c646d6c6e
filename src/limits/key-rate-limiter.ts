/**
 * Per-key request budgets: a fixed one-minute window per API key (contract
 * section 8), the key's own `rate_limit_per_minute` or the server default.
 *
 * With Redis (one server, or a Redis Cluster: docs/redis-cluster.md) every
 * instance shares the window (rate-limiter-flexible on ioredis). If Redis
 * stops answering, each instance keeps limiting on its own in-process window
 * (the insurance limiter) and goes back to Redis as soon as it answers again;
 * the outage and the recovery are logged once each.
 */
import { Cluster, type Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import type { RedisClusterConfig } from '../env.js';
import { connectRedis, type RedisClient, redisAnswers, redisTarget } from '../redis.js';
import { spendPerSlot } from './cluster-spends.js';

const WINDOW_SECONDS = 60;

/** Admissions one script call spends for at most: Redis runs a script alone, so a call stays short. */
export const ADMISSIONS_PER_CALL = 64;

/** How long Redis is passed over after a spend it did not answer in time. */
const PASS_OVER_MS = 1000;

export type RateDecision =
  | { allowed: true; limit: number; remaining: number; resetSeconds: number }
  | { allowed: false; limit: number; remaining: 0; resetSeconds: number; retryAfterSeconds: number };

/** What a subject has spent of its current window, whatever its limit. */
export interface WindowSpend {
  consumed: number;
  msBeforeReset: number;
}

export interface KeyRateLimiter {
  /** Spends `cost` (default 1) of `subject`'s budget of `limit` per minute. */
  consume(subject: string, limit: number, cost?: number): Promise<RateDecision>;
  /**
   * Spends `cost` (default 1) of `subject`'s window without deciding: the
   * caller decides later, against a limit it may not know yet
   * ({@link decide}).
   */
  spend(subject: string, cost?: number): Promise<WindowSpend>;
  /**
   * Spends one unit of each subject's window, in one command to Redis (an
   * admission's: the client's throttle and the key's window; with the
   * admissions of the same event-loop turn); the spends in the order of
   * `subjects`.
   */
  spendEach<const S extends readonly string[]>(subjects: S): Promise<{ [K in keyof S]: WindowSpend }>;
  /** Gives `cost` back to the window (a refused request's spend, a GraphQL request refused for its cost). */
  refund(subject: string, cost: number): Promise<void>;
  /** Whether the shared store answers (always true without Redis). */
  reachable(): Promise<boolean>;
  /** Resolves once Redis answers (at once without Redis); rejects after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface Logger {
  warn(object: object, message: string): void;
  info(object: object, message: string): void;
}

export interface RateLimiterOptions {
  redisUrl?: string;
  /** a Redis Cluster's seed nodes, instead of `redisUrl` */
  redisCluster?: RedisClusterConfig;
  /** isolates one deployment's (or test's) counters from another's in a shared Redis */
  keyPrefix?: string;
  logger: Logger;
  /** every Redis connection error, for metrics (the log says only the first of an outage) */
  onRedisError?: () => void;
}

/** The decision on a window spent so far, for a budget of `limit` per minute. */
export function decide(limit: number, spent: WindowSpend): RateDecision {
  const resetSeconds = Math.max(1, Math.ceil(spent.msBeforeReset / 1000));
  return spent.consumed <= limit
    ? { allowed: true, limit, remaining: limit - spent.consumed, resetSeconds }
    : { allowed: false, limit, remaining: 0, resetSeconds, retryAfterSeconds: resetSeconds };
}

/**
 * One unit of each window KEYS[i] (ARGV[1]: the window in seconds), as
 * rate-limiter-flexible counts a window (its own script, once per key), so
 * that its refunds apply to the same counters: { consumed, ms to reset } per key.
 */
const SPEND_EACH = `
local spent = {}
for i, key in ipairs(KEYS) do
  redis.call('set', key, 0, 'EX', ARGV[1], 'NX')
  local consumed = redis.call('incrby', key, 1)
  local ttl = redis.call('pttl', key)
  if ttl == -1 then
    redis.call('expire', key, ARGV[1])
    ttl = 1000 * ARGV[1]
  end
  spent[#spent + 1] = consumed
  spent[#spent + 1] = ttl
end
return spent`;

declare module 'ioredis' {
  interface RedisCommander {
    /** SPEND_EACH: the number of keys, the keys, the window in seconds. */
    mgSpendEach(keyCount: number, ...keysAndWindow: (string | number)[]): Promise<number[]>;
  }
}

export function createKeyRateLimiter(options: RateLimiterOptions): KeyRateLimiter {
  const prefix = options.keyPrefix ?? 'mg:rl';
  const target = redisTarget(options.redisUrl, options.redisCluster);
  const redis = target
    ? connectRedis(target, options.logger, {
        outage: 'rate limits fall back to in-process windows',
        recovery: 'rate limits shared through Redis',
        onError: options.onRedisError,
      })
    : null;
  redis?.defineCommand('mgSpendEach', { lua: SPEND_EACH });
  const cluster = redis instanceof Cluster;
  /**
   * A subject's window, by the name both the script and rate-limiter-flexible (its refunds) count
   * it under. On a cluster the subject is the key's hash tag: its window is in the slot of the
   * subject alone, whatever the prefix, and different subjects spread over the nodes.
   */
  const windowOf = (subject: string) => (cluster ? `{${subject}}` : subject);

  // One counter per subject and window; the limit is applied by the caller (decide), so a
  // subject's limit may be learnt after its spend (a key's, from the key lookup), and a
  // changed limit applies at once to the window under way.
  const common = { points: Number.MAX_SAFE_INTEGER, duration: WINDOW_SECONDS, keyPrefix: `${prefix}:w` };
  const inProcess = new RateLimiterMemory(common);
  const windows: RateLimiterAbstract = redis
    ? new RateLimiterRedis({ ...common, storeClient: redis, rejectIfRedisNotReady: true, insuranceLimiter: inProcess })
    : inProcess;
  const spend = async (subject: string, cost = 1): Promise<WindowSpend> => {
    const result = await windows.consume(windowOf(subject), cost);
    return { consumed: result.consumedPoints, msBeforeReset: result.msBeforeNext };
  };
  /** Without Redis, or while it does not answer: the in-process windows, as rate-limiter-flexible's insurance. */
  const spendInProcess = (windowNames: readonly string[]) =>
    Promise.all(
      windowNames.map(async (name): Promise<WindowSpend> => {
        const result = await inProcess.consume(name, 1);
        return { consumed: result.consumedPoints, msBeforeReset: result.msBeforeNext };
      }),
    );
  /**
   * The spends of one event-loop turn (every admission that reached this point in it) go to Redis
   * together: one script call for up to {@link ADMISSIONS_PER_CALL} admissions, one write and one
   * reply, where each admission was a round trip of its own (on a cluster, one call per hash slot:
   * cluster-spends.ts). The script spends in order, so each admission still gets its own counts.
   */
  type Admission = { windowNames: readonly string[]; resolve(spent: WindowSpend[]): void };
  let waiting: Admission[] = [];
  /**
   * Until then the windows are spent in process: a spend Redis did not answer within its command
   * timeout (a frozen server, or one too loaded to answer) passes Redis over for
   * {@link PASS_OVER_MS}, rather than every admission meanwhile waiting out the timeout again.
   */
  let passedOverUntil = 0;
  const spendFailed = (error: unknown) => {
    if (error instanceof Error && error.message === 'Command timed out') passedOverUntil = Date.now() + PASS_OVER_MS;
  };
  const keyOf = (windowName: string) => `${common.keyPrefix}:${windowName}`;
  /** One script call spending `windowNames` in order; when Redis fails it, the in-process windows' spends. */
  const spendInOneCall = async (client: Redis, windowNames: readonly string[]): Promise<WindowSpend[]> => {
    try {
      const counts = await client.mgSpendEach(windowNames.length, ...windowNames.map(keyOf), WINDOW_SECONDS);
      return windowNames.map((_, i) => ({ consumed: Number(counts[2 * i]), msBeforeReset: Number(counts[2 * i + 1]) }));
    } catch (error) {
      spendFailed(error);
      return spendInProcess(windowNames);
    }
  };
  /** On a cluster, one call per hash slot; the windows of a slot whose call fails, in process. */
  const spendPerSlotOf = async (client: Cluster, windowNames: readonly string[]): Promise<WindowSpend[]> => {
    const counted = await spendPerSlot(client, windowNames.map(keyOf), WINDOW_SECONDS, spendFailed);
    return Promise.all(
      counted.map(async (count, i) => {
        if (count) return { consumed: count[0], msBeforeReset: count[1] };
        const [spent] = await spendInProcess([windowNames[i] as string]);
        return spent as WindowSpend;
      }),
    );
  };
  const spendTogether = async (client: RedisClient, admissions: Admission[]) => {
    const windowNames = admissions.flatMap((admission) => admission.windowNames);
    const spent =
      client instanceof Cluster ? await spendPerSlotOf(client, windowNames) : await spendInOneCall(client, windowNames);
    let next = 0;
    for (const admission of admissions) {
      admission.resolve(spent.slice(next, next + admission.windowNames.length));
      next += admission.windowNames.length;
    }
  };
  const flush = (client: RedisClient) => {
    const all = waiting;
    waiting = [];
    for (let start = 0; start < all.length; start += ADMISSIONS_PER_CALL) {
      void spendTogether(client, all.slice(start, start + ADMISSIONS_PER_CALL));
    }
  };
  const spendInRedis = (windowNames: readonly string[]): Promise<WindowSpend[]> => {
    if (redis?.status !== 'ready' || Date.now() < passedOverUntil) return spendInProcess(windowNames);
    return new Promise((resolve) => {
      if (waiting.length === 0) setImmediate(flush, redis);
      waiting.push({ windowNames, resolve });
    });
  };
  // One spend per subject, in order: the tuple type of `subjects`, element for element.
  const spendEach = <const S extends readonly string[]>(subjects: S) =>
    // A window is its subject on a single Redis: no array made per admission there.
    spendInRedis(cluster ? subjects.map(windowOf) : subjects) as Promise<{ [K in keyof S]: WindowSpend }>;

  return {
    async consume(subject, limit, cost = 1) {
      return decide(limit, await spend(subject, cost));
    },
    spend,
    spendEach,
    async reachable() {
      return redis ? redisAnswers(redis) : true;
    },
    async refund(subject, cost) {
      if (cost > 0) await windows.reward(windowOf(subject), cost);
    },
    async ready(timeoutMs = 5000) {
      if (!redis || redis.status === 'ready') return;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`Redis not ready after ${timeoutMs} ms`)), timeoutMs);
        redis.once('ready', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    async close() {
      if (redis) redis.disconnect();
    },
  };
}
