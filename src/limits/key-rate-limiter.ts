/**
 * Per-key request budgets: a fixed one-minute window per API key (contract
 * section 8), the key's own `rate_limit_per_minute` or the server default.
 *
 * With Redis every instance shares the window (rate-limiter-flexible on
 * ioredis). If Redis stops answering, each instance keeps limiting on its own
 * in-process window (the insurance limiter) and goes back to Redis as soon as
 * it answers again; the outage and the recovery are logged once each.
 */
import { Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';

const WINDOW_SECONDS = 60;

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
   * ({@link decide}). Spends issued in the same tick share one round trip to
   * Redis (ioredis auto-pipelining).
   */
  spend(subject: string, cost?: number): Promise<WindowSpend>;
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

export function createKeyRateLimiter(options: RateLimiterOptions): KeyRateLimiter {
  const prefix = options.keyPrefix ?? 'mg:rl';
  const redis = options.redisUrl
    ? new Redis(options.redisUrl, {
        // Fail fast while disconnected, so the insurance limiter answers at once.
        enableOfflineQueue: false,
        enableAutoPipelining: true,
        maxRetriesPerRequest: 1,
        connectTimeout: 2000,
        retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
      })
    : null;
  if (redis) {
    let down = false;
    redis.on('error', (error: Error) => {
      options.onRedisError?.();
      if (down) return;
      down = true;
      options.logger.warn({ err: error.message }, 'Redis unreachable: rate limits fall back to in-process windows');
    });
    redis.on('ready', () => {
      if (!down) return;
      down = false;
      options.logger.info({}, 'Redis reachable again: rate limits shared through Redis');
    });
  }

  // One counter per subject and window; the limit is applied by the caller (decide), so a
  // subject's limit may be learnt after its spend (a key's, from the key lookup), and a
  // changed limit applies at once to the window under way.
  const common = { points: Number.MAX_SAFE_INTEGER, duration: WINDOW_SECONDS, keyPrefix: `${prefix}:w` };
  const windows: RateLimiterAbstract = redis
    ? new RateLimiterRedis({
        ...common,
        storeClient: redis,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory(common),
      })
    : new RateLimiterMemory(common);
  const spend = async (subject: string, cost = 1): Promise<WindowSpend> => {
    const result = await windows.consume(subject, cost);
    return { consumed: result.consumedPoints, msBeforeReset: result.msBeforeNext };
  };

  return {
    async consume(subject, limit, cost = 1) {
      return decide(limit, await spend(subject, cost));
    },
    spend,
    async reachable() {
      if (!redis) return true;
      if (redis.status !== 'ready') return false;
      try {
        return (await redis.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    async refund(subject, cost) {
      if (cost > 0) await windows.reward(subject, cost);
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
