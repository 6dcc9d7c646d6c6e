/**
 * Admission of one HTTP request, in the order the service interface fixes:
 * pre-verification throttle, Authorization header and key format, key
 * lookup, revoked, sandbox header, scope, per-key rate limit. Failures become
 * the documented error responses.
 */
import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type AuthResult, authenticateApiKey, authenticateSession, SERVICE_ENV_HEADER } from '../auth/authenticate.js';
import type { LastUsedRecorder } from '../auth/last-used.js';
import type { RequestedScope } from '../auth/scopes.js';
import type { Principal } from '../context.js';
import type { SqlReader } from '../db/sql.js';
import { errors, HttpError } from '../errors.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { KeyRateLimiter, RateDecision } from '../limits/key-rate-limiter.js';
import type { ReadCache } from '../metric/read-cache.js';
import { firstHeader } from './headers.js';
import type { Metrics } from './metrics.js';
import { notePrincipal } from './observability.js';

export interface ThrottleConfig {
  /** points per client address per minute */
  pointsPerMinute: number;
  /** points a failed authentication costs (a successful one costs 1) */
  failureCost: number;
}

export interface AccessDeps {
  prisma: PrismaClient;
  sql: SqlReader;
  reads: ReadCache;
  rateLimiter: KeyRateLimiter;
  /** requests per minute of a key without its own limit, and of a session user */
  defaultRateLimit: number;
  throttle: ThrottleConfig;
  lastUsed: LastUsedRecorder;
  metrics: Metrics;
}

/**
 * The pre-verification throttle: a per-client budget spent before any key
 * lookup, so guessing keys is slow. It is keyed by the client address only
 * and runs the same whatever the presented key is, so it reveals nothing
 * about which keys or prefixes exist; a failed authentication then costs
 * `failureCost` in all (see {@link authenticated}).
 */
async function throttle(deps: AccessDeps, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const decision = await deps.rateLimiter.consume(`client:${request.ip}`, deps.throttle.pointsPerMinute);
  if (!decision.allowed) {
    deps.metrics.rejections.inc({ limit: 'throttle' });
    reply.header('Retry-After', decision.retryAfterSeconds);
    throw new HttpError(errors.rateLimited);
  }
}

/** Unwraps an authentication result; a 401 costs the client its failure surcharge first. */
async function authenticated(deps: AccessDeps, request: FastifyRequest, result: AuthResult): Promise<Principal> {
  if (result.ok) return result.principal;
  if (result.error.status === 401) {
    await deps.rateLimiter.penalize(
      `client:${request.ip}`,
      deps.throttle.pointsPerMinute,
      deps.throttle.failureCost - 1,
    );
  }
  throw new HttpError(result.error);
}

function budgetOf(deps: AccessDeps, principal: Principal): [subject: string, limit: number] {
  return principal.kind === 'api_key'
    ? [`key:${principal.keyId}`, principal.rateLimitPerMinute ?? deps.defaultRateLimit]
    : [`user:${principal.userId}`, deps.defaultRateLimit];
}

function rateLimitHeaders(reply: FastifyReply, decision: RateDecision): void {
  reply.header('RateLimit-Limit', decision.limit);
  reply.header('RateLimit-Remaining', decision.remaining);
  reply.header('RateLimit-Reset', decision.resetSeconds);
}

/**
 * The last check before a route's own work: one request of the caller's
 * per-minute budget. Every answer carries the budget left
 * (RateLimit-Limit/-Remaining/-Reset, IETF draft headers); past it, 429
 * with Retry-After in whole seconds.
 */
async function spendBudget(deps: AccessDeps, reply: FastifyReply, principal: Principal): Promise<void> {
  const [subject, limit] = budgetOf(deps, principal);
  const decision = await deps.rateLimiter.consume(subject, limit);
  rateLimitHeaders(reply, decision);
  if (!decision.allowed) {
    deps.metrics.rejections.inc({ limit: 'key' });
    reply.header('Retry-After', decision.retryAfterSeconds);
    throw new HttpError(errors.rateLimited);
  }
}

/**
 * A request's cost beyond the unit it spent on admission (a GraphQL
 * operation's, src/graphql-cost.ts; an MCP batch's, one per tool call),
 * spent before it runs. When the budget cannot
 * pay it, the extra units are given back (the request keeps only its
 * admission unit), RateLimit-Remaining still says what is left for smaller
 * requests, Retry-After when the window resets, and the answer is false.
 */
export async function spendOperationCost(
  deps: AccessDeps,
  reply: FastifyReply,
  principal: Principal,
  cost: number,
): Promise<boolean> {
  const extra = cost - 1;
  if (extra <= 0) return true;
  const [subject, limit] = budgetOf(deps, principal);
  const decision = await deps.rateLimiter.consume(subject, limit, extra);
  if (decision.allowed) {
    rateLimitHeaders(reply, decision);
    return true;
  }
  await deps.rateLimiter.refund(subject, limit, extra);
  deps.metrics.rejections.inc({ limit: 'key' });
  reply.header('Retry-After', decision.retryAfterSeconds);
  return false;
}

function authenticateBearer(sql: SqlReader, request: FastifyRequest, scope: RequestedScope) {
  return authenticateApiKey(
    sql,
    { authorization: firstHeader(request, 'authorization'), serviceEnv: firstHeader(request, SERVICE_ENV_HEADER) },
    scope,
  );
}

/** Throttle, authenticate, spend the caller's budget, note the key's use. */
async function admit(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  authenticate: () => Promise<AuthResult>,
): Promise<Principal> {
  await throttle(deps, request, reply);
  const principal = await authenticated(deps, request, await authenticate());
  notePrincipal(request, principal);
  await spendBudget(deps, reply, principal);
  if (principal.kind === 'api_key') deps.lastUsed.touch(principal.keyId);
  return principal;
}

/** Bearer API key with the requested scope, within its rate limit; throws HttpError otherwise. */
export function admitApiKey(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: RequestedScope,
): Promise<Principal> {
  return admit(deps, request, reply, () => authenticateBearer(deps.sql, request, scope));
}

/** A signed-in session (cookie), throttled and rate-limited per user like a key. */
export function admitSession(deps: AccessDeps, request: FastifyRequest, reply: FastifyReply): Promise<Principal> {
  return admit(deps, request, reply, () => authenticateSession(deps.prisma, request.cookies.session));
}

/**
 * GraphQL callers: an Authorization header means an API key (checked like
 * GET /api/v1/metrics); without one, a signed-in session cookie is accepted.
 */
export function admitApiKeyOrSession(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Principal> {
  const sessionToken = request.cookies.session;
  return admit(deps, request, reply, () =>
    firstHeader(request, 'authorization') === undefined && sessionToken
      ? authenticateSession(deps.prisma, sessionToken)
      : authenticateBearer(deps.sql, request, 'metrics:read'),
  );
}
