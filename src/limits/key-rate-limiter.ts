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
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

const WINDOW_SECONDS = 60;

export type RateDecision =
  | { allowed: true; limit: number; remaining: number; resetSeconds: number }
  | { allowed: false; limit: number; remaining: 0; resetSeconds: number; retryAfterSeconds: number };

export interface KeyRateLimiter {
  /** Spends `cost` (default 1) of `subject`'s budget of `limit` per minute. */
  consume(subject: string, limit: number, cost?: number): Promise<RateDecision>;
  /** Spends `cost` more of the budget without asking for an answer (a failed attempt's surcharge). */
  penalize(subject: string, limit: number, cost: number): Promise<void>;
  /** Gives `cost` back to the budget (a GraphQL request refused for its cost keeps only its admission unit). */
  refund(subject: string, limit: number, cost: number): Promise<void>;
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

function decision(limit: number, result: RateLimiterRes, allowed: boolean): RateDecision {
  const resetSeconds = Math.max(1, Math.ceil(result.msBeforeNext / 1000));
  return allowed
    ? { allowed, limit, remaining: Math.max(0, result.remainingPoints), resetSeconds }
    : { allowed, limit, remaining: 0, resetSeconds, retryAfterSeconds: resetSeconds };
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

  // One limiter per distinct budget: rate-limiter-flexible fixes `points` per limiter.
  const limiters = new Map<number, RateLimiterAbstract>();
  function limiterFor(limit: number): RateLimiterAbstract {
    let limiter = limiters.get(limit);
    if (!limiter) {
      const common = { points: limit, duration: WINDOW_SECONDS, keyPrefix: `${prefix}:${limit}` };
      limiter = redis
        ? new RateLimiterRedis({
            ...common,
            storeClient: redis,
            rejectIfRedisNotReady: true,
            insuranceLimiter: new RateLimiterMemory(common),
          })
        : new RateLimiterMemory(common);
      limiters.set(limit, limiter);
    }
    return limiter;
  }

  return {
    async consume(subject, limit, cost = 1) {
      try {
        return decision(limit, await limiterFor(limit).consume(subject, cost), true);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return decision(limit, rejection, false);
        throw rejection;
      }
    },
    async reachable() {
      if (!redis) return true;
      if (redis.status !== 'ready') return false;
      try {
        return (await redis.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    async penalize(subject, limit, cost) {
      if (cost > 0) await limiterFor(limit).penalty(subject, cost);
    },
    async refund(subject, limit, cost) {
      if (cost > 0) await limiterFor(limit).reward(subject, cost);
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
