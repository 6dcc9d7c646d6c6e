/**
 * Authentication of one HTTP request, in the order the service interface
 * fixes (the throttle and the per-key rate limit slot in around the key
 * checks). Failures become the documented error responses.
 */
import type {} from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticateApiKey, authenticateSession, SERVICE_ENV_HEADER } from '../auth/authenticate.js';
import type { RequestedScope } from '../auth/scopes.js';
import type { Principal } from '../context.js';
import { errors, HttpError } from '../errors.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { KeyRateLimiter } from '../limits/key-rate-limiter.js';
import { firstHeader } from './headers.js';

export interface AccessDeps {
  prisma: PrismaClient;
  rateLimiter: KeyRateLimiter;
  /** requests per minute of a key without its own limit, and of a session user */
  defaultRateLimit: number;
}

/**
 * The last check before a route's own work: one request of the caller's
 * per-minute budget. Every answer carries the budget left
 * (RateLimit-Limit/-Remaining/-Reset, IETF draft headers); past it, 429
 * with Retry-After in whole seconds.
 */
async function spendBudget(deps: AccessDeps, reply: FastifyReply, principal: Principal): Promise<void> {
  const [subject, limit] =
    principal.kind === 'api_key'
      ? [`key:${principal.keyId}`, principal.rateLimitPerMinute ?? deps.defaultRateLimit]
      : [`user:${principal.userId}`, deps.defaultRateLimit];
  const decision = await deps.rateLimiter.consume(subject, limit);
  reply.header('RateLimit-Limit', decision.limit);
  reply.header('RateLimit-Remaining', decision.remaining);
  reply.header('RateLimit-Reset', decision.resetSeconds);
  if (!decision.allowed) {
    reply.header('Retry-After', decision.retryAfterSeconds);
    throw new HttpError(errors.rateLimited);
  }
}

/** Bearer API key with the requested scope, within its rate limit; throws HttpError otherwise. */
export async function admitApiKey(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: RequestedScope,
): Promise<Principal> {
  const principal = await requireApiKey(deps.prisma, request, scope);
  await spendBudget(deps, reply, principal);
  return principal;
}

async function requireApiKey(prisma: PrismaClient, request: FastifyRequest, scope: RequestedScope): Promise<Principal> {
  const result = await authenticateApiKey(
    prisma,
    { authorization: firstHeader(request, 'authorization'), serviceEnv: firstHeader(request, SERVICE_ENV_HEADER) },
    scope,
  );
  if (!result.ok) throw new HttpError(result.error);
  return result.principal;
}

/**
 * GraphQL callers: an Authorization header means an API key (checked like
 * GET /api/v1/metrics); without one, a signed-in session cookie is accepted.
 */
export async function admitApiKeyOrSession(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Principal> {
  const sessionToken = request.cookies.session;
  if (firstHeader(request, 'authorization') === undefined && sessionToken) {
    const result = await authenticateSession(deps.prisma, sessionToken);
    if (!result.ok) throw new HttpError(result.error);
    await spendBudget(deps, reply, result.principal);
    return result.principal;
  }
  return admitApiKey(deps, request, reply, 'metrics:read');
}
