/**
 * The fields the contract route serves (agent context notes, the trust
 * verdict, the discussion summary) need on /graphql what that route needs
 * (`canonical-metric-api:read`, see Context.contractFields): a key that may
 * not read the contract does not read its parts one field at a time either.
 */
import { GraphQLError } from 'graphql';
import type { Context } from '../context.js';
import { errors, HttpError } from '../errors.js';

/** A sentence for the descriptions of those fields. */
export const CONTRACT_SCOPE_NOTE =
  'A key needs canonical-metric-api:read (or metrics:read) for it, as for the contract route.';

/** Throws `Insufficient scope` (code FORBIDDEN) before anything is read or generated. */
export function requireContractScope(ctx: Context): void {
  if (ctx.contractFields) return;
  throw new GraphQLError(new HttpError(errors.insufficientScope).message, { extensions: { code: 'FORBIDDEN' } });
}
