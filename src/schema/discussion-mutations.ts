/**
 * The schema's mutations: discussions written by members and bots
 * (docs/discussions.md). A signed-in session (its cookie from this origin)
 * or a service token with `discussions:write`; an API key is read-only
 * (FORBIDDEN). Every mutation is one write of src/discussions/, rate-limited
 * per member or token, in the organization's turn, with its change-feed
 * events in the same transaction; the REST routes run these same mutations.
 */
import { builder } from '../builder.js';
import type { Context } from '../context.js';
import { decideChallenge, openChallenge } from '../discussions/challenges.js';
import { MAX_BODY_CHARACTERS, MAX_REASON_CHARACTERS, MAX_TITLE_CHARACTERS } from '../discussions/limits.js';
import { pinMessage, unpinMessage } from '../discussions/pins.js';
import { deleteMessage, editMessage, openThread, reopenThread, reply, resolveThread } from '../discussions/threads.js';
import type { DiscussionCall } from '../discussions/write.js';
import { runDiscussionWrite } from '../discussions/writer.js';
import { ChallengeDecisionEnum, ChallengeRef } from './challenge.js';
import { discussionResolver } from './discussion-errors.js';
import { DiscussionMessageRef } from './discussion-message.js';
import { DiscussionIntentEnum, DiscussionThreadRef } from './discussion-thread.js';

builder.mutationType({
  description:
    'Discussion writes: a signed-in member (the session cookie, from this origin) or a service token with ' +
    'discussions:write. API keys are read-only. Each field is null with an error when its write is refused; ' +
    'the other mutations of the operation stand.',
});

const write = <T>(ctx: Context, run: (call: DiscussionCall) => Promise<T>) =>
  discussionResolver(() => runDiscussionWrite(ctx, run));

const body = `Markdown, at most ${MAX_BODY_CHARACTERS} characters, not blank; no control characters but tab and line breaks.`;
const reason = `Markdown, at most ${MAX_REASON_CHARACTERS} characters, not blank.`;

builder.mutationFields((t) => ({
  openThread: t.field({
    type: DiscussionThreadRef,
    nullable: true,
    description: 'Opens a thread on a metric with its first message (member). An objection cautions the metric.',
    args: {
      metricId: t.arg.id({ required: true }),
      intent: t.arg({ type: DiscussionIntentEnum, required: true }),
      title: t.arg.string({
        required: true,
        description: `One line, at most ${MAX_TITLE_CHARACTERS} characters, not blank.`,
      }),
      body: t.arg.string({ required: true, description: body }),
    },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) => openThread(ctx.prisma, call, { ...args, metricId: String(args.metricId) })),
  }),
  reply: t.field({
    type: DiscussionMessageRef,
    nullable: true,
    description: 'Adds a message at the end of a thread (member).',
    args: { threadId: t.arg.id({ required: true }), body: t.arg.string({ required: true, description: body }) },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) => reply(ctx.prisma, call, { threadId: String(args.threadId), body: args.body })),
  }),
  editMessage: t.field({
    type: DiscussionMessageRef,
    nullable: true,
    description: 'A new body for a message (its author, or an admin).',
    args: { messageId: t.arg.id({ required: true }), body: t.arg.string({ required: true, description: body }) },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) => editMessage(ctx.prisma, call, { messageId: String(args.messageId), body: args.body })),
  }),
  deleteMessage: t.field({
    type: DiscussionMessageRef,
    nullable: true,
    description: 'Deletes a message (its author, or an admin): it stays in its place without its body.',
    args: { messageId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) => deleteMessage(ctx.prisma, call, { messageId: String(args.messageId) })),
  }),
  resolveThread: t.field({
    type: DiscussionThreadRef,
    nullable: true,
    description: 'Resolves a thread (its author, or an admin); a resolved objection no longer cautions the metric.',
    args: { threadId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) => resolveThread(ctx.prisma, call, { threadId: String(args.threadId) })),
  }),
  reopenThread: t.field({
    type: DiscussionThreadRef,
    nullable: true,
    description: 'Reopens a resolved thread (its author, or an admin).',
    args: { threadId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) => reopenThread(ctx.prisma, call, { threadId: String(args.threadId) })),
  }),
  pinMessage: t.field({
    type: DiscussionMessageRef,
    nullable: true,
    description: 'Pins a message as a note for agents (admin): the contract serves the newest 10 pinned notes.',
    args: { messageId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) => pinMessage(ctx.prisma, call, { messageId: String(args.messageId) })),
  }),
  unpinMessage: t.field({
    type: DiscussionMessageRef,
    nullable: true,
    description: 'Unpins a message (admin).',
    args: { messageId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) => unpinMessage(ctx.prisma, call, { messageId: String(args.messageId) })),
  }),
  openChallenge: t.field({
    type: ChallengeRef,
    nullable: true,
    description: "Challenges a metric's definition (member).",
    args: { metricId: t.arg.id({ required: true }), reason: t.arg.string({ required: true, description: reason }) },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) => openChallenge(ctx.prisma, call, { metricId: String(args.metricId), reason: args.reason })),
  }),
  decideChallenge: t.field({
    type: ChallengeRef,
    nullable: true,
    description: 'Accepts or rejects an open challenge, with a reason (admin). A decision is final.',
    args: {
      challengeId: t.arg.id({ required: true }),
      decision: t.arg({ type: ChallengeDecisionEnum, required: true }),
      reason: t.arg.string({ required: true, description: reason }),
    },
    resolve: (_root, args, ctx) =>
      write(ctx, (call) =>
        decideChallenge(ctx.prisma, call, {
          challengeId: String(args.challengeId),
          decision: args.decision,
          reason: args.reason,
        }),
      ),
  }),
}));
