/**
 * Bearer-key and session authentication. Checks run in the order the
 * service interface fixes: header and key format, key lookup (by SHA-256,
 * never compared in clear), revoked, sandbox header, scope.
 */
import type { OrganizationInfo, Principal } from '../context.js';
import { type ErrorResponse, errors } from '../errors.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { type RequestedScope, scopeSatisfied } from './scopes.js';
import { API_KEY_PATTERN, hashSecret } from './secrets.js';

export type AuthResult = { ok: true; principal: Principal } | { ok: false; error: ErrorResponse };

const BEARER = /^Bearer ([^\s]+)$/i;
export const SERVICE_ENV_HEADER = 'x-service-env';

const organizationSelect = {
  id: true,
  slug: true,
  plan: true,
  pricingState: true,
  fiscalCalendarStartMonth: true,
  summaryDailyCap: true,
} as const;

export async function authenticateApiKey(
  prisma: PrismaClient,
  request: { authorization: string | undefined; serviceEnv: string | undefined },
  requested: RequestedScope,
): Promise<AuthResult> {
  const { authorization } = request;
  if (authorization === undefined || authorization === '') return { ok: false, error: errors.missingAuthorization };
  const match = BEARER.exec(authorization);
  if (!match?.[1]) return { ok: false, error: errors.invalidAuthorizationFormat };
  const secret = match[1];
  if (!API_KEY_PATTERN.test(secret)) return { ok: false, error: errors.invalidApiKeyFormat };
  const key = await prisma.apiKey.findUnique({
    where: { keyHash: hashSecret(secret) },
    select: {
      id: true,
      scopes: true,
      sandbox: true,
      revokedAt: true,
      rateLimitPerMinute: true,
      organization: { select: organizationSelect },
    },
  });
  if (!key) return { ok: false, error: errors.invalidApiKey };
  if (key.revokedAt) return { ok: false, error: errors.revokedApiKey };
  if (key.sandbox && request.serviceEnv !== 'sandbox') return { ok: false, error: errors.sandboxKeyRequiresSandbox };
  if (!scopeSatisfied(key.scopes, requested)) return { ok: false, error: errors.insufficientScope };
  return {
    ok: true,
    principal: {
      kind: 'api_key',
      keyId: key.id,
      scopes: key.scopes,
      rateLimitPerMinute: key.rateLimitPerMinute,
      org: key.organization satisfies OrganizationInfo,
    },
  };
}

/** A signed-in session (cookie `session=<token>`) whose user belongs to its active organization. */
export async function authenticateSession(prisma: PrismaClient, token: string | undefined): Promise<AuthResult> {
  if (!token) return { ok: false, error: errors.notSignedIn };
  const session = await prisma.session.findUnique({
    where: { tokenHash: hashSecret(token) },
    select: {
      userId: true,
      orgId: true,
      expiresAt: true,
      organization: { select: organizationSelect },
      user: { select: { memberships: { select: { orgId: true, role: true } } } },
    },
  });
  if (!session || session.expiresAt.getTime() <= Date.now()) return { ok: false, error: errors.notSignedIn };
  const membership = session.user.memberships.find((m) => m.orgId === session.orgId);
  if (!membership) return { ok: false, error: errors.notSignedIn };
  return {
    ok: true,
    principal: { kind: 'session', userId: session.userId, role: membership.role, org: session.organization },
  };
}
