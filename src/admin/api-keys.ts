/**
 * API keys as the admin CLI and the HTTP admin routes manage them. The secret
 * exists in clear only in the value createApiKey returns; the database keeps
 * its SHA-256 and prefix. Every creation and revocation writes an
 * `api_key_audit` row in the same transaction as the change.
 */
import { randomUUID } from 'node:crypto';
import { generateApiKey, hashSecret, keyPrefix } from '../auth/secrets.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { isUuid } from '../uuid.js';
import { AdminError } from './admin-error.js';
import { type OrganizationSelector, resolveOrganization } from './organization.js';

/** The scope pair of current keys; new keys get exactly this (contract, section on API keys). */
export const CONTRACT_SCOPES: readonly string[] = ['canonical-metric-api:read', 'definition:read'];

/** The scopes of a new key: the contract pair, given in any order, or nothing for the default. */
export function newKeyScopes(requested: readonly string[] | undefined): string[] {
  if (requested === undefined) return [...CONTRACT_SCOPES];
  const given = new Set(requested);
  if (requested.length !== CONTRACT_SCOPES.length || !CONTRACT_SCOPES.every((scope) => given.has(scope))) {
    throw new AdminError(
      `scopes must be exactly ${CONTRACT_SCOPES.join(' and ')} (got: ${requested.join(', ') || 'none'})`,
    );
  }
  return [...CONTRACT_SCOPES];
}

export interface CreateApiKeyInput {
  /** `{ id }` from HTTP; an id or slug from the CLI (src/admin/organization.ts) */
  org: OrganizationSelector;
  name: string;
  scopes?: readonly string[];
  sandbox?: boolean;
  /** null or absent: the server's RATE_LIMIT_PER_MINUTE */
  rateLimitPerMinute?: number | null;
  /** the signed-in user creating the key; null or absent: the admin CLI */
  actorUserId?: string | null;
}

export interface CreatedApiKey {
  id: string;
  orgId: string;
  orgSlug: string;
  name: string;
  /** the full key: show it once, it is not stored */
  secret: string;
  keyPrefix: string;
  scopes: string[];
  sandbox: boolean;
  rateLimitPerMinute: number | null;
  createdAt: Date;
}

export async function createApiKey(prisma: PrismaClient, input: CreateApiKeyInput): Promise<CreatedApiKey> {
  const name = input.name.trim();
  if (!name) throw new AdminError('a key needs a name');
  const rateLimit = input.rateLimitPerMinute ?? null;
  if (rateLimit !== null && !(Number.isInteger(rateLimit) && rateLimit > 0)) {
    throw new AdminError(`rate limit must be a whole number of requests per minute above 0 (got: ${rateLimit})`);
  }
  const scopes = newKeyScopes(input.scopes);
  const organization = await resolveOrganization(prisma, input.org);
  const secret = generateApiKey();
  const actorUserId = input.actorUserId ?? null;
  const key = await prisma.$transaction(async (tx) => {
    const created = await tx.apiKey.create({
      data: {
        id: randomUUID(),
        orgId: organization.id,
        name,
        keyHash: hashSecret(secret),
        keyPrefix: keyPrefix(secret),
        scopes,
        sandbox: input.sandbox ?? false,
        rateLimitPerMinute: rateLimit,
        createdByUserId: actorUserId,
      },
    });
    await tx.apiKeyAudit.create({
      data: { orgId: organization.id, apiKeyId: created.id, action: 'created', actorUserId },
    });
    return created;
  });
  return {
    id: key.id,
    orgId: organization.id,
    orgSlug: organization.slug,
    name: key.name,
    secret,
    keyPrefix: key.keyPrefix,
    scopes: key.scopes,
    sandbox: key.sandbox,
    rateLimitPerMinute: key.rateLimitPerMinute,
    createdAt: key.createdAt,
  };
}

export interface ApiKeySummary {
  id: string;
  name: string;
  keyPrefix: string;
  scopes: string[];
  sandbox: boolean;
  rateLimitPerMinute: number | null;
  createdAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

/**
 * The organization's keys, oldest first unless `order` is 'newest' (the HTTP
 * listing); never a secret (only the hash is stored anyway).
 */
export async function listApiKeys(
  prisma: PrismaClient,
  input: { org: OrganizationSelector; order?: 'oldest' | 'newest' },
): Promise<ApiKeySummary[]> {
  const organization = await resolveOrganization(prisma, input.org);
  const direction = input.order === 'newest' ? 'desc' : 'asc';
  return prisma.apiKey.findMany({
    where: { orgId: organization.id },
    orderBy: [{ createdAt: direction }, { id: direction }],
    select: {
      id: true,
      name: true,
      keyPrefix: true,
      scopes: true,
      sandbox: true,
      rateLimitPerMinute: true,
      createdAt: true,
      revokedAt: true,
      lastUsedAt: true,
    },
  });
}

export interface RevokedApiKey {
  id: string;
  revokedAt: Date;
  /** true when the key was revoked before: revokedAt is then the original time */
  alreadyRevoked: boolean;
}

/** No key with this id in the organization (unknown, of another organization, or not a uuid). */
export class ApiKeyNotFoundError extends AdminError {}

/**
 * Revokes a key of the organization; revoking again keeps the first revokedAt
 * and writes no second audit row. `actorUserId`: the signed-in user, or
 * null/absent for the admin CLI.
 */
export async function revokeApiKey(
  prisma: PrismaClient,
  input: { org: OrganizationSelector; id: string; actorUserId?: string | null },
): Promise<RevokedApiKey> {
  const organization = await resolveOrganization(prisma, input.org);
  const notFound = new ApiKeyNotFoundError(`API key not found in organization ${organization.slug}: ${input.id}`);
  if (!isUuid(input.id)) throw notFound;
  const where = { id: input.id.toLowerCase(), orgId: organization.id };
  return prisma.$transaction(async (tx) => {
    // Conditional update: of two concurrent revocations only one sets the time (and is audited).
    const { count } = await tx.apiKey.updateMany({
      where: { ...where, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    if (count === 1) {
      await tx.apiKeyAudit.create({
        data: { orgId: organization.id, apiKeyId: where.id, action: 'revoked', actorUserId: input.actorUserId ?? null },
      });
    }
    const key = await tx.apiKey.findFirst({ where, select: { id: true, revokedAt: true } });
    if (!key?.revokedAt) throw notFound;
    return { id: key.id, revokedAt: key.revokedAt, alreadyRevoked: count === 0 };
  });
}
