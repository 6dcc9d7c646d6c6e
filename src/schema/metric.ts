/** The Metric type: list item, detail and agent-contract fields. */
import { GraphQLError, type GraphQLResolveInfo } from 'graphql';
import { builder } from '../builder.js';
import type { Metric } from '../generated/prisma/client.js';
import { legacyStatus } from '../metric/lifecycle.js';
import { summarize } from '../summaries/service.js';
import { AgentContextNoteRef, ApprovedVersionRef, DisambiguationRef, DiscourseSummaryRef } from './agent-context.js';
import { ApprovalRef } from './approval.js';
import { DiscussionSummaryRef } from './discussion-summary.js';
import { LifecycleStatusEnum, MetricScopeEnum } from './enums.js';
import { MetricRelationshipRef } from './metric-relationship.js';
import { planMetricRead } from './metric-selection.js';
import { MetricVersionRef } from './metric-version.js';

const ExecutionContextRef = builder.objectRef<Metric>('ExecutionContext').implement({
  fields: (t) => ({
    resolvedParameters: t.expose('resolvedParameters', { type: 'JSON' }),
    renderedSqlExamples: t.expose('renderedSqlExamples', { type: 'JSON' }),
    latestClosedPeriod: t.expose('latestClosedPeriod', { type: 'JSON', nullable: true }),
  }),
});

const GovernanceFactsRef = builder.objectRef<Metric>('GovernanceFacts').implement({
  description: 'Governance facts of the metric; each null when unknown.',
  fields: (t) => ({
    ownerTeam: t.exposeString('ownerTeam', { nullable: true }),
    approverRole: t.exposeString('approverRole', { nullable: true }),
    approverUser: t.exposeString('approverUser', { nullable: true }),
    approvedAt: t.exposeString('approvedAt', { nullable: true }),
    lifecycleStatus: t.expose('lifecycleStatus', { type: LifecycleStatusEnum, nullable: true }),
    currentVersion: t.exposeString('definitionVersion', { nullable: true }),
    effectiveFrom: t.exposeString('effectiveFrom', { nullable: true }),
    effectiveTo: t.exposeString('effectiveTo', { nullable: true }),
    nextReviewDate: t.exposeString('nextReviewDate', { nullable: true }),
  }),
});

const BusinessDefinitionRef = builder.objectRef<Metric>('BusinessDefinition').implement({
  fields: (t) => ({
    included: t.exposeString('bdIncluded'),
    excluded: t.exposeString('bdExcluded'),
    timeWindow: t.exposeString('bdTimeWindow'),
    caveats: t.exposeString('bdCaveats'),
    legacyDescription: t.exposeString('bdLegacyDescription'),
  }),
});

/** Whether a field is resolved for an element of a list (its path crosses a list index). */
function insideList(path: GraphQLResolveInfo['path'] | undefined): boolean {
  for (let step = path; step; step = step.prev) if (typeof step.key === 'number') return true;
  return false;
}

/** Supporting reads are nullable: null means the read failed, not "none". */
const supporting = { nullable: true } as const;

export const MetricRef = builder.prismaObject('Metric', {
  fields: (t) => ({
    id: t.exposeID('id'),
    orgId: t.exposeID('orgId'),
    projectId: t.exposeID('projectId'),
    domainId: t.exposeID('domainId', { nullable: true }),
    key: t.exposeString('key'),
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    metricType: t.exposeString('metricType'),
    definitionVersion: t.exposeString('definitionVersion'),
    status: t.string({
      description: 'Legacy status (draft, review, approved, deprecated), derived from lifecycleStatus.',
      resolve: (metric) => legacyStatus(metric.lifecycleStatus),
    }),
    lifecycleStatus: t.expose('lifecycleStatus', { type: LifecycleStatusEnum }),
    policyTier: t.exposeString('policyTier'),
    ownerTeam: t.exposeString('ownerTeam'),
    ownerDisplayName: t.exposeString('ownerDisplayName', { nullable: true }),
    scope: t.expose('scope', { type: MetricScopeEnum }),
    tags: t.exposeStringList('tags'),
    aliases: t.exposeStringList('aliases', {
      description: 'Other names people use for this metric ("NRR"); searched like the name.',
    }),
    conceptName: t.exposeString('conceptName'),
    templateName: t.exposeString('templateName'),
    sqlExpression: t.exposeString('sqlExpression'),
    grains: t.exposeStringList('grains'),
    defaultGrain: t.exposeString('defaultGrain'),
    dimensions: t.expose('dimensions', { type: 'JSON' }),
    filters: t.exposeStringList('filters'),
    sourceRefs: t.expose('sourceRefs', { type: 'JSON' }),
    expression: t.expose('expression', { type: 'JSON', nullable: true }),
    dependencies: t.expose('dependencies', { type: 'JSON', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),

    relationships: t.field({
      type: [MetricRelationshipRef],
      description: 'Relationships to other metrics, by kind, then target id.',
      resolve: async (metric, _args, ctx) => (await ctx.loaders.relations.load(metric.id)).relationships,
    }),
    approvals: t.field({
      type: [ApprovalRef],
      description: 'Approval decisions, the most recent first.',
      resolve: async (metric, _args, ctx) => (await ctx.loaders.relations.load(metric.id)).approvals,
    }),
    versionHistory: t.field({
      type: [MetricVersionRef],
      description: 'Versions, the most recently released first (unreleased last).',
      resolve: async (metric, _args, ctx) => (await ctx.loaders.relations.load(metric.id)).versions,
    }),
    fiscalCalendarStartMonth: t.int({
      description: "The organization's fiscal calendar start month; 1 means January.",
      resolve: (_metric, _args, ctx) => ctx.principal.org.fiscalCalendarStartMonth,
    }),
    timeSemantics: t.expose('timeSemantics', { type: 'JSON', nullable: true }),
    deprecatedFramingRules: t.expose('deprecatedFramingRules', { type: 'JSON' }),
    dimensionMap: t.expose('dimensionMap', { type: 'JSON' }),
    columnAliases: t.expose('columnAliases', { type: 'JSON' }),
    executionContext: t.field({ type: ExecutionContextRef, resolve: (metric) => metric }),
    governanceFacts: t.field({ type: GovernanceFactsRef, resolve: (metric) => metric }),
    approvalState: t.expose('approvalState', { type: 'JSON', nullable: true }),
    consumerContexts: t.expose('consumerContexts', { type: 'JSON' }),
    policyExamples: t.expose('policyExamples', { type: 'JSON' }),
    requiresDisambiguation: t.field({
      type: DisambiguationRef,
      nullable: true,
      description: 'Variants, supersession and conflicts from registry relationships; null when there are none.',
      resolve: async (metric, _args, ctx) => {
        const candidates = await ctx.loaders.disambiguation.load(metric.id);
        return candidates.length ? candidates : null;
      },
    }),

    // Agent contract
    businessDefinition: t.field({ type: BusinessDefinitionRef, resolve: (metric) => metric }),
    currentApprovedVersion: t.field({
      type: ApprovedVersionRef,
      nullable: true,
      resolve: async (metric, _args, ctx) => (await ctx.loaders.stats.load(metric.id)).currentApprovedVersion,
    }),
    lastValidatedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the latest warehouse validation ran; null when none did.',
      resolve: async (metric, _args, ctx) => (await ctx.loaders.stats.load(metric.id)).lastValidatedAt,
    }),
    challengesCount: t.int({
      ...supporting,
      resolve: async (metric, _args, ctx) => (await ctx.loaders.stats.load(metric.id)).challengesCount,
    }),
    openChallengesCount: t.int({
      ...supporting,
      resolve: async (metric, _args, ctx) => (await ctx.loaders.stats.load(metric.id)).openChallengesCount,
    }),
    discussionThreadCount: t.int({
      ...supporting,
      description: 'Threads on the metric, every intent and resolution status.',
      resolve: async (metric, _args, ctx) => (await ctx.loaders.discussion.load(metric.id)).threadCount,
    }),
    discussionMessageCount: t.int({
      ...supporting,
      description: 'Messages that are not deleted, across all threads.',
      resolve: async (metric, _args, ctx) => (await ctx.loaders.discussion.load(metric.id)).messageCount,
    }),
    agentContextNotes: t.field({
      type: [AgentContextNoteRef],
      ...supporting,
      description: 'Pinned, non-deleted messages, most recently pinned first, at most 10.',
      resolve: (metric, _args, ctx) => ctx.loaders.agentContextNotes.load(metric.id),
    }),
    discourseSummary: t.field({
      type: DiscourseSummaryRef,
      nullable: true,
      description: 'null when no thread has intent objection or proposal.',
      resolve: async (metric, _args, ctx) => (await ctx.loaders.discussion.load(metric.id)).discourse,
    }),
    discussionSummary: t.field({
      type: DiscussionSummaryRef,
      ...supporting,
      description:
        'Summary of the discussion, from the cache or generated on a miss (billed to the organization of the ' +
        'key or session on paid plans). null with an error when the discussion could not be read. ' +
        'Only on `metric(id)`: asking it of every item of a list could generate and bill one summary per metric.',
      resolve: async (metric, _args, ctx, info) => {
        if (insideList(info.path)) {
          throw new GraphQLError('discussionSummary is only available on metric(id), not on lists of metrics');
        }
        const outcome = await summarize(ctx, metric.id).catch((error: unknown) => {
          ctx.metrics.summaries.inc({ outcome: 'discussion_unavailable' });
          throw error;
        });
        ctx.metrics.summaries.inc({
          outcome: outcome.degradedReason ?? (outcome.cacheHit ? 'cache_hit' : 'generated'),
        });
        if (outcome.charged) ctx.metrics.summaryCharges.inc();
        return outcome;
      },
    }),
    canonicalUrl: t.string({
      description: 'The signed-in product page of the metric (not a public URL).',
      resolve: (metric, _args, ctx) =>
        `${ctx.config.publicAppUrl.replace(/\/+$/, '')}/${ctx.principal.org.slug}/metrics/${metric.id}`,
    }),
  }),
});

builder.objectField(MetricRelationshipRef, 'target', (t) =>
  t.field({
    type: MetricRef,
    resolve: async (relationship, _args, ctx, info) => {
      const target = await ctx.loaders.metrics(planMetricRead(info).fields).load(relationship.targetMetricId);
      // Fixture loading keeps both ends of a relationship in one organization.
      if (!target) throw new Error(`relationship ${relationship.id} names a metric outside the organization`);
      return target;
    },
  }),
);
