/** The change feed (src/changes/) on GraphQL: `changes(after, first)`, as `GET /api/v1/changes` serves it without waiting. */
import { GraphQLError } from 'graphql';
import { builder } from '../builder.js';
import { decodeCursor } from '../changes/cursor.js';
import type { CloudEvent } from '../changes/event.js';
import {
  type ChangePage,
  DEFAULT_CHANGES_LIMIT,
  ExpiredCursorError,
  InvalidCursorError,
  lastSeq,
  MAX_CHANGES_LIMIT,
  readChanges,
} from '../changes/feed.js';

const ChangeEventRef = builder.objectRef<CloudEvent>('ChangeEvent').implement({
  description:
    "A change of a metric of the caller's organization, as a CloudEvents 1.0 event (its JSON format's attribute names).",
  fields: (t) => ({
    specversion: t.exposeString('specversion'),
    id: t.exposeString('id', { description: 'unique; the `webhook-id` of its webhook deliveries' }),
    source: t.exposeString('source', { description: '/organizations/<organization id>' }),
    type: t.exposeString('type', {
      description:
        'metric.created, metric.updated, metric.removed, metric.restored, metric.lifecycle_changed, metric.version_released, metric.validated, metric.trust_changed or metric.discussion_changed',
    }),
    subject: t.exposeString('subject', { description: "the metric's id" }),
    time: t.exposeString('time', { description: 'when the change was made (ISO 8601, UTC)' }),
    datacontenttype: t.exposeString('datacontenttype'),
    data: t.field({
      type: 'JSON',
      description: "the metric's id, key, name and lifecycle_status after the change, and the type's own members",
      resolve: (event) => event.data,
    }),
  }),
});

const ChangePageRef = builder.objectRef<ChangePage>('ChangePage').implement({
  description: 'Events after a cursor, oldest first.',
  fields: (t) => ({
    events: t.field({ type: [ChangeEventRef], resolve: (page) => page.events }),
    nextCursor: t.exposeString('nextCursor', {
      description: 'resumes after the last event of this page (the cursor given when the page is empty)',
    }),
  }),
});

/** The codes of the feed's errors; the REST route answers them 400 and 410 (src/rest/changes-route.ts). */
export const INVALID_CURSOR = 'BAD_USER_INPUT';
export const CURSOR_EXPIRED = 'CURSOR_EXPIRED';

function changeFeedError(error: unknown): unknown {
  if (error instanceof InvalidCursorError)
    return new GraphQLError(error.message, { extensions: { code: INVALID_CURSOR } });
  if (error instanceof ExpiredCursorError)
    return new GraphQLError(error.message, { extensions: { code: CURSOR_EXPIRED } });
  return error;
}

builder.queryFields((t) => ({
  changes: t.field({
    type: ChangePageRef,
    description: `The change feed of the caller's organization: events after \`after\` (from the oldest kept without it), at most \`first\` (default ${DEFAULT_CHANGES_LIMIT}, 1 to ${MAX_CHANGES_LIMIT}). An invalid cursor is BAD_USER_INPUT; one whose events retention removed is CURSOR_EXPIRED. metric.validated and metric.trust_changed (validation evidence, trust verdicts) are served to a key with canonical-metric-api:read (or metrics:read), as the contract is; a key of definition:read alone reads the feed without them.`,
    args: {
      after: t.arg.string(),
      first: t.arg.int({ defaultValue: DEFAULT_CHANGES_LIMIT }),
    },
    resolve: async (_root, args, ctx) => {
      const first = args.first ?? DEFAULT_CHANGES_LIMIT;
      if (!Number.isInteger(first) || first < 1 || first > MAX_CHANGES_LIMIT) {
        throw new GraphQLError(`first must be between 1 and ${MAX_CHANGES_LIMIT}`, {
          extensions: { code: INVALID_CURSOR },
        });
      }
      const orgId = ctx.principal.org.id;
      // With replicas, a cursor past what the request's replica has replayed is read on the primary: it is
      // never refused as unknown, nor answered from behind.
      const seen = args.after && ctx.readerAtLeast ? decodeCursor(args.after, orgId) : null;
      const reader =
        seen !== null && ctx.readerAtLeast
          ? await ctx.readerAtLeast(async (sql) => (await lastSeq(sql, orgId)) >= seen)
          : ctx.sql;
      try {
        return await readChanges(reader, orgId, args.after ?? null, first, ctx.contractFields);
      } catch (error) {
        throw changeFeedError(error);
      }
    },
  }),
}));
