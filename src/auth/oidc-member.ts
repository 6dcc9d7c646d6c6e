/**
 * Who a provider's verified email signs in as: the user with that email
 * (operators add them with `user:add`), acting in the organization of the
 * page they asked for when they are a member there, else in their first
 * organization by slug.
 */
import type { PrismaClient } from '../generated/prisma/client.js';

export interface SignInMember {
  userId: string;
  orgId: string;
  orgSlug: string;
}

/** The organization slug a page path starts with (`/acme/metrics/x` → `acme`), if any. */
function orgSlugOf(next: string | null): string | null {
  const segment = next?.split(/[/?#]/)[1];
  if (!segment) return null;
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

export async function memberByEmail(
  prisma: PrismaClient,
  email: string,
  next: string | null,
): Promise<SignInMember | null> {
  // Exact first; otherwise the one user whose address differs only in case (providers and operators
  // do not always agree on it). Two such users: neither, since it is unclear which one this is.
  const select = {
    id: true,
    memberships: { select: { orgId: true, organization: { select: { slug: true } } } },
  } as const;
  const exact = await prisma.user.findUnique({ where: { email }, select });
  const candidates = exact
    ? [exact]
    : await prisma.user.findMany({ where: { email: { equals: email, mode: 'insensitive' } }, select, take: 2 });
  const [user] = candidates;
  if (!user || candidates.length > 1 || user.memberships.length === 0) return null;
  const memberships = user.memberships
    .map((m) => ({ orgId: m.orgId, orgSlug: m.organization.slug }))
    .sort((a, b) => a.orgSlug.localeCompare(b.orgSlug));
  const wanted = orgSlugOf(next);
  const chosen = memberships.find((m) => m.orgSlug === wanted) ?? memberships[0];
  return chosen ? { userId: user.id, ...chosen } : null;
}
