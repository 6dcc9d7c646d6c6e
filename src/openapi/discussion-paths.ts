/**
 * The discussion routes in the OpenAPI document (src/http/discussion-routes.ts,
 * docs/discussions.md): their callers, limits, answers and refusals, merged
 * into the paths of src/openapi/document.ts.
 */
import {
  CHALLENGE_DECISIONS,
  DEFAULT_CHALLENGE_PAGE_SIZE,
  DEFAULT_DISCUSSION_WRITES_PER_MINUTE,
  DEFAULT_MESSAGE_PAGE_SIZE,
  DEFAULT_THREAD_PAGE_SIZE,
  DISCUSSION_BODY_LIMIT,
  DISCUSSION_INTENTS,
  MAX_BODY_CHARACTERS,
  MAX_CHALLENGE_PAGE_SIZE,
  MAX_MESSAGE_PAGE_SIZE,
  MAX_REASON_CHARACTERS,
  MAX_THREAD_PAGE_SIZE,
  MAX_TITLE_CHARACTERS,
} from '../discussions/limits.js';
import { badRequest, type ErrorResponse, errors } from '../errors.js';
import { DEFAULT_REGISTRY_WRITE_SETTINGS } from '../registry/write-queue.js';
import {
  errorResponse,
  json,
  parameters,
  queryParameter,
  rateLimitHeaders,
  ref,
  schemaRef,
  writer,
} from './components.js';

type Json = Record<string, unknown>;

const security = writer('discussions:write');

const callers =
  'A signed-in member of the organization (the `session` cookie; a cross-site request is 403) or a bot: a ' +
  'service token with `discussions:write` (`Authorization: Bearer cls_…`). With an `Authorization` header the ' +
  'cookie is not looked at. An API key is refused (403) without being looked up: keys read a discussion through ' +
  'the contract (counts, `discourse_summary`, `agent_context_notes`, `discussion_summary`).';

const writes =
  `${callers}\n\nA write is one transaction with its change-feed events (\`metric.discussion_changed\`, and ` +
  '`metric.trust_changed` for every verdict an objection opening or closing moves), taking its turn with the ' +
  'organization’s other writes (applies, validation results: 409 with `Retry-After` past ' +
  `${DEFAULT_REGISTRY_WRITE_SETTINGS.maxWaitMs / 1000} s). Each member and each bot writes at most ` +
  `\`DISCUSSION_WRITES_PER_MINUTE\` (${DEFAULT_DISCUSSION_WRITES_PER_MINUTE}) times a minute (429 with ` +
  '`Retry-After`), besides the request budget every route spends. The body is UTF-8 JSON of at most ' +
  `${DISCUSSION_BODY_LIMIT / 1024} KiB (413 past it); a member it does not take is 400, as is a query parameter. ` +
  'A write that finds nothing to do (the same body again, a thread resolved already) answers the thing as it is ' +
  'and records no event. The same operations are GraphQL mutations on `/graphql` (docs/discussions.md).';

const idParameter = (what: string) => ({
  name: 'id',
  in: 'path',
  required: true,
  description: `The ${what}'s id (UUID); anything else is 400.`,
  schema: { type: 'string', format: 'uuid' },
});

const page = (fallback: number, max: number, of: string) => [
  queryParameter('page', 'Page number from 1; invalid or missing becomes 1.', { type: 'integer', minimum: 1 }),
  queryParameter('pageSize', `${of} a page; invalid or missing becomes ${fallback}, above ${max} becomes ${max}.`, {
    type: 'integer',
    minimum: 1,
    maximum: max,
  }),
];

const ok = (description: string, schema: Json, status = '200') => ({
  [status]: { description, headers: rateLimitHeaders, ...json(schema) },
});

const badInput = (...examples: ErrorResponse[]) => ({
  '400': errorResponse(
    'The input breaks a rule: the message names the field (or the path id, or the query parameter). Refused, ' +
      'never cut short; nothing is written.',
    rateLimitHeaders,
    ...examples,
  ),
});

/** 403: `who` (the role that may not), then what every route refuses. */
const forbidden = (who: string | null, ...more: ErrorResponse[]) => ({
  '403': errorResponse(
    `${who ? `${who}, a` : 'A'} cross-site request, a service token without \`discussions:write\` ` +
      '(`Insufficient scope`), or an API key.',
    rateLimitHeaders,
    errors.forbidden,
    errors.insufficientScope,
    ...more,
  ),
});

const notFound = (...found: ErrorResponse[]) => ({
  '404': errorResponse(
    'No such thing in the caller’s organization (another organization’s look the same).',
    rateLimitHeaders,
    ...found,
  ),
});

const conflict = (...examples: ErrorResponse[]) => ({
  '409': {
    ...errorResponse(
      'The thing’s state refuses the write (when the example says so), or the organization’s registry has ' +
        'been written by another writer for longer than a write may wait (`Retry-After`). Nothing is written.',
      {
        ...rateLimitHeaders,
        'Retry-After': {
          description: 'With a busy registry: whole seconds to wait before retrying.',
          schema: { type: 'integer', minimum: 1 },
        },
      },
      ...examples,
      errors.registryBusy('a discussion write by user "Ada Admin"', new Date('2026-03-01T12:00:00.000Z'), 2),
    ),
  },
});

const writeErrors = (read = false) => ({
  '401': ref('responses', 'WriterUnauthorized'),
  '429': errorResponse(
    'The caller’s request budget, or its discussion writes a minute (`DISCUSSION_WRITES_PER_MINUTE`), is spent.',
    { ...rateLimitHeaders, 'Retry-After': ref('headers', 'Retry-After') },
    errors.rateLimited,
    ...(read ? [] : [errors.discussionWritesLimited(DEFAULT_DISCUSSION_WRITES_PER_MINUTE, 42)]),
  ),
  '500': ref('responses', 'InternalError'),
  '503': ref('responses', 'ServiceUnavailable'),
});

const bodyErrors = {
  '413': errorResponse(
    `The body is larger than ${DISCUSSION_BODY_LIMIT / 1024} KiB.`,
    rateLimitHeaders,
    errors.bodyTooLarge,
  ),
  '415': errorResponse('The body is not application/json.', rateLimitHeaders, errors.jsonContentTypeRequired),
};

const requestBody = (schema: string, example: unknown) => ({
  required: true,
  ...json(schemaRef(schema as Parameters<typeof schemaRef>[0]), { default: { value: example } }),
});

const tag = ['Discussions'];

/** The discussion routes, by path. */
export function discussionPaths(): Record<string, Record<string, Json>> {
  const intents = `\`${DISCUSSION_INTENTS.join('`, `')}\``;
  return {
    '/api/metrics/{id}/threads': {
      post: {
        operationId: 'openThread',
        tags: tag,
        summary: 'Open a thread on a metric',
        description:
          `A thread with an intent (${intents}), a title (one line, at most ${MAX_TITLE_CHARACTERS} characters) ` +
          `and its first message (Markdown, at most ${MAX_BODY_CHARACTERS} characters, served as written). An ` +
          'objection cautions the metric’s trust verdict at once (reason `open_objections`, or what its tier’s ' +
          'trust policy makes of it, which reaches the metrics built on it) until it is resolved. Any member.\n\n' +
          writes,
        security,
        parameters: [parameters.metricId],
        requestBody: requestBody('OpenThreadRequest', {
          intent: 'objection',
          title: 'Refunds are netted in the wrong month',
          body: 'Refunds should be netted in the month they are **issued**, not the month of the sale.',
        }),
        responses: {
          ...ok('The thread, with its first message.', schemaRef('DiscussionThreadResponse'), '201'),
          ...badInput(
            errors.inputTooLong('body', MAX_BODY_CHARACTERS),
            errors.inputTooLong('title', MAX_TITLE_CHARACTERS),
            badRequest('title must not be empty'),
            badRequest('title must be one line'),
            errors.invalidCharacters('body'),
            badRequest(`intent must be one of ${DISCUSSION_INTENTS.join(', ')}`),
            badRequest('unknown member(s): status'),
            errors.invalidMetricId,
          ),
          ...forbidden('A viewer', errors.readOnlyApiKey),
          ...notFound(errors.metricNotFound),
          ...conflict(),
          ...bodyErrors,
          ...writeErrors(),
        },
      },
      get: {
        operationId: 'listThreads',
        tags: tag,
        summary: 'A metric’s threads',
        description:
          'Newest first, each with its first page of messages (oldest first, ' +
          `${DEFAULT_MESSAGE_PAGE_SIZE} at most; \`GET /api/threads/{id}\` pages further). Deleted messages are ` +
          'listed in their place without their body. Any member, of any role, and bots.\n\n' +
          callers,
        security,
        parameters: [parameters.metricId, ...page(DEFAULT_THREAD_PAGE_SIZE, MAX_THREAD_PAGE_SIZE, 'Threads')],
        responses: {
          ...ok('A page of threads.', schemaRef('DiscussionThreadListResponse')),
          ...badInput(errors.invalidMetricId, errors.unknownQueryParameter('limit', ['page', 'pageSize'])),
          ...forbidden(null, errors.threadsNotForApiKeys),
          ...notFound(errors.metricNotFound),
          ...writeErrors(true),
        },
      },
    },
    '/api/threads/{id}': {
      get: {
        operationId: 'getThread',
        tags: tag,
        summary: 'A thread and a page of its messages',
        description: `Its messages oldest first, deleted ones in their place without their body.\n\n${callers}`,
        security,
        parameters: [idParameter('thread'), ...page(DEFAULT_MESSAGE_PAGE_SIZE, MAX_MESSAGE_PAGE_SIZE, 'Messages')],
        responses: {
          ...ok('The thread.', schemaRef('DiscussionThreadResponse')),
          ...badInput(badRequest('Invalid thread ID format')),
          ...forbidden(null, errors.threadsNotForApiKeys),
          ...notFound(errors.threadNotFound),
          ...writeErrors(true),
        },
      },
    },
    '/api/threads/{id}/messages': {
      post: {
        operationId: 'replyToThread',
        tags: tag,
        summary: 'Reply to a thread',
        description:
          `A message at the end of the thread (Markdown, at most ${MAX_BODY_CHARACTERS} characters); resolved ` +
          `threads take replies too. Any member.\n\n${writes}`,
        security,
        parameters: [idParameter('thread')],
        requestBody: requestBody('DiscussionMessageRequest', { body: 'The ledger nets them when issued: +1.' }),
        responses: {
          ...ok('The message.', schemaRef('DiscussionMessageResponse'), '201'),
          ...badInput(errors.inputTooLong('body', MAX_BODY_CHARACTERS), badRequest('body must not be empty')),
          ...forbidden('A viewer', errors.readOnlyApiKey),
          ...notFound(errors.threadNotFound),
          ...conflict(),
          ...bodyErrors,
          ...writeErrors(),
        },
      },
    },
    '/api/threads/{id}/resolve': {
      post: {
        operationId: 'resolveThread',
        tags: tag,
        summary: 'Resolve a thread',
        description:
          'By its author (a member, or the bot that opened it) or an admin or owner. A resolved objection no ' +
          `longer cautions the metric. Send \`{}\`.\n\n${writes}`,
        security,
        parameters: [idParameter('thread')],
        requestBody: requestBody('EmptyRequest', {}),
        responses: {
          ...ok('The thread (without its messages).', schemaRef('DiscussionThreadStatusResponse')),
          ...badInput(badRequest('Invalid thread ID format'), badRequest('unknown member(s): reason')),
          ...forbidden('A viewer, a member or bot that did not open it', errors.readOnlyApiKey),
          ...notFound(errors.threadNotFound),
          ...conflict(),
          ...bodyErrors,
          ...writeErrors(),
        },
      },
    },
    '/api/threads/{id}/reopen': {
      post: {
        operationId: 'reopenThread',
        tags: tag,
        summary: 'Reopen a thread',
        description: `By its author or an admin or owner. Send \`{}\`.\n\n${writes}`,
        security,
        parameters: [idParameter('thread')],
        requestBody: requestBody('EmptyRequest', {}),
        responses: {
          ...ok('The thread (without its messages).', schemaRef('DiscussionThreadStatusResponse')),
          ...badInput(badRequest('Invalid thread ID format')),
          ...forbidden('A viewer, a member or bot that did not open it', errors.readOnlyApiKey),
          ...notFound(errors.threadNotFound),
          ...conflict(),
          ...bodyErrors,
          ...writeErrors(),
        },
      },
    },
    '/api/messages/{id}': {
      patch: {
        operationId: 'editMessage',
        tags: tag,
        summary: 'Edit a message',
        description:
          'A new body, by its author or an admin or owner; `edited_at` says when. A deleted message cannot be ' +
          `edited (409).\n\n${writes}`,
        security,
        parameters: [idParameter('message')],
        requestBody: requestBody('DiscussionMessageRequest', { body: 'Refunds are netted when **issued**.' }),
        responses: {
          ...ok('The message.', schemaRef('DiscussionMessageResponse')),
          ...badInput(errors.inputTooLong('body', MAX_BODY_CHARACTERS), badRequest('Invalid message ID format')),
          ...forbidden('A viewer, a member or bot that did not write it', errors.readOnlyApiKey),
          ...notFound(errors.messageNotFound),
          ...conflict(errors.discussionConflict('A deleted message cannot be edited')),
          ...bodyErrors,
          ...writeErrors(),
        },
      },
      delete: {
        operationId: 'deleteMessage',
        tags: tag,
        summary: 'Delete a message',
        description:
          'By its author or an admin or owner. The message stays in its thread’s list without its body, no longer ' +
          "counts among the contract's `discussion_message_count`, and a pinned one stops being a note. Deleting " +
          `again changes nothing.\n\n${writes}`,
        security,
        parameters: [idParameter('message')],
        responses: {
          ...ok('The message, deleted.', schemaRef('DiscussionMessageResponse')),
          ...badInput(badRequest('Invalid message ID format')),
          ...forbidden('A viewer, a member or bot that did not write it', errors.readOnlyApiKey),
          ...notFound(errors.messageNotFound),
          ...conflict(),
          ...writeErrors(),
        },
      },
    },
    '/api/messages/{id}/pin': {
      post: {
        operationId: 'pinMessage',
        tags: tag,
        summary: 'Pin a message as a note for agents',
        description:
          'Admins and owners. The contract serves the metric’s pinned messages as `agent_context_notes`, newest ' +
          'pin first, at most 10 a response; the pin names who pinned it. A deleted message cannot be pinned ' +
          `(409). Send \`{}\`.\n\n${writes}`,
        security,
        parameters: [idParameter('message')],
        requestBody: requestBody('EmptyRequest', {}),
        responses: {
          ...ok('The message, pinned.', schemaRef('DiscussionMessageResponse')),
          ...badInput(badRequest('Invalid message ID format')),
          ...forbidden('A member, viewer or bot', errors.readOnlyApiKey),
          ...notFound(errors.messageNotFound),
          ...conflict(errors.discussionConflict('A deleted message cannot be pinned')),
          ...bodyErrors,
          ...writeErrors(),
        },
      },
      delete: {
        operationId: 'unpinMessage',
        tags: tag,
        summary: 'Unpin a message',
        description: `Admins and owners.\n\n${writes}`,
        security,
        parameters: [idParameter('message')],
        responses: {
          ...ok('The message, unpinned.', schemaRef('DiscussionMessageResponse')),
          ...badInput(badRequest('Invalid message ID format')),
          ...forbidden('A member, viewer or bot', errors.readOnlyApiKey),
          ...notFound(errors.messageNotFound),
          ...conflict(),
          ...writeErrors(),
        },
      },
    },
    '/api/metrics/{id}/challenges': {
      post: {
        operationId: 'openChallenge',
        tags: tag,
        summary: 'Challenge a metric’s definition',
        description:
          `With a reason (Markdown, at most ${MAX_REASON_CHARACTERS} characters). The contract counts challenges ` +
          `(\`challenges_count\`, \`open_challenges_count\`); they do not enter the trust verdict. Any member.\n\n${writes}`,
        security,
        parameters: [parameters.metricId],
        requestBody: requestBody('ChallengeRequest', { reason: 'Test orders are counted.' }),
        responses: {
          ...ok('The challenge.', schemaRef('ChallengeResponse'), '201'),
          ...badInput(errors.inputTooLong('reason', MAX_REASON_CHARACTERS), errors.invalidMetricId),
          ...forbidden('A viewer', errors.readOnlyApiKey),
          ...notFound(errors.metricNotFound),
          ...conflict(),
          ...bodyErrors,
          ...writeErrors(),
        },
      },
      get: {
        operationId: 'listChallenges',
        tags: tag,
        summary: 'A metric’s challenges',
        description: `Newest first, decided ones with their decision.\n\n${callers}`,
        security,
        parameters: [parameters.metricId, ...page(DEFAULT_CHALLENGE_PAGE_SIZE, MAX_CHALLENGE_PAGE_SIZE, 'Challenges')],
        responses: {
          ...ok('A page of challenges.', schemaRef('ChallengeListResponse')),
          ...badInput(errors.invalidMetricId),
          ...forbidden(null, errors.threadsNotForApiKeys),
          ...notFound(errors.metricNotFound),
          ...writeErrors(true),
        },
      },
    },
    '/api/challenges/{id}/decision': {
      post: {
        operationId: 'decideChallenge',
        tags: tag,
        summary: 'Accept or reject a challenge',
        description:
          `Admins and owners: \`${CHALLENGE_DECISIONS.join('` or `')}\`, with a reason; the challenge is then ` +
          `resolved. A decision is final (409 for a challenge decided or resolved already).\n\n${writes}`,
        security,
        parameters: [idParameter('challenge')],
        requestBody: requestBody('ChallengeDecisionRequest', {
          decision: 'rejected',
          reason: 'Test orders are filtered upstream, in `stg_orders`.',
        }),
        responses: {
          ...ok('The challenge, decided.', schemaRef('ChallengeResponse')),
          ...badInput(
            badRequest(`decision must be one of ${CHALLENGE_DECISIONS.join(', ')}`),
            badRequest('reason must not be empty'),
          ),
          ...forbidden('A member, viewer or bot', errors.readOnlyApiKey),
          ...notFound(errors.challengeNotFound),
          ...conflict(errors.discussionConflict('The challenge was rejected already')),
          ...bodyErrors,
          ...writeErrors(),
        },
      },
    },
  };
}
