/**
 * Runs the REST layer's named GraphQL operations in process, against the
 * same schema /graphql serves (no HTTP hop). The documents are generated and
 * fixed, so they are validated once, when this module loads.
 */
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { execute, type GraphQLError, validate } from 'graphql';
import type { Context } from '../context.js';
import { schema } from '../schema/index.js';
import * as operations from './operations.generated.js';
import { ListMetricsDocument, MetricContractDocument, MetricDetailDocument } from './operations.generated.js';

const documents = Object.entries(operations).filter(([name]) => name.endsWith('Document'));
for (const [, document] of documents) {
  const problems = validate(schema, document);
  if (problems.length) throw new Error(`REST operation does not match the schema: ${problems.join('; ')}`);
}

export interface OperationResult<TResult> {
  data: TResult | null;
  errors: readonly GraphQLError[];
}

export async function runOperation<TResult, TVariables extends Record<string, unknown>>(
  document: TypedDocumentNode<TResult, TVariables>,
  variables: TVariables,
  context: Context,
): Promise<OperationResult<TResult>> {
  const result = await execute({ schema, document, variableValues: variables, contextValue: context });
  return { data: (result.data as TResult | null | undefined) ?? null, errors: result.errors ?? [] };
}

export { ListMetricsDocument, MetricContractDocument, MetricDetailDocument };
