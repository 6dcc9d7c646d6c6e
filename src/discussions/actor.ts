/**
 * Who writes a discussion, and what their role lets them do
 * (docs/discussions.md, "Roles"): a viewer reads only; a member opens
 * threads and challenges, replies, edits and deletes their own messages and
 * resolves or reopens their own threads; an admin or owner does all that to
 * anyone's, pins and unpins notes and decides challenges. A service token
 * with `discussions:write` (a bot) writes as a member, its own things being
 * those it wrote. An API key reads only.
 */
import type { Principal } from '../context.js';
import { errors, HttpError } from '../errors.js';
import type { Role } from '../generated/prisma/enums.js';

export type Actor = { kind: 'user'; userId: string; role: Role } | { kind: 'service_token'; tokenId: string };

/** The columns that say who wrote (or resolved, or raised) something. */
export interface AuthorColumns {
  userId: string | null;
  tokenId: string | null;
}

/** The writer a principal is; 403 for an API key. */
export function actorOf(principal: Principal): Actor {
  switch (principal.kind) {
    case 'session':
      return { kind: 'user', userId: principal.userId, role: principal.role };
    case 'service_token':
      return { kind: 'service_token', tokenId: principal.tokenId };
    case 'api_key':
      throw new HttpError(errors.readOnlyApiKey);
  }
}

/** Threads and challenges are read by members (any role) and bots; 403 for an API key. */
export function requireDiscussionReader(principal: Principal): void {
  if (principal.kind === 'api_key') throw new HttpError(errors.threadsNotForApiKeys);
}

export const isAdmin = (actor: Actor): boolean =>
  actor.kind === 'user' && (actor.role === 'owner' || actor.role === 'admin');

/** A write any member may make: 403 for a viewer. */
export function requireMember(actor: Actor): void {
  if (actor.kind === 'user' && actor.role === 'viewer') throw new HttpError(errors.forbidden);
}

/** Pins and decisions: 403 unless an admin or owner. */
export function requireAdmin(actor: Actor): void {
  if (!isAdmin(actor)) throw new HttpError(errors.forbidden);
}

/** Whether `actor` wrote what `by` names. */
export function isAuthor(actor: Actor, by: AuthorColumns): boolean {
  return actor.kind === 'user' ? by.userId === actor.userId : by.tokenId === actor.tokenId;
}

/** The author's own, or an admin: 403 otherwise. */
export function requireAuthorOrAdmin(actor: Actor, by: AuthorColumns): void {
  if (!isAuthor(actor, by) && !isAdmin(actor)) throw new HttpError(errors.forbidden);
}

/** The columns recording `actor` as who did something. */
export function authorColumns(actor: Actor): AuthorColumns {
  return actor.kind === 'user' ? { userId: actor.userId, tokenId: null } : { userId: null, tokenId: actor.tokenId };
}
