/**
 * Operators name organizations by id or by slug; both resolve here so that
 * every admin command accepts either.
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import { AdminError } from './admin-error.js';

/** Any 8-4-4-4-12 hex string: what PostgreSQL's uuid type accepts, so a lookup by it cannot fail on the cast. */
const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_SHAPE.test(value);
}

export interface OrganizationRef {
  id: string;
  slug: string;
  name: string;
}

/** The organization with this id or slug; AdminError when there is none. */
export async function resolveOrganization(prisma: PrismaClient, idOrSlug: string): Promise<OrganizationRef> {
  const select = { id: true, slug: true, name: true } as const;
  // A slug may itself look like a uuid ([a-z0-9-]+), so a uuid-shaped value is tried as both.
  const organization = await prisma.organization.findFirst({
    where: isUuid(idOrSlug) ? { OR: [{ id: idOrSlug.toLowerCase() }, { slug: idOrSlug }] } : { slug: idOrSlug },
    select,
  });
  if (!organization) throw new AdminError(`organization not found: ${idOrSlug}`);
  return organization;
}
