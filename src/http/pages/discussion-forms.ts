/**
 * The catalog's discussion pages and their forms (docs/discussions.md, "In
 * the catalog"): opening a thread on a metric, a thread with its reply,
 * edit, delete, resolve, reopen, pin and unpin forms, and a metric's
 * challenges with their open and decide forms. Every write runs the same
 * GraphQL operation the REST routes run, through the same function
 * (src/http/discussion-routes.ts): the same roles, limits, per-member write
 * budget, change-feed events and trust transitions. A post that succeeds
 * answers 303 back to the page; one refused for what was typed (an empty
 * title, a body over its limit, control characters) shows the form again,
 * 400, with the message at the field and the input kept; any other refusal
 * is a page with its status (403 for a viewer, 404 for what is not the
 * organization's, 429 with Retry-After past the write budget).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceConfig } from '../../context.js';
import {
  checkDecision,
  checkIntent,
  DEFAULT_CHALLENGE_PAGE_SIZE,
  MAX_MESSAGE_PAGE_SIZE,
} from '../../discussions/limits.js';
import { badRequest, errors, HttpError } from '../../errors.js';
import { pageParameter } from '../../metric/list.js';
import { challengesPage } from '../../pages/discussion-challenges.js';
import type { FieldError } from '../../pages/discussion-fields.js';
import { newThreadPage } from '../../pages/discussion-new.js';
import { type ThreadFormState, threadPage, threadPath } from '../../pages/discussion-thread.js';
import { orgPath } from '../../pages/layout.js';
import {
  DecideChallengeDocument,
  DeleteMessageDocument,
  DiscussionMetricDocument,
  DiscussionThreadByIdDocument,
  EditMessageDocument,
  MetricChallengesDocument,
  OpenChallengeDocument,
  OpenThreadDocument,
  PinMessageDocument,
  ReopenThreadDocument,
  ReplyToThreadDocument,
  ResolveThreadDocument,
  UnpinMessageDocument,
} from '../../rest/operations.generated.js';
import { param, type Query } from '../../rest/query.js';
import { isUuid } from '../../uuid.js';
import { type DiscussionWriteDeps, runDiscussionOperation } from '../discussion-routes.js';
import type { AccessDeps } from '../request-auth.js';
import { admitPage, admitPageForm, type FormFields, type SignedInPage, seeOther, sendPage } from './page-kit.js';

export interface DiscussionFormOptions {
  access: AccessDeps;
  config: ServiceConfig;
  discussionWrites: DiscussionWriteDeps;
}

type Params = Record<string, string>;
type PageRequest = FastifyRequest<{ Params: Params; Querystring: Query }>;
type FormRequest = FastifyRequest<{ Params: Params; Querystring: Query; Body: FormFields }>;

/** A path's id: a UUID (lower-cased); anything else names nothing here (404). */
function idOf(request: FastifyRequest<{ Params: Params }>, name: string): string {
  const value = request.params[name];
  if (value !== undefined && isUuid(value)) return value.toLowerCase();
  throw new HttpError(errors.notFound);
}

/** A form field's text; absent (or not text) is empty, which the write refuses as it would any empty text. */
const fieldOf = (request: FormRequest, name: string): string => {
  const value = request.body?.[name];
  return typeof value === 'string' ? value : '';
};

/**
 * A refusal about one of the form's `fields` (the messages name their field
 * first: src/discussions/limits.ts, src/schema/text-arguments.ts), to show
 * at the field; null for any other refusal, which is answered as a page.
 */
function fieldErrorOf(error: unknown, fields: readonly string[]): FieldError | null {
  if (!(error instanceof HttpError) || error.response.status !== 400) return null;
  const body = error.response.body.error;
  const message = typeof body === 'string' ? body : body.message;
  const field = fields.find((name) => message.startsWith(`${name} `));
  return field ? { field, message } : null;
}

/** What a write returned: the schema lets a mutation's field be null only when it failed, which was thrown already. */
function written<T>(value: T | null): T {
  if (value === null) throw new HttpError(errors.internal);
  return value;
}

const messagePageOf = (request: PageRequest) => pageParameter(param(request.query, 'page'), 1, 2 ** 31 - 1);

export async function discussionForms(
  app: FastifyInstance,
  { access, config, discussionWrites }: DiscussionFormOptions,
) {
  const deps = { ...discussionWrites, config };
  const run = <TResult, TVariables extends Record<string, unknown>>(
    request: FastifyRequest,
    page: SignedInPage,
    document: Parameters<typeof runDiscussionOperation<TResult, TVariables>>[3],
    variables: TVariables,
  ) => runDiscussionOperation(deps, request, page.principal, document, variables);

  async function metricOf(request: FastifyRequest, page: SignedInPage, metricId: string) {
    const { metric } = await run(request, page, DiscussionMetricDocument, { id: metricId });
    if (!metric) throw new HttpError(errors.notFound);
    return metric;
  }

  /** The thread's page as the viewer sees it: the thread (a page of its messages) and its metric. */
  async function showThread(
    request: PageRequest,
    reply: FastifyReply,
    page: SignedInPage,
    threadId: string,
    options: { editing: string | null; state?: ThreadFormState; status?: number },
  ) {
    const { thread } = await run(request, page, DiscussionThreadByIdDocument, {
      id: threadId,
      messagePage: messagePageOf(request),
      messagePageSize: MAX_MESSAGE_PAGE_SIZE,
    });
    if (!thread) throw new HttpError(errors.notFound);
    // A refused edit of a message this page of the thread does not show: its refusal as a page of its own.
    const edited = options.state?.messageId;
    if (edited && !thread.messages.items.some((m) => m.id === edited)) {
      throw new HttpError(badRequest(options.state?.error.message ?? 'body was refused'));
    }
    const metric = await metricOf(request, page, thread.metric_id);
    const html = threadPage({
      viewer: page.viewer,
      userId: page.principal.userId,
      metric,
      thread,
      editing: options.editing,
      state: options.state,
    });
    return sendPage(reply, html, options.status);
  }

  // Opening a thread.
  app.get('/:org/metrics/:id/threads/new', async (request: PageRequest, reply) => {
    const page = await admitPage(access, request, reply, request.params.org as string);
    const metric = await metricOf(request, page, idOf(request, 'id'));
    return sendPage(reply, newThreadPage({ viewer: page.viewer, metric }));
  });

  app.post('/:org/metrics/:id/threads/new', async (request: FormRequest, reply) => {
    const page = await admitPageForm(access, request, reply, request.params.org as string);
    const metricId = idOf(request, 'id');
    const values = {
      intent: fieldOf(request, 'intent'),
      title: fieldOf(request, 'title'),
      body: fieldOf(request, 'body'),
    };
    try {
      const openThread = written(
        (
          await run(request, page, OpenThreadDocument, {
            metricId,
            intent: checkIntent(values.intent),
            title: values.title,
            body: values.body,
            messagePage: 1,
            messagePageSize: 1,
          })
        ).openThread,
      );
      return seeOther(reply, threadPath(page.viewer, openThread.id));
    } catch (error) {
      const refused = fieldErrorOf(error, ['intent', 'title', 'body']);
      if (!refused) throw error;
      const metric = await metricOf(request, page, metricId);
      return sendPage(reply, newThreadPage({ viewer: page.viewer, metric, values, error: refused }), 400);
    }
  });

  // A thread and its forms.
  app.get('/:org/threads/:threadId', async (request: PageRequest, reply) => {
    const page = await admitPage(access, request, reply, request.params.org as string);
    const edit = param(request.query, 'edit');
    return showThread(request, reply, page, idOf(request, 'threadId'), {
      editing: edit && isUuid(edit) ? edit.toLowerCase() : null,
    });
  });

  app.post('/:org/threads/:threadId/reply', async (request: FormRequest, reply) => {
    const page = await admitPageForm(access, request, reply, request.params.org as string);
    const threadId = idOf(request, 'threadId');
    const body = fieldOf(request, 'body');
    try {
      const message = written((await run(request, page, ReplyToThreadDocument, { threadId, body })).reply);
      return seeOther(reply, `${threadPath(page.viewer, message.thread_id)}#message-${message.id}`);
    } catch (error) {
      const refused = fieldErrorOf(error, ['body']);
      if (!refused) throw error;
      return showThread(request, reply, page, threadId, {
        editing: null,
        state: { form: 'reply', body, error: refused },
        status: 400,
      });
    }
  });

  const threadActions = {
    resolve: (request: FastifyRequest, page: SignedInPage, threadId: string) =>
      run(request, page, ResolveThreadDocument, { threadId }).then((data) => data.resolveThread),
    reopen: (request: FastifyRequest, page: SignedInPage, threadId: string) =>
      run(request, page, ReopenThreadDocument, { threadId }).then((data) => data.reopenThread),
  };
  for (const [action, write] of Object.entries(threadActions)) {
    app.post(`/:org/threads/:threadId/${action}`, async (request: FormRequest, reply) => {
      const page = await admitPageForm(access, request, reply, request.params.org as string);
      const thread = written(await write(request, page, idOf(request, 'threadId')));
      return seeOther(reply, threadPath(page.viewer, thread.id));
    });
  }

  app.post('/:org/threads/:threadId/messages/:messageId/edit', async (request: FormRequest, reply) => {
    const page = await admitPageForm(access, request, reply, request.params.org as string);
    const threadId = idOf(request, 'threadId');
    const messageId = idOf(request, 'messageId');
    const body = fieldOf(request, 'body');
    try {
      const message = written((await run(request, page, EditMessageDocument, { messageId, body })).editMessage);
      return seeOther(
        reply,
        `${threadPath(page.viewer, message.thread_id, messagePageOf(request))}#message-${message.id}`,
      );
    } catch (error) {
      const refused = fieldErrorOf(error, ['body']);
      if (!refused) throw error;
      return showThread(request, reply, page, threadId, {
        editing: messageId,
        state: { form: 'edit', messageId, body, error: refused },
        status: 400,
      });
    }
  });

  const messageActions = {
    delete: (request: FastifyRequest, page: SignedInPage, messageId: string) =>
      run(request, page, DeleteMessageDocument, { messageId }).then((data) => data.deleteMessage),
    pin: (request: FastifyRequest, page: SignedInPage, messageId: string) =>
      run(request, page, PinMessageDocument, { messageId }).then((data) => data.pinMessage),
    unpin: (request: FastifyRequest, page: SignedInPage, messageId: string) =>
      run(request, page, UnpinMessageDocument, { messageId }).then((data) => data.unpinMessage),
  };
  for (const [action, write] of Object.entries(messageActions)) {
    app.post(`/:org/threads/:threadId/messages/:messageId/${action}`, async (request: FormRequest, reply) => {
      const page = await admitPageForm(access, request, reply, request.params.org as string);
      idOf(request, 'threadId');
      const message = written(await write(request, page, idOf(request, 'messageId')));
      return seeOther(
        reply,
        `${threadPath(page.viewer, message.thread_id, messagePageOf(request))}#message-${message.id}`,
      );
    });
  }

  // A metric's challenges.
  async function showChallenges(
    request: PageRequest,
    reply: FastifyReply,
    page: SignedInPage,
    metricId: string,
    state?: Parameters<typeof challengesPage>[0]['state'],
  ) {
    const metric = await metricOf(request, page, metricId);
    const { challenges } = await run(request, page, MetricChallengesDocument, {
      metricId,
      page: messagePageOf(request),
      pageSize: DEFAULT_CHALLENGE_PAGE_SIZE,
    });
    if (!challenges) throw new HttpError(errors.notFound);
    return sendPage(reply, challengesPage({ viewer: page.viewer, metric, challenges, state }), state ? 400 : 200);
  }

  app.get('/:org/metrics/:id/challenges', async (request: PageRequest, reply) => {
    const page = await admitPage(access, request, reply, request.params.org as string);
    return showChallenges(request, reply, page, idOf(request, 'id'));
  });

  app.post('/:org/metrics/:id/challenges', async (request: FormRequest, reply) => {
    const page = await admitPageForm(access, request, reply, request.params.org as string);
    const metricId = idOf(request, 'id');
    const reason = fieldOf(request, 'reason');
    try {
      const challenge = written((await run(request, page, OpenChallengeDocument, { metricId, reason })).openChallenge);
      return seeOther(reply, `${orgPath(page.viewer, 'metrics', metricId, 'challenges')}#challenge-${challenge.id}`);
    } catch (error) {
      const refused = fieldErrorOf(error, ['reason']);
      if (!refused) throw error;
      return showChallenges(request, reply, page, metricId, { form: 'open', reason, error: refused });
    }
  });

  app.post('/:org/metrics/:id/challenges/:challengeId/decision', async (request: FormRequest, reply) => {
    const page = await admitPageForm(access, request, reply, request.params.org as string);
    const metricId = idOf(request, 'id');
    const challengeId = idOf(request, 'challengeId');
    const reason = fieldOf(request, 'reason');
    try {
      const decided = await run(request, page, DecideChallengeDocument, {
        challengeId,
        decision: checkDecision(fieldOf(request, 'decision')),
        reason,
      });
      const challenge = written(decided.decideChallenge);
      return seeOther(
        reply,
        `${orgPath(page.viewer, 'metrics', challenge.metric_id, 'challenges')}#challenge-${challenge.id}`,
      );
    } catch (error) {
      const refused = fieldErrorOf(error, ['reason']);
      if (!refused) throw error;
      return showChallenges(request, reply, page, metricId, { form: challengeId, reason, error: refused });
    }
  });
}
