/**
 * Which organization an admin operation acts on. The HTTP routes pass the
 * signed-in session's organization by id (`{ id }`), never anything a request
 * names. Operators (the CLI's --org) name one by id or by slug: a UUID-shaped
 * value is an id, anything else a slug. That is unambiguous because no slug
 * may be shaped like a UUID (fixture validation and the
 * `organization_slug_not_uuid` check constraint).
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import { isUuid } from '../uuid.js';
import { AdminError } from './admin-error.js';

export interface OrganizationRef {
  id: string;
  slug: string;
  name: string;
}

/** `{ id }`: by id only (HTTP). A string: an operator's id or slug (CLI). */
export type OrganizationSelector = { id: string } | string;

/** The organization selected; AdminError when there is none. */
export async function resolveOrganization(
  prisma: PrismaClient,
  selector: OrganizationSelector,
): Promise<OrganizationRef> {
  const select = { id: true, slug: true, name: true } as const;
  const named = typeof selector === 'string' ? selector : selector.id;
  const byId = typeof selector !== 'string' || isUuid(selector);
  const organization =
    byId && !isUuid(named)
      ? null
      : await prisma.organization.findUnique({
          where: byId ? { id: named.toLowerCase() } : { slug: named },
          select,
        });
  if (!organization) throw new AdminError(`organization not found: ${named}`);
  return organization;
}
