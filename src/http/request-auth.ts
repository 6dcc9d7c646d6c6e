/**
 * Admission of one HTTP request, in the order the service interface fixes:
 * pre-verification throttle, Authorization header and key format, key
 * lookup, revoked, sandbox header, scope, per-key rate limit. Failures become
 * the documented error responses.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  type AuthResult,
  authenticateApiKey,
  authenticatePageSession,
  authenticateSession,
  type PageViewerFacts,
  presentedKey,
  type ReadWithKey,
  SERVICE_ENV_HEADER,
} from '../auth/authenticate.js';
import type { LastUsedRecorder } from '../auth/last-used.js';
import type { RequestedScope } from '../auth/scopes.js';
import { authenticateServiceToken, presentedServiceToken, type WriteScope } from '../auth/service-token.js';
import type { Context, Principal } from '../context.js';
import type { ReadRouting } from '../db/read-routing.js';
import type { SqlReader } from '../db/sql.js';
import { errors, HttpError } from '../errors.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { decide, type KeyRateLimiter, type RateDecision, type WindowSpend } from '../limits/key-rate-limiter.js';
import type { ReadCache } from '../metric/read-cache.js';
import type { UsageCounter } from '../metric/usage.js';
import { firstHeader, sessionCookie } from './headers.js';
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
  /** requests per minute of a service token (SERVICE_TOKEN_RATE_LIMIT_PER_MINUTE) */
  serviceTokenRateLimit: number;
  throttle: ThrottleConfig;
  lastUsed: LastUsedRecorder;
  /** counts the reads of each metric per key (src/metric/usage.ts); absent: not counted */
  usage?: UsageCounter;
  metrics: Metrics;
  /** with read replicas (DATABASE_REPLICA_URLS): where each request's reads go; absent: all on `sql` */
  routing?: ReadRouting;
}

/** The reader of a request's reads: `deps.sql`, or with replicas the request's route (src/db/read-routing.ts). */
export function readerOf(deps: AccessDeps, request: FastifyRequest): SqlReader {
  return deps.routing ? deps.routing.routeOf(request).sql : deps.sql;
}

/**
 * After a write of `orgId` committed (an apply, validations, a key revoked):
 * with replicas, the organization reads from the primary until they have
 * replayed it (src/db/write-marks.ts). The write stands either way: a
 * failure to note it is logged, not answered.
 */
export async function noteOrganizationWrite(deps: AccessDeps, request: FastifyRequest, orgId: string): Promise<void> {
  if (!deps.routing) return;
  await deps.routing
    .noteWrite(orgId)
    .catch((error: unknown) => request.log.warn({ err: error }, 'could not note the write for read-your-writes'));
}

/**
 * `deps` with the request's reader (and, with replicas, its reader of a state the client has seen),
 * for what takes its reader from the deps (a GraphQL context, MCP).
 */
export function readsOf(
  deps: AccessDeps,
  request: FastifyRequest,
): AccessDeps & { readerAtLeast?: Context['readerAtLeast'] } {
  if (!deps.routing) return deps;
  const route = deps.routing.routeOf(request);
  return { ...deps, sql: route.sql, readerAtLeast: (probe) => route.atLeast(probe) };
}

/**
 * With replicas, an authentication read on a replica is read again on the
 * primary when the replica may not have what it needs: a key that it does
 * not know (created a moment ago), or an organization that wrote since the
 * replica last replayed (read-your-writes). Its later reads follow.
 */
async function settleRoute<T>(
  routing: ReadRouting,
  request: FastifyRequest,
  result: AuthResult & { read?: T },
  again: () => Promise<AuthResult & { read?: T }>,
): Promise<AuthResult & { read?: T }> {
  const route = routing.routeOf(request);
  if (!result.ok) {
    if (result.error !== errors.invalidApiKey || !route.onReplica || !route.readFromReplica) return result;
    route.usePrimary();
    return again();
  }
  return (await route.settle(result.principal.org.id)) ? result : again();
}

/** The subject of a key's per-minute window: the key's hash, known before the lookup. */
const keySubject = (keyHash: string) => `key:${keyHash}`;

/** A service token's window: its own, by the token's hash, separate from any key's. */
const tokenSubject = (tokenHash: string) => `token:${tokenHash}`;

function budgetOf(deps: AccessDeps, principal: Principal): [subject: string, limit: number] {
  switch (principal.kind) {
    case 'api_key':
      return [keySubject(principal.keyHash), principal.rateLimitPerMinute ?? deps.defaultRateLimit];
    case 'service_token':
      return [tokenSubject(principal.tokenHash), deps.serviceTokenRateLimit];
    case 'session':
      return [`user:${principal.userId}`, deps.defaultRateLimit];
  }
}

function rateLimitHeaders(reply: FastifyReply, decision: RateDecision): void {
  reply.header('RateLimit-Limit', decision.limit);
  reply.header('RateLimit-Remaining', decision.remaining);
  reply.header('RateLimit-Reset', decision.resetSeconds);
}

function rateLimited(deps: AccessDeps, reply: FastifyReply, limit: 'throttle' | 'key', retryAfterSeconds: number) {
  deps.metrics.rejections.inc({ limit });
  reply.header('Retry-After', retryAfterSeconds);
  return new HttpError(errors.rateLimited);
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
  await deps.rateLimiter.refund(subject, extra);
  deps.metrics.rejections.inc({ limit: 'key' });
  reply.header('Retry-After', decision.retryAfterSeconds);
  return false;
}

/**
 * How a caller is authenticated. `subject` is its rate limit window when it
 * is known before the lookup (an API key's, by its hash): then the
 * pre-verification throttle and the window are spent in one round trip to
 * Redis, and the window's unit is given back if the request is refused before
 * the rate limit check. null: the window is known from the lookup only (a
 * session's is its user's).
 */
interface Credentials<T> {
  subject: string | null;
  /** `spent`: the window as the request left it, when `subject` is known (its read is admitted on it) */
  authenticate(spent: WindowSpend | null): Promise<AuthResult & { read?: T }>;
}

/** An admitted caller, and what a read that travelled with its key lookup found ({@link admitApiKeyWithRead}). */
export interface Admitted<T> {
  principal: Principal;
  /** absent when the read did not run with the lookup: then the route reads as usual */
  read?: T;
}

/**
 * Admission, with the decisions in the order the service interface fixes:
 *
 * 1. The pre-verification throttle: a per-client budget spent before any
 *    key lookup, so guessing keys is slow. It is keyed by the client address
 *    only and runs the same whatever the presented key is, so it reveals
 *    nothing about which keys or prefixes exist; a failed authentication
 *    (401) then costs `failureCost` in all.
 * 2. Authentication (header, format, lookup, revoked, sandbox, scope).
 * 3. One request of the caller's per-minute budget. Every answer carries the
 *    budget left (RateLimit-Limit/-Remaining/-Reset, IETF draft headers);
 *    past it, 429 with Retry-After in whole seconds.
 *
 * Then the key's use is noted.
 */
async function admit<T>(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  credentials: Credentials<T>,
): Promise<Admitted<T>> {
  const client = `client:${request.ip}`;
  const { subject } = credentials;
  const [throttleSpent, early = null] =
    subject === null ? await deps.rateLimiter.spendEach([client]) : await deps.rateLimiter.spendEach([client, subject]);
  const throttle = decide(deps.throttle.pointsPerMinute, throttleSpent);
  const giveBack = () => (subject === null ? undefined : deps.rateLimiter.refund(subject, 1));
  if (!throttle.allowed) {
    await giveBack();
    throw rateLimited(deps, reply, 'throttle', throttle.retryAfterSeconds);
  }
  let result = await credentials.authenticate(early);
  if (deps.routing) result = await settleRoute(deps.routing, request, result, () => credentials.authenticate(early));
  if (!result.ok) {
    const surcharge = deps.throttle.failureCost - 1;
    await Promise.all([
      giveBack(),
      result.error.status === 401 && surcharge > 0 ? deps.rateLimiter.spend(client, surcharge) : undefined,
    ]);
    throw new HttpError(result.error);
  }
  const principal = result.principal;
  notePrincipal(request, principal);
  const [budgetSubject, limit] = budgetOf(deps, principal);
  const decision = decide(limit, early ?? (await deps.rateLimiter.spend(budgetSubject)));
  rateLimitHeaders(reply, decision);
  if (!decision.allowed) throw rateLimited(deps, reply, 'key', decision.retryAfterSeconds);
  if (principal.kind === 'api_key') deps.lastUsed.touch(principal.keyId);
  return result.read === undefined ? { principal } : { principal, read: result.read };
}

/**
 * A bearer API key's credentials: the header's checks first, the lookup by
 * the key's hash, with `read` in the lookup's statement when given.
 */
function bearer<T>(
  deps: AccessDeps,
  request: FastifyRequest,
  scope: RequestedScope,
  read?: ReadWithKey<object, T>,
): Credentials<T> {
  const presented = presentedKey(firstHeader(request, 'authorization'));
  if (!presented.ok) return { subject: null, authenticate: async () => presented };
  const serviceEnv = firstHeader(request, SERVICE_ENV_HEADER);
  return {
    subject: keySubject(presented.keyHash),
    authenticate: (spent) =>
      authenticateApiKey(
        readerOf(deps, request),
        presented.keyHash,
        serviceEnv,
        scope,
        read && spent ? { read, window: { spent: spent.consumed, defaultLimit: deps.defaultRateLimit } } : undefined,
      ),
  };
}

const session = (deps: AccessDeps, token: string | undefined): Credentials<never> => ({
  subject: null,
  authenticate: () => authenticateSession(deps.sql, token),
});

/** Bearer API key with the requested scope, within its rate limit; throws HttpError otherwise. */
export async function admitApiKey(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: RequestedScope,
): Promise<Principal> {
  return (await admit(deps, request, reply, bearer(deps, request, scope))).principal;
}

/**
 * {@link admitApiKey}, with `read` in the key lookup's statement: one round
 * trip to the database for the admission and the route's first read.
 */
export function admitApiKeyWithRead<T>(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: RequestedScope,
  read: ReadWithKey<object, T>,
): Promise<Admitted<T>> {
  return admit(deps, request, reply, bearer(deps, request, scope, read));
}

/** A service token with `scope`, within its own rate limit (the write routes); throws HttpError otherwise. */
export async function admitServiceToken(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: WriteScope,
): Promise<Principal> {
  const presented = presentedServiceToken(firstHeader(request, 'authorization'));
  const credentials: Credentials<never> = presented.ok
    ? {
        subject: tokenSubject(presented.tokenHash),
        authenticate: () => authenticateServiceToken(deps.prisma, presented.tokenHash, scope),
      }
    : { subject: null, authenticate: async () => presented };
  return (await admit(deps, request, reply, credentials)).principal;
}

/** A signed-in session (cookie), throttled and rate-limited per user like a key. */
export async function admitSession(deps: AccessDeps, request: FastifyRequest, reply: FastifyReply): Promise<Principal> {
  return (await admit(deps, request, reply, session(deps, sessionCookie(request)))).principal;
}

/**
 * A signed-in session reading the pages of organization `orgSlug`
 * ({@link authenticatePageSession}), admitted like {@link admitSession}:
 * throttled, then one request of the user's budget. Not signed in: 401
 * `notSignedIn` (a page sends the browser to sign in); not a member: 404.
 */
export async function admitPageSession(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  orgSlug: string,
): Promise<{ principal: Extract<Principal, { kind: 'session' }>; viewer: PageViewerFacts }> {
  const token = sessionCookie(request);
  const credentials: Credentials<PageViewerFacts> = {
    subject: null,
    authenticate: () => authenticatePageSession(deps.sql, token, orgSlug),
  };
  const { principal, read } = await admit(deps, request, reply, credentials);
  if (principal.kind !== 'session' || !read) throw new Error('page admission without a session');
  return { principal, viewer: read };
}

export const ADMIN_ROLES: ReadonlySet<string> = new Set(['owner', 'admin']);

/** A signed-in admin or owner ({@link admitSession}): credential administration and the write routes; 403 otherwise. */
export async function admitAdminSession(
  deps: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Extract<Principal, { kind: 'session' }>> {
  const principal = await admitSession(deps, request, reply);
  if (principal.kind !== 'session' || !ADMIN_ROLES.has(principal.role)) throw new HttpError(errors.forbidden);
  return principal;
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
  const sessionToken = sessionCookie(request);
  const credentials =
    firstHeader(request, 'authorization') === undefined && sessionToken
      ? session(deps, sessionToken)
      : bearer(deps, request, 'metrics:read');
  return (await admit(deps, request, reply, credentials)).principal;
}

/**
 * The pre-verification throttle alone, for what needs no credentials (the
 * pages a person opens and their files): one point of the client address's
 * budget, shared with the admission's, and 429 with Retry-After past it.
 */
export async function throttleClient(deps: AccessDeps, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const [spent] = await deps.rateLimiter.spendEach([`client:${request.ip}`]);
  const throttle = decide(deps.throttle.pointsPerMinute, spent);
  if (!throttle.allowed) throw rateLimited(deps, reply, 'throttle', throttle.retryAfterSeconds);
}

/**
 * A refused sign-in attempt (a used or unknown link, a return from the provider that is not
 * accepted) costs the client what a failed authentication does (THROTTLE_FAILURE_COST), so that
 * guessing at sign-in is throttled like guessing at keys.
 */
export async function chargeFailedAttempt(deps: AccessDeps, request: FastifyRequest): Promise<void> {
  const surcharge = deps.throttle.failureCost - 1;
  if (surcharge > 0) await deps.rateLimiter.spend(`client:${request.ip}`, surcharge);
}
