/**
 * Challenges of a metric's definition (docs/discussions.md): a member (or a
 * bot) raises one with a reason, and an admin or owner accepts or rejects
 * it, with a reason; the decision is final (deciding again is 409). The
 * contract counts them (`challenges_count`, `open_challenges_count`); they do
 * not enter the trust verdict.
 */
import { randomUUID } from 'node:crypto';
import { errors, HttpError } from '../errors.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { isUuid } from '../uuid.js';
import { authorColumns, requireAdmin, requireMember } from './actor.js';
import { checkDecision, checkReason } from './limits.js';
import { type ChallengeRow, readChallenge } from './read.js';
import { metricOf, written } from './threads.js';
import { type DiscussionCall, inDiscussionTransaction } from './write.js';

export async function openChallenge(
  prisma: PrismaClient,
  call: DiscussionCall,
  input: { metricId: string; reason: string },
): Promise<ChallengeRow> {
  requireMember(call.actor);
  const reason = checkReason(input.reason);
  return inDiscussionTransaction(prisma, call, async (tx, now) => {
    const metric = await metricOf(tx, call.orgId, input.metricId);
    const raisedBy = authorColumns(call.actor);
    const id = randomUUID();
    await tx.challenge.create({
      data: {
        id,
        metricId: metric.id,
        status: 'open',
        reason,
        createdAt: now,
        raisedByUserId: raisedBy.userId,
        raisedByTokenId: raisedBy.tokenId,
      },
    });
    return {
      value: await written(readChallenge(tx, call.orgId, id)),
      changes: [{ metricId: metric.id, action: 'challenge_opened', detail: { challenge_id: id }, objections: false }],
    };
  });
}

export async function decideChallenge(
  prisma: PrismaClient,
  call: DiscussionCall,
  input: { challengeId: string; decision: string; reason: string },
): Promise<ChallengeRow> {
  requireAdmin(call.actor);
  const decision = checkDecision(input.decision);
  const reason = checkReason(input.reason);
  return inDiscussionTransaction(prisma, call, async (tx, now) => {
    const challenge = isUuid(input.challengeId)
      ? await tx.challenge.findFirst({
          where: { id: input.challengeId.toLowerCase(), metric: { orgId: call.orgId } },
          select: { id: true, metricId: true, status: true, decision: true },
        })
      : null;
    if (!challenge) throw new HttpError(errors.challengeNotFound);
    if (challenge.status !== 'open') {
      throw new HttpError(
        errors.discussionConflict(
          challenge.decision ? `The challenge was ${challenge.decision} already` : 'The challenge is resolved already',
        ),
      );
    }
    await tx.challenge.update({
      where: { id: challenge.id },
      data: {
        status: 'resolved',
        decision,
        decisionReason: reason,
        decidedAt: now,
        decidedByUserId: call.actor.kind === 'user' ? call.actor.userId : null,
      },
    });
    return {
      value: await written(readChallenge(tx, call.orgId, challenge.id)),
      changes: [
        {
          metricId: challenge.metricId,
          action: 'challenge_decided',
          detail: { challenge_id: challenge.id, decision },
          objections: false,
        },
      ],
    };
  });
}
