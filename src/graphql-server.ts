/**
 * /graphql: graphql-yoga over the Pothos schema, with query depth, cost,
 * alias and token limits (GraphQL Armor) so that one document cannot fetch
 * the whole database. Authentication happens before yoga sees the request
 * (src/app.ts); yoga only gets the ready context.
 */
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type DocumentNode, type ExecutionResult, GraphQLError, type Source } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { createYoga, type MaskError, makeExecute, maskError, type Plugin } from 'graphql-yoga';
import type { Context } from './context.js';
import { isDatabaseUnavailable } from './db/unavailable.js';
import { errors, HttpError } from './errors.js';
import { OneDiscussionSummaryPerOperation, operationCost } from './graphql-cost.js';
import { schema } from './schema/index.js';

export interface YogaServerContext {
  req: FastifyRequest;
  reply: FastifyReply;
  graphqlContext: Context;
  /**
   * Spends an operation's cost (src/graphql-cost.ts) of the caller's budget
   * before it executes; false when the budget cannot pay it (nothing then
   * executes and the route answers 429).
   */
  spendCost?: (cost: number) => Promise<boolean>;
}

/**
 * Charges each operation by what it asks, after parsing and validation and
 * before execution, and allows one discussionSummary per operation.
 */
function useRequestCost(): Plugin<YogaServerContext> {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(OneDiscussionSummaryPerOperation);
    },
    async onExecute({ args, setResultAndStopExecution }) {
      const spend = (args.contextValue as Partial<YogaServerContext>).spendCost;
      if (!spend) return;
      const cost = operationCost(args.schema, args.document, args.operationName, args.variableValues);
      if (!(await spend(cost))) {
        setResultAndStopExecution({
          errors: [new GraphQLError('Rate limit exceeded', { extensions: { http: { status: 429 } } })],
        });
      }
    },
  };
}

/**
 * graphql-jit's errors carry their locations as line and column only, and
 * yoga rebuilds an error from its source positions: given them, the
 * locations survive, as they do for interpreted execution.
 */
function located(error: GraphQLError, source: Source): GraphQLError {
  if (!error.locations?.length) return error;
  const lineStarts = [0];
  for (let i = 0; i < source.body.length; i++) if (source.body[i] === '\n') lineStarts.push(i + 1);
  const positions = error.locations.map(({ line, column }) => (lineStarts[line - 1] ?? 0) + column - 1);
  return new GraphQLError(error.message, {
    source,
    positions,
    path: error.path,
    originalError: error.originalError,
    extensions: error.extensions,
  });
}

type Compiled = CompiledQuery | ExecutionResult;

/**
 * An error of the database not answering is no unexpected error: the client
 * is told so (SERVICE_UNAVAILABLE) and the response is a 503 with Retry-After,
 * as the REST routes answer it; anything else is masked as yoga masks it.
 */
const maskUnavailable: MaskError = (error, message, isDev) => {
  if (!isDatabaseUnavailable(error)) return maskError(error, message, isDev);
  const { serviceUnavailable } = errors;
  const located = error instanceof GraphQLError ? error : undefined;
  return new GraphQLError(new HttpError(serviceUnavailable).message, {
    nodes: located?.nodes,
    source: located?.source,
    positions: located?.positions,
    path: located?.path,
    extensions: {
      code: 'SERVICE_UNAVAILABLE',
      http: {
        status: serviceUnavailable.status,
        headers: { 'Retry-After': String(serviceUnavailable.retryAfter) },
      },
    },
  });
};

/**
 * Executes a document compiled by graphql-jit from its second execution on
 * (yoga keeps parsed documents, so a repeated query is the same document).
 * Compiling costs more than one interpreted execution, so a document seen
 * once (a client sending a new query every time) never pays for it.
 *
 * A compiled query is one operation of its document, so the cache is keyed
 * by the document and the operation name together: a document of several
 * operations gets one compiled query per operation it is asked to run, and
 * each request runs the operation it names (its cost was computed for that
 * one). @envelop/graphql-jit keys by the document alone, and ran the first
 * operation compiled for every later name.
 */
function useJitForRepeatedDocuments(): Plugin<YogaServerContext> {
  const byDocument = new WeakMap<DocumentNode, Map<string, Compiled | null>>();
  return {
    onExecute({ args, setExecuteFn }) {
      const operations = byDocument.get(args.document) ?? new Map<string, Compiled | null>();
      byDocument.set(args.document, operations);
      const name = args.operationName ?? '';
      if (!operations.has(name)) {
        // First run: interpreted; remembered so that the second one compiles.
        operations.set(name, null);
        return;
      }
      let compiled = operations.get(name);
      if (!compiled) {
        compiled = compileQuery(args.schema, args.document, args.operationName ?? undefined);
        operations.set(name, compiled);
      }
      // Not compilable (an unknown operation name, say): graphql's own execution answers it.
      if (!isCompiledQuery(compiled)) return;
      const query = compiled;
      setExecuteFn(
        makeExecute((executionArgs) =>
          query.query(executionArgs.rootValue, executionArgs.contextValue, executionArgs.variableValues),
        ),
      );
      const source = args.document.loc?.source;
      return {
        onExecuteDone: ({ result, setResult }) => {
          if (!source || !('errors' in result) || !result.errors?.length) return;
          setResult({ ...result, errors: result.errors.map((error) => located(error, source)) });
        },
      };
    },
  };
}

export const graphqlLimits = {
  maxDepth: 10,
  maxCost: 20_000,
  maxAliases: 20,
  maxTokens: 3_000,
  maxDirectives: 20,
} as const;

export interface GraphqlServerOptions {
  /** unexpected errors show their original error (message, stack) to the client: GRAPHQL_ERROR_DETAILS=1 only */
  errorDetails: boolean;
}

export function createGraphqlServer(logger: FastifyRequest['log'], options: GraphqlServerOptions) {
  return createYoga<YogaServerContext, Context>({
    schema,
    // An unexpected error is always `Unexpected error.` to the client (and logged): yoga's default shows the
    // original error, its stack and a database's message, whenever NODE_ENV is development. The database
    // not answering is said as such (maskUnavailable).
    maskedErrors: { isDev: options.errorDetails, maskError: maskUnavailable },
    graphqlEndpoint: '/graphql',
    // The GraphiQL page is the app's (src/graphiql-page.ts): a static file with its own headers.
    graphiql: false,
    landingPage: false,
    // yoga's default CORS echoes any origin with credentials; CORS is the app's (src/http/cross-origin.ts).
    cors: false,
    // yoga logs a message and its objects (an error with its path): pino's shape is the object first,
    // so that an error keeps its type, message and stack and the line its message.
    logging: {
      debug: (...args) => logger.debug(yogaLogEntry(args), yogaLogMessage(args)),
      info: (...args) => logger.info(yogaLogEntry(args), yogaLogMessage(args)),
      warn: (...args) => logger.warn(yogaLogEntry(args), yogaLogMessage(args)),
      error: (...args) => logger.error(yogaLogEntry(args), yogaLogMessage(args)),
    },
    context: ({ graphqlContext }) => graphqlContext,
    plugins: [
      EnvelopArmorPlugin({
        maxDepth: { n: graphqlLimits.maxDepth, ignoreIntrospection: true },
        costLimit: { maxCost: graphqlLimits.maxCost, ignoreIntrospection: true },
        maxAliases: { n: graphqlLimits.maxAliases },
        maxTokens: { n: graphqlLimits.maxTokens },
        maxDirectives: { n: graphqlLimits.maxDirectives },
        blockFieldSuggestion: { enabled: false },
      }),
      useRequestCost(),
      useJitForRepeatedDocuments(),
    ],
  });
}

/**
 * A browser navigating to /graphql (GET, Accept: text/html) gets the GraphiQL
 * page (src/graphiql-page.ts), with `?query=` only prefilled, never executed:
 * served without credentials; queries still need them.
 */
export function wantsGraphiql(request: FastifyRequest): boolean {
  return request.method === 'GET' && (request.headers.accept ?? '').includes('text/html');
}

/** The objects of a yoga log call, an error as `err` (pino's serializer keeps its stack). */
function yogaLogEntry(args: unknown[]): Record<string, unknown> {
  const objects = args.filter((arg) => typeof arg !== 'string');
  const error = objects.find((arg) => arg instanceof Error);
  return error ? { err: error, details: objects.filter((arg) => arg !== error) } : { details: objects };
}

function yogaLogMessage(args: unknown[]): string {
  const text = args.filter((arg): arg is string => typeof arg === 'string').join(' ');
  const error = args.find((arg): arg is Error => arg instanceof Error);
  return text || error?.message || 'graphql';
}
