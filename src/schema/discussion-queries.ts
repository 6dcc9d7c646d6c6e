/**
 * Reading discussions: a metric's threads (newest first, each with a page of
 * its messages), one thread, a metric's challenges. For signed-in members of
 * any role and for bots (service tokens with discussions:write); an API key
 * reads what the contract makes of them instead (FORBIDDEN here).
 */
import { builder } from '../builder.js';
import { requireDiscussionReader } from '../discussions/actor.js';
import {
  DEFAULT_CHALLENGE_PAGE_SIZE,
  DEFAULT_THREAD_PAGE_SIZE,
  MAX_CHALLENGE_PAGE_SIZE,
  MAX_THREAD_PAGE_SIZE,
} from '../discussions/limits.js';
import { readChallengePage, readThread, readThreadPage } from '../discussions/read.js';
import { isUuid } from '../uuid.js';
import { ChallengePageRef } from './challenge.js';
import { discussionResolver } from './discussion-errors.js';
import { DiscussionThreadPageRef, DiscussionThreadRef } from './discussion-thread.js';

/** The root fields a service token may read (besides the mutations): what a bot needs to follow up. */
export const DISCUSSION_READ_FIELDS = ['threads', 'thread', 'challenges'] as const;

const bounded = (value: number | null | undefined, fallback: number, max: number) =>
  Math.min(max, Math.max(1, value ?? fallback));

builder.queryFields((t) => ({
  threads: t.field({
    type: DiscussionThreadPageRef,
    nullable: true,
    description:
      `A metric's threads, newest first; null when there is no such metric in the organization. pageSize ` +
      `defaults to ${DEFAULT_THREAD_PAGE_SIZE}, at most ${MAX_THREAD_PAGE_SIZE}. Members and bots only.`,
    args: {
      metricId: t.arg.id({ required: true }),
      page: t.arg.int({ defaultValue: 1 }),
      pageSize: t.arg.int({ defaultValue: DEFAULT_THREAD_PAGE_SIZE }),
    },
    resolve: (_root, args, ctx) =>
      discussionResolver(async () => {
        requireDiscussionReader(ctx.principal);
        const metricId = String(args.metricId);
        if (!isUuid(metricId)) return null;
        return readThreadPage(
          ctx.sql,
          ctx.principal.org.id,
          metricId.toLowerCase(),
          Math.max(1, args.page ?? 1),
          bounded(args.pageSize, DEFAULT_THREAD_PAGE_SIZE, MAX_THREAD_PAGE_SIZE),
        );
      }),
  }),
  thread: t.field({
    type: DiscussionThreadRef,
    nullable: true,
    description: 'A thread of the organization; null when there is none with this id. Members and bots only.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      discussionResolver(async () => {
        requireDiscussionReader(ctx.principal);
        const id = String(args.id);
        return isUuid(id) ? readThread(ctx.sql, ctx.principal.org.id, id.toLowerCase()) : null;
      }),
  }),
  challenges: t.field({
    type: ChallengePageRef,
    nullable: true,
    description:
      `A metric's challenges, newest first; null when there is no such metric in the organization. pageSize ` +
      `defaults to ${DEFAULT_CHALLENGE_PAGE_SIZE}, at most ${MAX_CHALLENGE_PAGE_SIZE}. Members and bots only.`,
    args: {
      metricId: t.arg.id({ required: true }),
      page: t.arg.int({ defaultValue: 1 }),
      pageSize: t.arg.int({ defaultValue: DEFAULT_CHALLENGE_PAGE_SIZE }),
    },
    resolve: (_root, args, ctx) =>
      discussionResolver(async () => {
        requireDiscussionReader(ctx.principal);
        const metricId = String(args.metricId);
        if (!isUuid(metricId)) return null;
        return readChallengePage(
          ctx.sql,
          ctx.principal.org.id,
          metricId.toLowerCase(),
          Math.max(1, args.page ?? 1),
          bounded(args.pageSize, DEFAULT_CHALLENGE_PAGE_SIZE, MAX_CHALLENGE_PAGE_SIZE),
        );
      }),
  }),
}));
