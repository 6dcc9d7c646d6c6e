/**
 * Members of an organization, added by an operator (the CLI's user:add): the
 * first owner of a new organization comes from here, with no fixture.
 */
import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '../generated/prisma/client.js';
import { Role } from '../generated/prisma/enums.js';
import { AdminError } from './admin-error.js';
import { type OrganizationSelector, resolveOrganization } from './organization.js';

export const ROLES = Object.values(Role);

/** Enough for real addresses; a sanity check, not a validation of deliverability. */
const EMAIL_PATTERN = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export interface AddUserInput {
  org: OrganizationSelector;
  email: string;
  name: string;
  role: string;
}

export interface AddedUser {
  userId: string;
  email: string;
  orgSlug: string;
  role: Role;
  /** the user did not exist before */
  newUser: boolean;
  /** the user was a member already, with this role (null: a new member) */
  previousRole: Role | null;
}

/**
 * Adds a member with `role`, creating the user when the email is new (an
 * existing user keeps the name they have). A member already there gets the
 * role given: running the same command twice changes nothing.
 */
export async function addUser(prisma: PrismaClient, input: AddUserInput): Promise<AddedUser> {
  const email = input.email.trim();
  const name = input.name.trim();
  if (!EMAIL_PATTERN.test(email)) throw new AdminError(`not an email address: ${JSON.stringify(input.email)}`);
  if (!name) throw new AdminError('a user needs a name');
  if (!ROLES.includes(input.role as Role)) {
    throw new AdminError(`role must be one of ${ROLES.join(', ')} (got: ${input.role})`);
  }
  const role = input.role as Role;
  const organization = await resolveOrganization(prisma, input.org);
  return prisma.$transaction(async (tx) => {
    const created = await tx.user.createMany({
      data: [{ id: randomUUID(), email, displayName: name }],
      skipDuplicates: true,
    });
    const user = await tx.user.findUniqueOrThrow({ where: { email }, select: { id: true } });
    const key = { orgId_userId: { orgId: organization.id, userId: user.id } };
    const existing = await tx.membership.findUnique({ where: key, select: { role: true } });
    await tx.membership.upsert({
      where: key,
      create: { orgId: organization.id, userId: user.id, role },
      update: { role },
    });
    return {
      userId: user.id,
      email,
      orgSlug: organization.slug,
      role,
      newUser: created.count === 1,
      previousRole: existing?.role ?? null,
    };
  });
}
