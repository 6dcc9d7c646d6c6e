/**
 * Every text argument of every field (`search`, `filter.policyTier`,
 * `metricByKey(key)`, `metricsByIds(ids)`, cursors) is checked for control
 * characters and unpaired surrogates before its resolver runs
 * (src/metric/input.ts): such a value is bad input, a BAD_USER_INPUT error
 * naming the argument, never a database error. One wrapper over the built
 * schema, so a field added later is covered without a line of its own.
 */
import { defaultFieldResolver, GraphQLError, type GraphQLSchema, isObjectType } from 'graphql';
import { HttpError } from '../errors.js';
import { checkCharactersDeep } from '../metric/input.js';

export function refuseInvalidTextArguments(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (!field.args.length) continue;
      const resolve = field.resolve ?? defaultFieldResolver;
      field.resolve = (source, args: Record<string, unknown>, context, info) => {
        const invalid = checkCharactersDeep('', args);
        if (invalid) {
          throw new GraphQLError(new HttpError(invalid).message, { extensions: { code: 'BAD_USER_INPUT' } });
        }
        return resolve(source, args, context, info);
      };
    }
  }
  return schema;
}
