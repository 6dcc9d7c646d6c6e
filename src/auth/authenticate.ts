/**
 * Bearer-key and session authentication. Checks run in the order the
 * service interface fixes: header and key format, key lookup (by SHA-256,
 * never compared in clear), revoked, sandbox header, scope.
 */

import { sql as rawSql } from 'kysely';
import type { Principal } from '../context.js';
import { db, ShapeCache } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
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
  metricsVersion: true,
} as const;

/** The key with its organization, by the hash of the secret. */
const keyLookupQuery = ({ keyHash }: { keyHash: string }) =>
  db
    .selectFrom('apiKey as k')
    .innerJoin('organization as o', 'o.id', 'k.orgId')
    .select([
      'k.id',
      'k.scopes',
      'k.sandbox',
      'k.revokedAt',
      'k.rateLimitPerMinute',
      'o.id as orgId',
      'o.slug',
      'o.plan',
      'o.pricingState',
      'o.fiscalCalendarStartMonth',
      'o.summaryDailyCap',
      // A bigint: as text, as OrganizationInfo carries it.
      rawSql<string>`o.metrics_version::text`.as('metricsVersion'),
    ])
    .where('k.keyHash', '=', keyHash);

const keyLookup = new ShapeCache<{ keyHash: string }>();

/** The key a bearer header presents, by its hash (the lookup's and the key budget's subject). */
export type PresentedKey = { ok: true; keyHash: string } | { ok: false; error: ErrorResponse };

/** Authorization header and key format, the checks before any lookup. */
export function presentedKey(authorization: string | undefined): PresentedKey {
  if (authorization === undefined || authorization === '') return { ok: false, error: errors.missingAuthorization };
  const match = BEARER.exec(authorization);
  if (!match?.[1]) return { ok: false, error: errors.invalidAuthorizationFormat };
  const secret = match[1];
  if (!API_KEY_PATTERN.test(secret)) return { ok: false, error: errors.invalidApiKeyFormat };
  return { ok: true, keyHash: hashSecret(secret) };
}

/** Key lookup, revoked, sandbox header and scope, for a key of the right format ({@link presentedKey}). */
export async function authenticateApiKey(
  sql: SqlReader,
  keyHash: string,
  serviceEnv: string | undefined,
  requested: RequestedScope,
): Promise<AuthResult> {
  // On the SQL reader: this runs on every request (src/db/sql.ts says why), compiled once.
  const [key] = await sql.query(keyLookup.statement('key', { keyHash }, keyLookupQuery));
  if (!key) return { ok: false, error: errors.invalidApiKey };
  if (key.revokedAt) return { ok: false, error: errors.revokedApiKey };
  if (key.sandbox && serviceEnv !== 'sandbox') return { ok: false, error: errors.sandboxKeyRequiresSandbox };
  if (!scopeSatisfied(key.scopes, requested)) return { ok: false, error: errors.insufficientScope };
  return {
    ok: true,
    principal: {
      kind: 'api_key',
      keyId: key.id,
      keyHash,
      scopes: key.scopes,
      rateLimitPerMinute: key.rateLimitPerMinute,
      org: {
        id: key.orgId,
        slug: key.slug,
        plan: key.plan,
        pricingState: key.pricingState,
        fiscalCalendarStartMonth: key.fiscalCalendarStartMonth,
        summaryDailyCap: key.summaryDailyCap,
        metricsVersion: key.metricsVersion,
      },
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
    principal: {
      kind: 'session',
      userId: session.userId,
      role: membership.role,
      org: { ...session.organization, metricsVersion: String(session.organization.metricsVersion) },
    },
  };
}
