/**
 * Which organization an admin operation acts on. The HTTP routes pass the
 * signed-in session's organization by id (`{ id }`), never anything a request
 * names. Operators (the CLI's --org) name one by id or by slug: a UUID-shaped
 * value is an id, anything else a slug. That is unambiguous because no slug
 * may be shaped like a UUID (fixture validation and the
 * `organization_slug_not_uuid` check constraint).
 */
import { randomUUID } from 'node:crypto';
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

export const ORGANIZATION_PLANS = ['developer', 'starter', 'team', 'enterprise', 'design_partner'] as const;
export type OrganizationPlan = (typeof ORGANIZATION_PLANS)[number];

/** The rule of the fixture format and of the `organization_slug_not_uuid` constraint. */
const SLUG_PATTERN = /^[a-z0-9-]{1,63}$/;

/**
 * The first path segments of the service's own routes: an organization's pages live at `/{slug}`, so
 * a slug cannot be one of them (its pages would be unreachable behind the route of the same name).
 */
export const RESERVED_SLUGS: ReadonlySet<string> = new Set([
  'api',
  'assets',
  'docs',
  'graphiql',
  'graphql',
  'healthz',
  'mcp',
  'readyz',
  'sign-in',
  'sign-out',
]);

/** Whether `path` (one segment of a URL) can name an organization: its pages never answer for any other. */
export const isOrganizationSlug = (path: string): boolean => SLUG_PATTERN.test(path) && !RESERVED_SLUGS.has(path);

export interface CreateOrganizationInput {
  slug: string;
  name: string;
  plan?: OrganizationPlan;
}

/** A new organization with a generated id; AdminError when the slug is malformed or taken. */
export async function createOrganization(
  prisma: PrismaClient,
  input: CreateOrganizationInput,
): Promise<OrganizationRef & { plan: OrganizationPlan }> {
  const slug = input.slug.trim();
  const name = input.name.trim();
  if (!SLUG_PATTERN.test(slug) || isUuid(slug)) {
    throw new AdminError(
      `a slug is 1 to 63 lowercase letters, digits and dashes, not shaped like a UUID (got: ${JSON.stringify(input.slug)})`,
    );
  }
  if (RESERVED_SLUGS.has(slug)) {
    throw new AdminError(`${slug} is a path of the service itself: choose another slug`);
  }
  if (!name) throw new AdminError('an organization needs a name');
  const plan = input.plan ?? 'team';
  if (!ORGANIZATION_PLANS.includes(plan)) {
    throw new AdminError(`plan must be one of ${ORGANIZATION_PLANS.join(', ')} (got: ${plan})`);
  }
  const created = await prisma.organization.createMany({
    data: [{ id: randomUUID(), slug, name, plan }],
    skipDuplicates: true,
  });
  if (created.count === 0) throw new AdminError(`organization ${slug} already exists`);
  const organization = await resolveOrganization(prisma, slug);
  return { ...organization, plan };
}
