/**
 * Pinned notes for agents (docs/discussions.md): an admin or owner pins a
 * message, and the contract serves the metric's newest pinned messages (at
 * most 10 a response, newest pin first) as `agent_context_notes`, each
 * naming its author; the pin names who pinned it. Any number of messages may
 * be pinned: the limit is on what a response serves, not on writes. A
 * deleted message cannot be pinned.
 */
import { errors, HttpError } from '../errors.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { requireAdmin } from './actor.js';
import { type MessageRow, readMessage } from './read.js';
import { messageOf, written } from './threads.js';
import { type DiscussionCall, inDiscussionTransaction } from './write.js';

async function setPin(
  prisma: PrismaClient,
  call: DiscussionCall,
  messageId: string,
  pinned: boolean,
): Promise<MessageRow> {
  requireAdmin(call.actor);
  return inDiscussionTransaction(prisma, call, async (tx, now) => {
    const message = await messageOf(tx, call.orgId, messageId);
    if (pinned && message.deletedAt)
      throw new HttpError(errors.discussionConflict('A deleted message cannot be pinned'));
    const changed = (message.pinnedAt !== null) !== pinned;
    if (changed) {
      // Admins only: a pin is always a user's.
      const pinnedBy = call.actor.kind === 'user' ? call.actor.userId : null;
      await tx.message.update({
        where: { id: message.id },
        data: pinned ? { pinnedAt: now, pinnedByUserId: pinnedBy } : { pinnedAt: null, pinnedByUserId: null },
      });
    }
    return {
      value: await written(readMessage(tx, call.orgId, message.id)),
      changes: changed
        ? [
            {
              metricId: message.metricId,
              action: pinned ? 'pinned' : 'unpinned',
              detail: { thread_id: message.threadId, message_id: message.id, intent: message.thread.intent },
              objections: false,
            },
          ]
        : [],
    };
  });
}

export const pinMessage = (prisma: PrismaClient, call: DiscussionCall, input: { messageId: string }) =>
  setPin(prisma, call, input.messageId, true);

export const unpinMessage = (prisma: PrismaClient, call: DiscussionCall, input: { messageId: string }) =>
  setPin(prisma, call, input.messageId, false);
