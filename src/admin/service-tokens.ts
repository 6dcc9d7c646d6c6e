/**
 * Service tokens for automation (CI applying the registry, posting validation
 * evidence), managed like API keys by the admin CLI and the signed-in admins'
 * routes: the secret exists in clear only in what createServiceToken returns,
 * and every creation and revocation is audited in the same transaction.
 */
import { randomUUID } from 'node:crypto';
import { generateServiceToken, hashSecret } from '../auth/secrets.js';
import { WRITE_SCOPES, type WriteScope } from '../auth/service-token.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { isUuid } from '../uuid.js';
import { AdminError } from './admin-error.js';
import { type OrganizationSelector, resolveOrganization } from './organization.js';

/** Characters of a token kept in clear for display (`cls_` + 8 hex). */
const TOKEN_PREFIX_LENGTH = 12;

/** The scopes of a new token: one or more write scopes, each once. */
export function serviceTokenScopes(requested: readonly string[]): WriteScope[] {
  const unknown = requested.filter((scope) => !WRITE_SCOPES.includes(scope as WriteScope));
  if (requested.length === 0 || unknown.length > 0) {
    throw new AdminError(
      `scopes must be one or more of ${WRITE_SCOPES.join(', ')} (got: ${requested.join(', ') || 'none'})`,
    );
  }
  return WRITE_SCOPES.filter((scope) => requested.includes(scope));
}

export interface ServiceTokenSummary {
  id: string;
  name: string;
  tokenPrefix: string;
  scopes: string[];
  createdAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

export interface CreatedServiceToken extends ServiceTokenSummary {
  orgSlug: string;
  /** the full token: show it once, it is not stored */
  secret: string;
}

export async function createServiceToken(
  prisma: PrismaClient,
  input: { org: OrganizationSelector; name: string; scopes: readonly string[]; actorUserId?: string | null },
): Promise<CreatedServiceToken> {
  const name = input.name.trim();
  if (!name) throw new AdminError('a token needs a name');
  const scopes = serviceTokenScopes(input.scopes);
  const organization = await resolveOrganization(prisma, input.org);
  const secret = generateServiceToken();
  const actorUserId = input.actorUserId ?? null;
  const token = await prisma.$transaction(async (tx) => {
    const created = await tx.serviceToken.create({
      data: {
        id: randomUUID(),
        orgId: organization.id,
        name,
        tokenHash: hashSecret(secret),
        tokenPrefix: secret.slice(0, TOKEN_PREFIX_LENGTH),
        scopes,
        createdByUserId: actorUserId,
      },
    });
    await tx.serviceTokenAudit.create({
      data: { orgId: organization.id, serviceTokenId: created.id, action: 'created', actorUserId },
    });
    return created;
  });
  return {
    id: token.id,
    name: token.name,
    tokenPrefix: token.tokenPrefix,
    scopes: token.scopes,
    createdAt: token.createdAt,
    revokedAt: null,
    lastUsedAt: null,
    orgSlug: organization.slug,
    secret,
  };
}

/** The organization's tokens, newest first; never a secret. */
export async function listServiceTokens(
  prisma: PrismaClient,
  input: { org: OrganizationSelector },
): Promise<ServiceTokenSummary[]> {
  const organization = await resolveOrganization(prisma, input.org);
  return prisma.serviceToken.findMany({
    where: { orgId: organization.id },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    select: {
      id: true,
      name: true,
      tokenPrefix: true,
      scopes: true,
      createdAt: true,
      revokedAt: true,
      lastUsedAt: true,
    },
  });
}

/** No token with this id in the organization (unknown, of another organization, or not a uuid). */
export class ServiceTokenNotFoundError extends AdminError {}

/** Revokes a token; revoking again keeps the first time and writes no second audit row. */
export async function revokeServiceToken(
  prisma: PrismaClient,
  input: { org: OrganizationSelector; id: string; actorUserId?: string | null },
): Promise<{ id: string; revokedAt: Date; alreadyRevoked: boolean }> {
  const organization = await resolveOrganization(prisma, input.org);
  const notFound = new ServiceTokenNotFoundError(
    `service token not found in organization ${organization.slug}: ${input.id}`,
  );
  if (!isUuid(input.id)) throw notFound;
  const where = { id: input.id.toLowerCase(), orgId: organization.id };
  return prisma.$transaction(async (tx) => {
    const { count } = await tx.serviceToken.updateMany({
      where: { ...where, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    if (count === 1) {
      await tx.serviceTokenAudit.create({
        data: {
          orgId: organization.id,
          serviceTokenId: where.id,
          action: 'revoked',
          actorUserId: input.actorUserId ?? null,
        },
      });
    }
    const token = await tx.serviceToken.findFirst({ where, select: { id: true, revokedAt: true } });
    if (!token?.revokedAt) throw notFound;
    return { id: token.id, revokedAt: token.revokedAt, alreadyRevoked: count === 0 };
  });
}
