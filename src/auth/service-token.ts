/**
 * Service-token authentication for the write routes (registry applies,
 * validation evidence, discussions; `discussions:write` also on /graphql,
 * src/schema/service-token-access.ts). The checks and their messages are the
 * read routes': header, format, lookup by SHA-256, revoked, scope. A read API key has
 * another format, so it fails here at the format check, as a service token
 * does on the read routes.
 */
import { type ErrorResponse, errors } from '../errors.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { type AuthResult, BEARER, organizationSelect } from './authenticate.js';
import { hashSecret, SERVICE_TOKEN_PATTERN } from './secrets.js';

export const WRITE_SCOPES = ['registry:write', 'validations:write', 'discussions:write'] as const;
export type WriteScope = (typeof WRITE_SCOPES)[number];

export type PresentedToken = { ok: true; tokenHash: string } | { ok: false; error: ErrorResponse };

/** Header and format: the checks before any lookup. */
export function presentedServiceToken(authorization: string | undefined): PresentedToken {
  if (authorization === undefined || authorization === '') {
    return { ok: false, error: errors.missingAuthorization };
  }
  const secret = BEARER.exec(authorization)?.[1];
  if (!secret) return { ok: false, error: errors.invalidAuthorizationFormat };
  if (!SERVICE_TOKEN_PATTERN.test(secret)) return { ok: false, error: errors.invalidApiKeyFormat };
  return { ok: true, tokenHash: hashSecret(secret) };
}

export async function authenticateServiceToken(
  prisma: PrismaClient,
  tokenHash: string,
  scope: WriteScope,
): Promise<AuthResult> {
  const token = await prisma.serviceToken.findUnique({
    where: { tokenHash },
    select: { id: true, scopes: true, revokedAt: true, organization: { select: organizationSelect } },
  });
  if (!token) return { ok: false, error: errors.invalidApiKey };
  if (token.revokedAt) return { ok: false, error: errors.revokedApiKey };
  if (!token.scopes.includes(scope)) return { ok: false, error: errors.insufficientScope };
  // Writes are rare: the time of use is kept on each, with no batching.
  await prisma.serviceToken.update({ where: { id: token.id }, data: { lastUsedAt: new Date() } });
  return {
    ok: true,
    principal: {
      kind: 'service_token',
      tokenId: token.id,
      tokenHash,
      scopes: token.scopes,
      org: { ...token.organization, metricsVersion: String(token.organization.metricsVersion) },
    },
  };
}
