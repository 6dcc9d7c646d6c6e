/**
 * Runs the REST layer's named GraphQL operations in process, against the
 * same schema /graphql serves (no HTTP hop). The documents are generated and
 * fixed, so they are validated and compiled (graphql-jit: the execution plan
 * as one JavaScript function per document) once, when this module loads.
 */
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { type DocumentNode, type ExecutionResult, type GraphQLError, validate } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import type { Context } from '../context.js';
import { schema } from '../schema/index.js';
import * as operations from './operations.generated.js';
import {
  ChangesDocument,
  ListMetricsDocument,
  MetricContractDocument,
  MetricDetailDocument,
} from './operations.generated.js';

type CompiledOperation = (context: Context, variables: unknown) => ExecutionResult | Promise<ExecutionResult>;

const compiled = new Map<DocumentNode, CompiledOperation>();
for (const [name, document] of Object.entries(operations)) {
  if (!name.endsWith('Document')) continue;
  const problems = validate(schema, document);
  if (problems.length) throw new Error(`REST operation does not match the schema: ${problems.join('; ')}`);
  const query = compileQuery(schema, document as DocumentNode);
  if (!isCompiledQuery(query)) throw new Error(`REST operation ${name} does not compile: ${JSON.stringify(query)}`);
  compiled.set(document, (context, variables) => query.query(undefined, context, variables as Record<string, unknown>));
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
  const run = compiled.get(document as DocumentNode);
  if (!run) throw new Error('not a REST operation');
  const result = await run(context, variables);
  return { data: (result.data as TResult | null | undefined) ?? null, errors: result.errors ?? [] };
}

export { ChangesDocument, ListMetricsDocument, MetricContractDocument, MetricDetailDocument };
