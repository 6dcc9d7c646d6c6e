/**
 * /graphql: graphql-yoga over the Pothos schema, with query depth, cost,
 * alias and token limits (GraphQL Armor) so that one document cannot fetch
 * the whole database. Authentication happens before yoga sees the request
 * (src/app.ts); yoga only gets the ready context.
 */
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLError } from 'graphql';
import { createYoga, type Plugin } from 'graphql-yoga';
import type { Context } from './context.js';
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

export const graphqlLimits = {
  maxDepth: 10,
  maxCost: 20_000,
  maxAliases: 20,
  maxTokens: 3_000,
  maxDirectives: 20,
} as const;

export function createGraphqlServer(logger: FastifyRequest['log']) {
  return createYoga<YogaServerContext, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    graphiql: { title: 'Metric Governance GraphQL', defaultEditorToolsVisibility: 'headers' },
    // GraphiQL bundled in the page: yoga's default loads it from a CDN, which
    // locked-down networks (and this service's tests) cannot reach. The bundle
    // is about 30 MB of heap once loaded, so it loads with the first page.
    renderGraphiQL: async (options) => (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(options),
    landingPage: false,
    // yoga's default CORS echoes any origin with credentials; CORS is the app's (src/http/cross-origin.ts).
    cors: false,
    logging: {
      debug: (...args) => logger.debug(args),
      info: (...args) => logger.info(args),
      warn: (...args) => logger.warn(args),
      error: (...args) => logger.error(args),
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
    ],
  });
}

/**
 * A browser navigating to /graphql (GET, Accept: text/html) gets the GraphiQL
 * page, with `?query=` only prefilled, never executed (yoga renders GraphiQL
 * for such requests): served without credentials; queries still need them.
 */
export function wantsGraphiql(request: FastifyRequest): boolean {
  return request.method === 'GET' && (request.headers.accept ?? '').includes('text/html');
}
