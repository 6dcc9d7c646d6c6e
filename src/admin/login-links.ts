/**
 * One-time sign-in links (docs/sign-in.md): an operator's `login:link`, or
 * the demo's start banner, makes a link that signs one member into one
 * organization once, within {@link LOGIN_LINK_TTL_MINUTES} minutes. The
 * token is 256 bits of CSPRNG output and only its SHA-256 is stored, so the
 * table signs no one in and a lookup by digest leaks nothing about a token
 * through its timing (an attacker cannot choose inputs that hash near a
 * stored digest).
 */
import { generateSessionToken, hashSecret } from '../auth/secrets.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { AdminError } from './admin-error.js';
import { type OrganizationSelector, resolveOrganization } from './organization.js';

export const LOGIN_LINK_TTL_MINUTES = 15;

/** Where a link is opened; its token travels in the query string. */
export const LOGIN_LINK_PATH = '/sign-in/link';

export interface CreateLoginLinkInput {
  org: OrganizationSelector;
  email: string;
  /** a path of this service to land on (already checked by the caller); default: the organization's home */
  next?: string | null;
  /** PUBLIC_APP_URL: the link's origin */
  publicAppUrl: string;
}

export interface CreatedLoginLink {
  url: string;
  email: string;
  orgSlug: string;
  expiresAt: Date;
}

export async function createLoginLink(prisma: PrismaClient, input: CreateLoginLinkInput): Promise<CreatedLoginLink> {
  const organization = await resolveOrganization(prisma, input.org);
  const email = input.email.trim();
  const membership = await prisma.membership.findFirst({
    where: { orgId: organization.id, user: { email } },
    select: { userId: true },
  });
  if (!membership) {
    throw new AdminError(`${email} is not a member of organization ${organization.slug} (add them with user:add)`);
  }
  // The same 256-bit shape as a session token: base64url, so it needs no escaping in a URL.
  const token = generateSessionToken();
  const link = await prisma.loginLink.create({
    data: {
      tokenHash: hashSecret(token),
      userId: membership.userId,
      orgId: organization.id,
      next: input.next ?? null,
      expiresAt: new Date(Date.now() + LOGIN_LINK_TTL_MINUTES * 60_000),
    },
    select: { expiresAt: true },
  });
  const url = new URL(LOGIN_LINK_PATH, input.publicAppUrl);
  url.searchParams.set('token', token);
  return { url: url.href, email, orgSlug: organization.slug, expiresAt: link.expiresAt };
}

export interface ConsumedLoginLink {
  userId: string;
  orgId: string;
  next: string | null;
}

/**
 * Uses the link of `token` up: one statement sets `used_at` only while it is
 * unset and the link unexpired and its user still a member, so of two
 * concurrent visits exactly one gets the link. Null: unknown, used, expired,
 * or no longer a member (nothing is changed then).
 */
export async function consumeLoginLink(prisma: PrismaClient, token: string): Promise<ConsumedLoginLink | null> {
  const rows = await prisma.$queryRaw<{ user_id: string; org_id: string; next: string | null }[]>`
    UPDATE login_link AS l SET used_at = now()
    WHERE l.token_hash = ${hashSecret(token)} AND l.used_at IS NULL AND l.expires_at > now()
      AND EXISTS (SELECT 1 FROM membership AS m WHERE m.org_id = l.org_id AND m.user_id = l.user_id)
    RETURNING l.user_id, l.org_id, l.next`;
  const [row] = rows;
  return row ? { userId: row.user_id, orgId: row.org_id, next: row.next } : null;
}
