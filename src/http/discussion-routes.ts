/**
 * Discussions over REST, outside the read-only /api/v1 (docs/discussions.md):
 * threads, messages, pins and challenges of the caller's organization. Each
 * route admits its caller, checks what GraphQL's types would (ids, the intent
 * and decision words, the body's members) and runs one named GraphQL
 * operation in process (src/rest/operations/discussions.graphql): the
 * mutations' own implementation, limits and rules (src/discussions/), so
 * that the two APIs cannot disagree.
 *
 * Callers: a signed-in member of any role (the session cookie, from this
 * origin only: src/http/cross-origin.ts; writes also need a JSON body, which
 * a page elsewhere cannot send without a preflight this service never
 * grants), or a bot's service token with `discussions:write`. An API key is
 * refused (403) before it is looked up: keys read, through the contract.
 */
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GraphQLError } from 'graphql';
import { z } from 'zod';
import { presentedKey } from '../auth/authenticate.js';
import type { ChangeWatcher } from '../changes/watcher.js';
import { createContext, type Principal, type ServiceConfig } from '../context.js';
import {
  checkDecision,
  checkIntent,
  DEFAULT_CHALLENGE_PAGE_SIZE,
  DEFAULT_MESSAGE_PAGE_SIZE,
  DEFAULT_THREAD_PAGE_SIZE,
  DISCUSSION_BODY_LIMIT,
  MAX_CHALLENGE_PAGE_SIZE,
  MAX_MESSAGE_PAGE_SIZE,
  MAX_THREAD_PAGE_SIZE,
} from '../discussions/limits.js';
import type { DiscussionWrites } from '../discussions/writer.js';
import { badRequest, errors, HttpError } from '../errors.js';
import { pageParameter } from '../metric/list.js';
import type { RegistryWriteQueue } from '../registry/write-queue.js';
import { runOperation } from '../rest/execute.js';
import {
  DecideChallengeDocument,
  DeleteMessageDocument,
  DiscussionThreadByIdDocument,
  EditMessageDocument,
  MetricChallengesDocument,
  MetricThreadsDocument,
  OpenChallengeDocument,
  OpenThreadDocument,
  PinMessageDocument,
  ReopenThreadDocument,
  ReplyToThreadDocument,
  ResolveThreadDocument,
  UnpinMessageDocument,
} from '../rest/operations.generated.js';
import { param, type Query, rejectUnknownParameters } from '../rest/query.js';
import { discussionRefusal } from '../schema/discussion-errors.js';
import { isUuid } from '../uuid.js';
import { validationMessage } from './admin-routes.js';
import { rejectCrossOrigin } from './cross-origin.js';
import { clientErrorHandler, failedRead } from './error-reply.js';
import { firstHeader } from './headers.js';
import {
  type AccessDeps,
  admitServiceToken,
  admitSession,
  noteOrganizationWrite,
  readsOf,
  throttleClient,
} from './request-auth.js';
import { strictJsonBodies } from './utf8-body.js';

/** What discussion writes of an app need, whichever transport runs them. */
export interface DiscussionWriteDeps {
  access: AccessDeps;
  /** told of each commit, so that this instance's long-polls and webhook worker wake at once */
  watcher: ChangeWatcher;
  /** discussion writes take turns with the organization's other registry writes */
  writeQueue: RegistryWriteQueue;
  /** DISCUSSION_WRITES_PER_MINUTE */
  writesPerMinute: number;
}

export interface DiscussionRoutesDeps extends DiscussionWriteDeps {
  config: ServiceConfig;
}

/** The discussion writes of one request (a /graphql request's, or a route's). */
export function discussionWritesFor(deps: DiscussionWriteDeps, request: FastifyRequest): DiscussionWrites {
  return {
    queue: deps.writeQueue,
    rateLimiter: deps.access.rateLimiter,
    writesPerMinute: deps.writesPerMinute,
    committed: async (orgId) => {
      deps.watcher.poke(orgId);
      await noteOrganizationWrite(deps.access, request, orgId);
    },
  };
}

/**
 * Runs `document` (a discussion operation of src/rest/operations) for
 * `principal`: the mutations' own implementation, limits and rules, with the
 * request's discussion writes; its refusals as the catalogue says (HttpError).
 * The REST routes and the catalog's forms both write through it.
 */
export async function runDiscussionOperation<TResult, TVariables extends Record<string, unknown>>(
  deps: DiscussionRoutesDeps,
  request: FastifyRequest,
  principal: Principal,
  document: TypedDocumentNode<TResult, TVariables>,
  variables: TVariables,
): Promise<TResult> {
  const context = createContext(readsOf(deps.access, request), principal, deps.config, deps.access.metrics, {
    discussionWrites: discussionWritesFor(deps, request),
  });
  const result = await runOperation(document, variables, context);
  const [first] = result.errors;
  if (first) throw refusal(request, first, result.errors);
  if (!result.data) throw new HttpError(errors.internal);
  return result.data;
}

function refusal(request: FastifyRequest, error: GraphQLError, all: readonly GraphQLError[]): HttpError {
  const refused = discussionRefusal(error);
  if (refused) return new HttpError(refused);
  // A text argument refused before its resolver ran (src/schema/text-arguments.ts).
  if (error.extensions?.code === 'BAD_USER_INPUT') return new HttpError(badRequest(error.message));
  request.log.error({ err: error, errors: all.map((e) => e.message) }, 'discussion operation failed');
  return failedRead(
    all.map((e) => e.originalError ?? e),
    errors.internal,
  );
}

const text = z.string();
const openThreadBody = z.strictObject({ intent: text, title: text, body: text });
const messageBody = z.strictObject({ body: text });
const challengeBody = z.strictObject({ reason: text });
const decisionBody = z.strictObject({ decision: text, reason: text });
const emptyBody = z.strictObject({});

function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new HttpError(badRequest(validationMessage(parsed.error)));
  return parsed.data;
}

/** A path's id: a UUID (lower-cased), else 400 naming what it should have been. */
function pathId(request: FastifyRequest, kind: 'metric' | 'thread' | 'message' | 'challenge'): string {
  const { id } = request.params as { id: string };
  if (isUuid(id)) return id.toLowerCase();
  throw new HttpError(kind === 'metric' ? errors.invalidMetricId : badRequest(`Invalid ${kind} ID format`));
}

const WRITE_METHODS = new Set(['POST', 'PATCH', 'DELETE']);

export async function discussionRoutes(app: FastifyInstance, deps: DiscussionRoutesDeps) {
  const { access } = deps;
  const principals = new WeakMap<FastifyRequest, Principal>();

  // Before the body is read: the caller (throttle, credentials, budget), the origin, the parameters.
  app.addHook('onRequest', async (request, reply) => {
    const write = WRITE_METHODS.has(request.method);
    if (firstHeader(request, 'authorization') !== undefined) {
      // An API key is refused as such: keys read, and only through /api/v1, /graphql and /mcp.
      if (presentedKey(firstHeader(request, 'authorization')).ok) {
        await throttleClient(access, request, reply);
        throw new HttpError(write ? errors.readOnlyApiKey : errors.threadsNotForApiKeys);
      }
      principals.set(request, await admitServiceToken(access, request, reply, 'discussions:write'));
    } else {
      rejectCrossOrigin(request);
      principals.set(request, await admitSession(access, request, reply));
    }
    if (write) {
      rejectUnknownParameters(request.query as Query, []);
      if (request.method !== 'DELETE') {
        const mediaType = firstHeader(request, 'content-type')?.split(';')[0]?.trim().toLowerCase();
        if (mediaType !== 'application/json') throw new HttpError(errors.jsonContentTypeRequired);
      }
    } else {
      rejectUnknownParameters(request.query as Query, ['page', 'pageSize']);
    }
  });
  strictJsonBodies(app);
  app.setErrorHandler(clientErrorHandler);

  function principalOf(request: FastifyRequest): Principal {
    const principal = principals.get(request);
    if (!principal) throw new Error('discussion route reached without an admitted caller');
    return principal;
  }

  const run = <TResult, TVariables extends Record<string, unknown>>(
    request: FastifyRequest,
    document: TypedDocumentNode<TResult, TVariables>,
    variables: TVariables,
  ) => runDiscussionOperation(deps, request, principalOf(request), document, variables);

  const pageOf = (request: FastifyRequest, fallback: number, max: number) => {
    const query = request.query as Query;
    return {
      page: pageParameter(param(query, 'page'), 1, 2 ** 31 - 1),
      pageSize: pageParameter(param(query, 'pageSize'), fallback, max),
    };
  };

  const created = (reply: FastifyReply, data: unknown) => reply.status(201).send({ data });

  const routeOptions = { bodyLimit: DISCUSSION_BODY_LIMIT };

  app.post('/api/metrics/:id/threads', routeOptions, async (request, reply) => {
    const metricId = pathId(request, 'metric');
    const body = parseBody(openThreadBody, request.body);
    const data = await run(request, OpenThreadDocument, {
      metricId,
      intent: checkIntent(body.intent),
      title: body.title,
      body: body.body,
      messagePage: 1,
      messagePageSize: DEFAULT_MESSAGE_PAGE_SIZE,
    });
    return created(reply, data.openThread);
  });

  app.get('/api/metrics/:id/threads', async (request) => {
    const metricId = pathId(request, 'metric');
    const { page, pageSize } = pageOf(request, DEFAULT_THREAD_PAGE_SIZE, MAX_THREAD_PAGE_SIZE);
    const data = await run(request, MetricThreadsDocument, {
      metricId,
      page,
      pageSize,
      messagePage: 1,
      messagePageSize: DEFAULT_MESSAGE_PAGE_SIZE,
    });
    if (!data.threads) throw new HttpError(errors.metricNotFound);
    return { data: data.threads.items, pagination: data.threads.pagination };
  });

  app.get('/api/threads/:id', async (request) => {
    const id = pathId(request, 'thread');
    const { page, pageSize } = pageOf(request, DEFAULT_MESSAGE_PAGE_SIZE, MAX_MESSAGE_PAGE_SIZE);
    const data = await run(request, DiscussionThreadByIdDocument, {
      id,
      messagePage: page,
      messagePageSize: pageSize,
    });
    if (!data.thread) throw new HttpError(errors.threadNotFound);
    return { data: data.thread };
  });

  app.post('/api/threads/:id/messages', routeOptions, async (request, reply) => {
    const threadId = pathId(request, 'thread');
    const { body } = parseBody(messageBody, request.body);
    return created(reply, (await run(request, ReplyToThreadDocument, { threadId, body })).reply);
  });

  app.post('/api/threads/:id/resolve', routeOptions, async (request) => {
    const threadId = pathId(request, 'thread');
    parseBody(emptyBody, request.body);
    return { data: (await run(request, ResolveThreadDocument, { threadId })).resolveThread };
  });

  app.post('/api/threads/:id/reopen', routeOptions, async (request) => {
    const threadId = pathId(request, 'thread');
    parseBody(emptyBody, request.body);
    return { data: (await run(request, ReopenThreadDocument, { threadId })).reopenThread };
  });

  app.patch('/api/messages/:id', routeOptions, async (request) => {
    const messageId = pathId(request, 'message');
    const { body } = parseBody(messageBody, request.body);
    return { data: (await run(request, EditMessageDocument, { messageId, body })).editMessage };
  });

  app.delete('/api/messages/:id', async (request) => {
    const messageId = pathId(request, 'message');
    return { data: (await run(request, DeleteMessageDocument, { messageId })).deleteMessage };
  });

  app.post('/api/messages/:id/pin', routeOptions, async (request) => {
    const messageId = pathId(request, 'message');
    parseBody(emptyBody, request.body);
    return { data: (await run(request, PinMessageDocument, { messageId })).pinMessage };
  });

  app.delete('/api/messages/:id/pin', async (request) => {
    const messageId = pathId(request, 'message');
    return { data: (await run(request, UnpinMessageDocument, { messageId })).unpinMessage };
  });

  app.post('/api/metrics/:id/challenges', routeOptions, async (request, reply) => {
    const metricId = pathId(request, 'metric');
    const { reason } = parseBody(challengeBody, request.body);
    return created(reply, (await run(request, OpenChallengeDocument, { metricId, reason })).openChallenge);
  });

  app.get('/api/metrics/:id/challenges', async (request) => {
    const metricId = pathId(request, 'metric');
    const { page, pageSize } = pageOf(request, DEFAULT_CHALLENGE_PAGE_SIZE, MAX_CHALLENGE_PAGE_SIZE);
    const data = await run(request, MetricChallengesDocument, { metricId, page, pageSize });
    if (!data.challenges) throw new HttpError(errors.metricNotFound);
    return { data: data.challenges.items, pagination: data.challenges.pagination };
  });

  app.post('/api/challenges/:id/decision', routeOptions, async (request) => {
    const challengeId = pathId(request, 'challenge');
    const body = parseBody(decisionBody, request.body);
    const data = await run(request, DecideChallengeDocument, {
      challengeId,
      decision: checkDecision(body.decision),
      reason: body.reason,
    });
    return { data: data.decideChallenge };
  });
}
