/**
 * Threads and their messages (docs/discussions.md): open a thread with its
 * first message, reply, edit and delete a message (soft: it stays in its
 * place without its body, and leaves the counts), resolve and reopen a
 * thread. One implementation for GraphQL's mutations and the REST routes
 * (which run those mutations). A write that finds nothing to do (the same
 * body again, a thread already resolved) writes nothing and records no
 * event: bots may repeat themselves.
 */
import { randomUUID } from 'node:crypto';
import { errors, HttpError } from '../errors.js';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import { isUuid } from '../uuid.js';
import { type Actor, authorColumns, requireAuthorOrAdmin, requireMember } from './actor.js';
import { checkBody, checkIntent, checkTitle } from './limits.js';
import { type MessageRow, readMessage, readThread, type ThreadRow } from './read.js';
import { type DiscussionCall, inDiscussionTransaction } from './write.js';

type Tx = Prisma.TransactionClient;

/** A metric of the organization, or 404. */
export async function metricOf(tx: Tx, orgId: string, metricId: string): Promise<{ id: string }> {
  const metric = isUuid(metricId)
    ? await tx.metric.findFirst({ where: { id: metricId.toLowerCase(), orgId }, select: { id: true } })
    : null;
  if (!metric) throw new HttpError(errors.metricNotFound);
  return metric;
}

interface ThreadState {
  id: string;
  metricId: string;
  intent: string;
  resolutionStatus: 'open' | 'resolved';
  authorUserId: string | null;
  authorTokenId: string | null;
}

/** A message of `actor` at the end of a thread. */
async function insertMessage(
  tx: Tx,
  message: { id: string; threadId: string; metricId: string; actor: Actor; body: string; now: Date },
): Promise<void> {
  const author = authorColumns(message.actor);
  await tx.message.create({
    data: {
      id: message.id,
      threadId: message.threadId,
      metricId: message.metricId,
      authorUserId: author.userId,
      authorTokenId: author.tokenId,
      body: message.body,
      createdAt: message.now,
      updatedAt: message.now,
    },
  });
}

async function threadOf(tx: Tx, orgId: string, threadId: string): Promise<ThreadState> {
  const thread = isUuid(threadId)
    ? await tx.thread.findFirst({
        where: { id: threadId.toLowerCase(), metric: { orgId } },
        select: {
          id: true,
          metricId: true,
          intent: true,
          resolutionStatus: true,
          authorUserId: true,
          authorTokenId: true,
        },
      })
    : null;
  if (!thread) throw new HttpError(errors.threadNotFound);
  return thread;
}

interface MessageState {
  id: string;
  threadId: string;
  metricId: string;
  body: string;
  authorUserId: string | null;
  authorTokenId: string | null;
  deletedAt: Date | null;
  pinnedAt: Date | null;
  thread: { intent: string };
}

/** A message of the organization, with its thread's intent, or 404. */
export async function messageOf(tx: Tx, orgId: string, messageId: string): Promise<MessageState> {
  const message = isUuid(messageId)
    ? await tx.message.findFirst({
        where: { id: messageId.toLowerCase(), metric: { orgId } },
        select: {
          id: true,
          threadId: true,
          metricId: true,
          body: true,
          authorUserId: true,
          authorTokenId: true,
          deletedAt: true,
          pinnedAt: true,
          thread: { select: { intent: true } },
        },
      })
    : null;
  if (!message) throw new HttpError(errors.messageNotFound);
  return message;
}

/** The row a write answers with, read in its transaction (it is there: the write just found or made it). */
export async function written<T>(read: Promise<T | null>): Promise<T> {
  const row = await read;
  if (row === null) throw new Error('a discussion row vanished inside its own transaction');
  return row;
}

const by = (state: { authorUserId: string | null; authorTokenId: string | null }) => ({
  userId: state.authorUserId,
  tokenId: state.authorTokenId,
});

const messageDetail = (message: { id: string; threadId: string; thread: { intent: string } }) => ({
  thread_id: message.threadId,
  message_id: message.id,
  intent: message.thread.intent,
});

export interface OpenThreadInput {
  metricId: string;
  intent: string;
  title: string;
  body: string;
}

/** A new thread on a metric with its first message; an objection cautions the metric's verdict at once. */
export async function openThread(
  prisma: PrismaClient,
  call: DiscussionCall,
  input: OpenThreadInput,
): Promise<ThreadRow> {
  requireMember(call.actor);
  const intent = checkIntent(input.intent);
  const title = checkTitle(input.title);
  const body = checkBody(input.body);
  return inDiscussionTransaction(prisma, call, async (tx, now) => {
    const metric = await metricOf(tx, call.orgId, input.metricId);
    const author = authorColumns(call.actor);
    const threadId = randomUUID();
    const messageId = randomUUID();
    await tx.thread.create({
      data: {
        id: threadId,
        metricId: metric.id,
        intent,
        resolutionStatus: 'open',
        title,
        createdAt: now,
        authorUserId: author.userId,
        authorTokenId: author.tokenId,
      },
    });
    await insertMessage(tx, { id: messageId, threadId, metricId: metric.id, actor: call.actor, body, now });
    return {
      value: await written(readThread(tx, call.orgId, threadId)),
      changes: [
        {
          metricId: metric.id,
          action: 'thread_opened',
          detail: { thread_id: threadId, message_id: messageId, intent },
          objections: intent === 'objection',
        },
      ],
    };
  });
}

/** A reply at the end of a thread (resolved threads take replies too: resolving is not locking). */
export async function reply(
  prisma: PrismaClient,
  call: DiscussionCall,
  input: { threadId: string; body: string },
): Promise<MessageRow> {
  requireMember(call.actor);
  const body = checkBody(input.body);
  return inDiscussionTransaction(prisma, call, async (tx, now) => {
    const thread = await threadOf(tx, call.orgId, input.threadId);
    const messageId = randomUUID();
    await insertMessage(tx, {
      id: messageId,
      threadId: thread.id,
      metricId: thread.metricId,
      actor: call.actor,
      body,
      now,
    });
    return {
      value: await written(readMessage(tx, call.orgId, messageId)),
      changes: [
        {
          metricId: thread.metricId,
          action: 'replied',
          detail: { thread_id: thread.id, message_id: messageId, intent: thread.intent },
          objections: false,
        },
      ],
    };
  });
}

/** A new body for a message, by its author or an admin; a deleted message is not edited (409). */
export async function editMessage(
  prisma: PrismaClient,
  call: DiscussionCall,
  input: { messageId: string; body: string },
): Promise<MessageRow> {
  requireMember(call.actor);
  const body = checkBody(input.body);
  return inDiscussionTransaction(prisma, call, async (tx, now) => {
    const message = await messageOf(tx, call.orgId, input.messageId);
    requireAuthorOrAdmin(call.actor, by(message));
    if (message.deletedAt) throw new HttpError(errors.discussionConflict('A deleted message cannot be edited'));
    const changed = message.body !== body;
    if (changed) {
      await tx.message.update({ where: { id: message.id }, data: { body, editedAt: now, updatedAt: now } });
    }
    return {
      value: await written(readMessage(tx, call.orgId, message.id)),
      changes: changed
        ? [{ metricId: message.metricId, action: 'edited', detail: messageDetail(message), objections: false }]
        : [],
    };
  });
}

/**
 * Deletes a message, by its author or an admin: it stays in its thread's
 * list without its body, no longer counts among the contract's messages,
 * and a pinned one stops being a note (its pin goes with it).
 */
export async function deleteMessage(
  prisma: PrismaClient,
  call: DiscussionCall,
  input: { messageId: string },
): Promise<MessageRow> {
  requireMember(call.actor);
  return inDiscussionTransaction(prisma, call, async (tx, now) => {
    const message = await messageOf(tx, call.orgId, input.messageId);
    requireAuthorOrAdmin(call.actor, by(message));
    const changed = message.deletedAt === null;
    if (changed) {
      await tx.message.update({
        where: { id: message.id },
        data: { deletedAt: now, pinnedAt: null, pinnedByUserId: null },
      });
    }
    return {
      value: await written(readMessage(tx, call.orgId, message.id)),
      changes: changed
        ? [{ metricId: message.metricId, action: 'deleted', detail: messageDetail(message), objections: false }]
        : [],
    };
  });
}

/** Resolves (or reopens) a thread, by its author or an admin; an objection's moves the metric's verdict. */
async function setResolution(
  prisma: PrismaClient,
  call: DiscussionCall,
  threadId: string,
  status: 'open' | 'resolved',
): Promise<ThreadRow> {
  requireMember(call.actor);
  return inDiscussionTransaction(prisma, call, async (tx, now) => {
    const thread = await threadOf(tx, call.orgId, threadId);
    requireAuthorOrAdmin(call.actor, by(thread));
    const changed = thread.resolutionStatus !== status;
    if (changed) {
      const resolver = authorColumns(call.actor);
      const resolved = status === 'resolved';
      await tx.thread.update({
        where: { id: thread.id },
        data: {
          resolutionStatus: status,
          resolvedAt: resolved ? now : null,
          resolvedByUserId: resolved ? resolver.userId : null,
          resolvedByTokenId: resolved ? resolver.tokenId : null,
        },
      });
    }
    return {
      value: await written(readThread(tx, call.orgId, thread.id)),
      changes: changed
        ? [
            {
              metricId: thread.metricId,
              action: status === 'resolved' ? 'resolved' : 'reopened',
              detail: { thread_id: thread.id, intent: thread.intent },
              objections: thread.intent === 'objection',
            },
          ]
        : [],
    };
  });
}

export const resolveThread = (prisma: PrismaClient, call: DiscussionCall, input: { threadId: string }) =>
  setResolution(prisma, call, input.threadId, 'resolved');

export const reopenThread = (prisma: PrismaClient, call: DiscussionCall, input: { threadId: string }) =>
  setResolution(prisma, call, input.threadId, 'open');
