/** `Challenge`: a challenge of a metric's definition, and its decision. */
import { builder } from '../builder.js';
import { CHALLENGE_DECISIONS } from '../discussions/limits.js';
import type { ChallengeRow, Page } from '../discussions/read.js';
import { DiscussionAuthorRef } from './discussion-author.js';
import { ResolutionStatusEnum } from './discussion-thread.js';
import { PaginationRef } from './metric-query.js';

export const ChallengeDecisionEnum = builder.enumType('ChallengeDecision', { values: CHALLENGE_DECISIONS });

export const ChallengeRef = builder.objectRef<ChallengeRow>('Challenge').implement({
  description:
    "A challenge of a metric's definition, raised by a member or a bot; an admin accepts or rejects it with a " +
    'reason (then it is resolved). The contract counts them (challenges_count, open_challenges_count).',
  fields: (t) => ({
    id: t.exposeID('id'),
    metricId: t.exposeID('metricId'),
    status: t.expose('status', { type: ResolutionStatusEnum }),
    reason: t.exposeString('reason', { description: 'Markdown as written.' }),
    raisedBy: t.expose('raisedBy', { type: DiscussionAuthorRef, nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    decision: t.expose('decision', { type: ChallengeDecisionEnum, nullable: true }),
    decisionReason: t.exposeString('decisionReason', { nullable: true }),
    decidedBy: t.expose('decidedBy', { type: DiscussionAuthorRef, nullable: true }),
    decidedAt: t.expose('decidedAt', { type: 'DateTime', nullable: true }),
  }),
});

export const ChallengePageRef = builder.objectRef<Page<ChallengeRow>>('ChallengePage').implement({
  description: 'A page of a metric’s challenges, newest first.',
  fields: (t) => ({
    items: t.field({ type: [ChallengeRef], resolve: (page) => page.items }),
    pagination: t.field({ type: PaginationRef, resolve: ({ page, pageSize, total }) => ({ page, pageSize, total }) }),
  }),
});
