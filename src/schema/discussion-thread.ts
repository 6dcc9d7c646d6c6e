/**
 * `DiscussionThread`: a thread on a metric, with a page of its messages.
 * The messages of every thread a response lists are read in one statement
 * per page asked for (a DataLoader per request and page).
 */
import DataLoader from 'dataloader';
import { builder } from '../builder.js';
import type { Context } from '../context.js';
import {
  DEFAULT_MESSAGE_PAGE_SIZE,
  DISCUSSION_INTENTS,
  MAX_LISTED_MESSAGES,
  MAX_MESSAGE_PAGE_SIZE,
} from '../discussions/limits.js';
import { type MessageRow, readMessagePages, type ThreadRow } from '../discussions/read.js';
import { DiscussionAuthorRef } from './discussion-author.js';
import { DiscussionMessagePageRef } from './discussion-message.js';
import { PaginationRef } from './metric-query.js';

export const DiscussionIntentEnum = builder.enumType('DiscussionIntent', {
  description:
    'What a thread is for. An open objection cautions the metric (trust reason open_objections); the contract ' +
    'counts open objections and proposals in its discourse_summary.',
  values: DISCUSSION_INTENTS,
});

export const ResolutionStatusEnum = builder.enumType('ResolutionStatus', { values: ['open', 'resolved'] as const });

const messagePages = new WeakMap<Context, Map<string, DataLoader<string, MessageRow[]>>>();

function messagePageLoader(ctx: Context, page: number, pageSize: number): DataLoader<string, MessageRow[]> {
  let loaders = messagePages.get(ctx);
  if (!loaders) {
    loaders = new Map();
    messagePages.set(ctx, loaders);
  }
  const key = `${page}:${pageSize}`;
  let loader = loaders.get(key);
  if (!loader) {
    loader = new DataLoader(async (ids: readonly string[]) => {
      const pages = await readMessagePages(ctx.sql, ids, page, pageSize);
      return ids.map((id) => pages.get(id) ?? []);
    });
    loaders.set(key, loader);
  }
  return loader;
}

export const DiscussionThreadRef = builder.objectRef<ThreadRow>('DiscussionThread').implement({
  description: 'A thread on a metric: its intent, title, status, author, and its messages.',
  fields: (t) => ({
    id: t.exposeID('id'),
    metricId: t.exposeID('metricId'),
    intent: t.exposeString('intent', {
      description: `${DISCUSSION_INTENTS.join(', ')} (a thread loaded from a fixture may carry another word)`,
    }),
    title: t.exposeString('title'),
    resolutionStatus: t.expose('resolutionStatus', { type: ResolutionStatusEnum }),
    author: t.expose('author', {
      type: DiscussionAuthorRef,
      nullable: true,
      description: 'Who opened it; null for a thread loaded without an author.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    resolvedAt: t.expose('resolvedAt', { type: 'DateTime', nullable: true }),
    resolvedBy: t.expose('resolvedBy', { type: DiscussionAuthorRef, nullable: true }),
    messageCount: t.exposeInt('messageCount', { description: 'Its messages, deleted ones included.' }),
    messages: t.field({
      type: DiscussionMessagePageRef,
      description:
        `A page of its messages, oldest first; pageSize defaults to ${DEFAULT_MESSAGE_PAGE_SIZE}, at most ` +
        `${MAX_MESSAGE_PAGE_SIZE} (${MAX_LISTED_MESSAGES} for a thread of a page of threads).`,
      args: {
        page: t.arg.int({ defaultValue: 1 }),
        pageSize: t.arg.int({ defaultValue: DEFAULT_MESSAGE_PAGE_SIZE }),
      },
      resolve: async (thread, args, ctx) => {
        const page = Math.max(1, args.page ?? 1);
        const max = thread.listed ? MAX_LISTED_MESSAGES : MAX_MESSAGE_PAGE_SIZE;
        const pageSize = Math.min(max, Math.max(1, args.pageSize ?? DEFAULT_MESSAGE_PAGE_SIZE));
        const items = await messagePageLoader(ctx, page, pageSize).load(thread.id);
        return { items, page, pageSize, total: thread.messageCount };
      },
    }),
  }),
});

export const DiscussionThreadPageRef = builder
  .objectRef<{ items: ThreadRow[]; page: number; pageSize: number; total: number }>('DiscussionThreadPage')
  .implement({
    description: 'A page of a metric’s threads, newest first.',
    fields: (t) => ({
      items: t.field({ type: [DiscussionThreadRef], resolve: (page) => page.items }),
      pagination: t.field({ type: PaginationRef, resolve: ({ page, pageSize, total }) => ({ page, pageSize, total }) }),
    }),
  });
