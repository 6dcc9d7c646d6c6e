/**
 * Signed-in sessions made by an operator, for scripts and support: the token
 * is returned once and stored as its SHA-256, like a browser sign-in's.
 */
import { generateSessionToken, hashSecret } from '../auth/secrets.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { isUuid } from '../uuid.js';
import { AdminError } from './admin-error.js';
import { type OrganizationSelector, resolveOrganization } from './organization.js';

export const DEFAULT_SESSION_TTL_HOURS = 24 * 30;

/** A browser's sign-in (a provider's or a one-time link's) lasts a working day: shorter than an operator's session. */
export const SIGN_IN_SESSION_TTL_HOURS = 12;

export interface CreateSessionInput {
  /** user id or email */
  user: string;
  /** the session's active organization: an id or slug (src/admin/organization.ts) */
  org: OrganizationSelector;
  ttlHours?: number;
}

export interface CreatedSession {
  id: string;
  /** the cookie value (`session=<token>`): show it once, it is not stored */
  token: string;
  userId: string;
  email: string;
  orgId: string;
  orgSlug: string;
  role: string;
  expiresAt: Date;
}

export async function createSession(prisma: PrismaClient, input: CreateSessionInput): Promise<CreatedSession> {
  const ttlHours = input.ttlHours ?? DEFAULT_SESSION_TTL_HOURS;
  if (!(Number.isFinite(ttlHours) && ttlHours > 0)) {
    throw new AdminError(`ttl must be a number of hours above 0 (got: ${ttlHours})`);
  }
  const organization = await resolveOrganization(prisma, input.org);
  const user = await prisma.user.findFirst({
    where: isUuid(input.user) ? { id: input.user.toLowerCase() } : { email: input.user },
    select: { id: true, email: true },
  });
  if (!user) throw new AdminError(`user not found: ${input.user}`);
  const membership = await prisma.membership.findUnique({
    where: { orgId_userId: { orgId: organization.id, userId: user.id } },
    select: { role: true },
  });
  if (!membership) throw new AdminError(`user ${user.email} is not a member of organization ${organization.slug}`);
  const token = generateSessionToken();
  const session = await prisma.session.create({
    data: {
      tokenHash: hashSecret(token),
      userId: user.id,
      orgId: organization.id,
      expiresAt: new Date(Date.now() + ttlHours * 60 * 60 * 1000),
    },
  });
  return {
    id: session.id,
    token,
    userId: user.id,
    email: user.email,
    orgId: organization.id,
    orgSlug: organization.slug,
    role: membership.role,
    expiresAt: session.expiresAt,
  };
}

export type RevokeSessionsInput =
  /** one session, by its token (as printed, with or without the `session=` prefix) */
  | { token: string }
  /** every session of a user whose active organization is this one */
  | { user: string; org: OrganizationSelector };

export interface RevokedSessions {
  count: number;
  /** for the message: the user's email and organization slug when revoked by user */
  email?: string;
  orgSlug?: string;
}

/**
 * Revokes sessions by deleting them: a revoked token is then exactly an
 * unknown one, the same 401 `Not signed in` on every instance at the next
 * request (sessions are not cached). An unknown token is an AdminError.
 */
export async function revokeSessions(prisma: PrismaClient, input: RevokeSessionsInput): Promise<RevokedSessions> {
  if ('token' in input) {
    const token = input.token.trim().replace(/^session=/, '');
    if (!token) throw new AdminError('a session token is required');
    const { count } = await prisma.session.deleteMany({ where: { tokenHash: hashSecret(token) } });
    if (count === 0) throw new AdminError('no session with this token (revoked already, or never issued)');
    return { count };
  }
  const organization = await resolveOrganization(prisma, input.org);
  const user = await prisma.user.findFirst({
    where: isUuid(input.user) ? { id: input.user.toLowerCase() } : { email: input.user },
    select: { id: true, email: true },
  });
  if (!user) throw new AdminError(`user not found: ${input.user}`);
  const { count } = await prisma.session.deleteMany({ where: { userId: user.id, orgId: organization.id } });
  return { count, email: user.email, orgSlug: organization.slug };
}
