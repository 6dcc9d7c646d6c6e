/** The plain (non-Prisma) object types of the agent contract. */
import { builder } from '../builder.js';
import type {
  AgentContextNote,
  CurrentApprovedVersion,
  DisambiguationCandidate,
  MetricDiscussion,
} from '../metric/parts.js';

export const ApprovedVersionRef = builder.objectRef<CurrentApprovedVersion>('ApprovedVersion').implement({
  description: 'The released or approved version with the latest released_at.',
  fields: (t) => ({
    id: t.exposeID('id'),
    definitionVersion: t.exposeString('definitionVersion'),
    releasedAt: t.expose('releasedAt', { type: 'DateTime', nullable: true }),
  }),
});

export const AgentContextNoteRef = builder.objectRef<AgentContextNote>('AgentContextNote').implement({
  description: 'An admin-pinned discussion message that agents should read with the definition.',
  fields: (t) => ({
    messageId: t.exposeID('id'),
    threadId: t.exposeID('threadId'),
    intent: t.exposeString('intent'),
    authorDisplayName: t.exposeString('authorDisplayName'),
    body: t.exposeString('body'),
    pinnedAt: t.expose('pinnedAt', { type: 'DateTime' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

export const DiscourseSummaryRef = builder
  .objectRef<NonNullable<MetricDiscussion['discourse']>>('DiscourseSummary')
  .implement({
    fields: (t) => ({
      openObjectionsCount: t.exposeInt('openObjectionsCount'),
      openProposalsCount: t.exposeInt('openProposalsCount'),
      lastActivityAt: t.expose('lastActivityAt', { type: 'DateTime', nullable: true }),
    }),
  });

const DisambiguationCandidateRef = builder.objectRef<DisambiguationCandidate>('DisambiguationCandidate').implement({
  fields: (t) => ({
    metricId: t.exposeID('metricId'),
    key: t.exposeString('key'),
    name: t.exposeString('name'),
    lifecycleStatus: t.exposeString('lifecycleStatus'),
    relation: t.exposeString('relation', {
      description:
        'How the candidate relates to this metric: variant_of (this is a variant of it), has_variant, ' +
        'supersedes (this replaces it), superseded_by (it replaces this), conflicts_with',
    }),
  }),
});

export const DisambiguationRef = builder.objectRef<DisambiguationCandidate[]>('Disambiguation').implement({
  description: 'Other metrics a consumer could confuse with this one; null on the metric when there are none.',
  fields: (t) => ({
    preferredMetricId: t.id({
      nullable: true,
      description: 'The metric that supersedes this one, when there is one: use it instead.',
      resolve: (candidates) => candidates.find((c) => c.relation === 'superseded_by')?.metricId ?? null,
    }),
    candidates: t.field({ type: [DisambiguationCandidateRef], resolve: (candidates) => candidates }),
  }),
});
