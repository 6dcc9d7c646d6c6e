/** `DiscussionMessage`: a message of a thread, as members and bots read and write it. */
import { builder } from '../builder.js';
import type { MessageRow } from '../discussions/read.js';
import { DiscussionAuthorRef } from './discussion-author.js';
import { PaginationRef } from './metric-query.js';

export const DiscussionMessageRef = builder.objectRef<MessageRow>('DiscussionMessage').implement({
  description:
    'A message of a thread. The body is Markdown, served as written. A deleted message keeps its place in its ' +
    'thread without its body (null) and no longer counts among the contract’s messages.',
  fields: (t) => ({
    id: t.exposeID('id'),
    threadId: t.exposeID('threadId'),
    metricId: t.exposeID('metricId'),
    intent: t.exposeString('intent', { description: "The thread's intent." }),
    author: t.expose('author', { type: DiscussionAuthorRef, nullable: true }),
    body: t.exposeString('body', { nullable: true, description: 'Markdown as written; null once deleted.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    editedAt: t.expose('editedAt', { type: 'DateTime', nullable: true, description: 'The last edit; null: never.' }),
    deletedAt: t.expose('deletedAt', { type: 'DateTime', nullable: true }),
    pinnedAt: t.expose('pinnedAt', {
      type: 'DateTime',
      nullable: true,
      description: "Pinned as a note for agents (the contract's agent_context_notes) since then; null: not pinned.",
    }),
    pinnedBy: t.expose('pinnedBy', { type: DiscussionAuthorRef, nullable: true }),
  }),
});

export interface MessagePageSource {
  items: MessageRow[];
  page: number;
  pageSize: number;
  total: number;
}

export const DiscussionMessagePageRef = builder.objectRef<MessagePageSource>('DiscussionMessagePage').implement({
  description: 'A page of a thread’s messages, oldest first (deleted ones in their place).',
  fields: (t) => ({
    items: t.field({ type: [DiscussionMessageRef], resolve: (page) => page.items }),
    pagination: t.field({ type: PaginationRef, resolve: ({ page, pageSize, total }) => ({ page, pageSize, total }) }),
  }),
});
