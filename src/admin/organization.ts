/**
 * Operators name organizations by id or by slug; both resolve here so that
 * every admin command accepts either.
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import { isUuid } from '../uuid.js';
import { AdminError } from './admin-error.js';

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
