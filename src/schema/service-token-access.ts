/**
 * A service token on /graphql (a bot with `discussions:write`) writes
 * discussions and reads them (src/schema/discussion-queries.ts), nothing
 * else: every other root field of Query refuses it (FORBIDDEN), as the read
 * routes refuse it. One wrapper over the built schema, so that a root field
 * added later is covered without a line of its own.
 */
import { defaultFieldResolver, type GraphQLSchema } from 'graphql';
import type { Context } from '../context.js';
import { errors, HttpError } from '../errors.js';
import { discussionGraphQLError } from './discussion-errors.js';
import { DISCUSSION_READ_FIELDS } from './discussion-queries.js';

export function refuseServiceTokenReads(schema: GraphQLSchema): GraphQLSchema {
  const query = schema.getQueryType();
  if (!query) return schema;
  const allowed = new Set<string>(DISCUSSION_READ_FIELDS);
  for (const field of Object.values(query.getFields())) {
    if (allowed.has(field.name)) continue;
    const resolve = field.resolve ?? defaultFieldResolver;
    field.resolve = (source, args, context: Context, info) => {
      if (context.principal.kind === 'service_token') {
        throw discussionGraphQLError(new HttpError(errors.serviceTokenDiscussionsOnly));
      }
      return resolve(source, args, context, info);
    };
  }
  return schema;
}
