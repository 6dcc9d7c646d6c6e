/** The Metric type: list item, detail and agent-contract fields. */
import { GraphQLError, type GraphQLResolveInfo } from 'graphql';
import { builder } from '../builder.js';
import {
  BUSINESS_DEFINITION_COLUMNS,
  BUSINESS_DEFINITION_STATUSES,
  businessDefinitionStatus,
} from '../metric/business-definition.js';
import type { MetricField, MetricRow, SelectedMetric } from '../metric/columns.js';
import { legacyStatus } from '../metric/lifecycle.js';
import { CARRIED_TARGET_FIELDS } from '../metric/parts.js';
import { summarize } from '../summaries/service.js';
import { AgentContextNoteRef, ApprovedVersionRef, DisambiguationRef, DiscourseSummaryRef } from './agent-context.js';
import { ApprovalRef } from './approval.js';
import { CONTRACT_SCOPE_NOTE, requireContractScope } from './contract-scope.js';
import { DiscussionSummaryRef } from './discussion-summary.js';
import { LifecycleStatusEnum, MetricScopeEnum } from './enums.js';
import { MetricRelationshipRef } from './metric-relationship.js';
import { planMetricRead } from './metric-selection.js';
import { MetricVersionRef } from './metric-version.js';

/**
 * A field of the metric row. The Metric type is over the row the read layer
 * returns (src/metric/columns.ts, `SelectedMetric`): only the fields that
 * src/schema/metric-selection.ts planned for the selection are read, so the
 * Pothos prisma plugin's `prismaObject('Metric')`, whose parent type is the
 * whole model, would claim fields that are not there.
 */
function column<K extends MetricField>(metric: SelectedMetric, field: K): MetricRow[K] {
  const row: Partial<MetricRow> = metric;
  const value = row[field];
  if (value === undefined) throw new Error(`Metric.${field} was not read`);
  return value;
}

/**
 * A GraphQL field that is the row's field `field`: typed by {@link column}.
 * Marked as exposed (Pothos's own `t.expose*` marker), so a GraphQL field of
 * the same name runs GraphQL's default resolver, which graphql-jit compiles
 * into a property read instead of a call per field and row (about 50 per
 * detail). There a field that was not read is a null: an error on a non-null
 * field, a silent null on a nullable one; test/graphql/metric-selection.test.ts
 * asks every field alone and compares it with the whole metric, so the plan
 * is held by the test, and a field of another name (`currentVersion`) keeps
 * the checked resolver.
 */
const fromRow = <K extends MetricField>(field: K) => ({
  resolve: (metric: SelectedMetric) => column(metric, field),
  extensions: { pothosExposedField: field },
});

const ExecutionContextRef = builder.objectRef<SelectedMetric>('ExecutionContext').implement({
  fields: (t) => ({
    resolvedParameters: t.field({ type: 'JSON', ...fromRow('resolvedParameters') }),
    renderedSqlExamples: t.field({ type: 'JSON', ...fromRow('renderedSqlExamples') }),
    latestClosedPeriod: t.field({ type: 'JSON', nullable: true, ...fromRow('latestClosedPeriod') }),
  }),
});

const GovernanceFactsRef = builder.objectRef<SelectedMetric>('GovernanceFacts').implement({
  description: 'Governance facts of the metric; each null when unknown.',
  fields: (t) => ({
    ownerTeam: t.string({ nullable: true, ...fromRow('ownerTeam') }),
    approverRole: t.string({ nullable: true, ...fromRow('approverRole') }),
    approverUser: t.string({ nullable: true, ...fromRow('approverUser') }),
    approvedAt: t.string({ nullable: true, ...fromRow('approvedAt') }),
    lifecycleStatus: t.field({ type: LifecycleStatusEnum, nullable: true, ...fromRow('lifecycleStatus') }),
    currentVersion: t.string({ nullable: true, ...fromRow('definitionVersion') }),
    effectiveFrom: t.string({ nullable: true, ...fromRow('effectiveFrom') }),
    effectiveTo: t.string({ nullable: true, ...fromRow('effectiveTo') }),
    nextReviewDate: t.string({ nullable: true, ...fromRow('nextReviewDate') }),
  }),
});

const BusinessDefinitionRef = builder.objectRef<SelectedMetric>('BusinessDefinition').implement({
  fields: (t) => ({
    included: t.string({ ...fromRow('bdIncluded') }),
    excluded: t.string({ ...fromRow('bdExcluded') }),
    timeWindow: t.string({ ...fromRow('bdTimeWindow') }),
    caveats: t.string({ ...fromRow('bdCaveats') }),
    legacyDescription: t.string({ ...fromRow('bdLegacyDescription') }),
  }),
});

const BusinessDefinitionStatusEnum = builder.enumType('BusinessDefinitionStatus', {
  description: 'defined: a member of the business definition says something; empty: every member is blank.',
  values: BUSINESS_DEFINITION_STATUSES,
});

/** Whether a field is resolved for an element of a list (its path crosses a list index). */
export function insideList(path: GraphQLResolveInfo['path'] | undefined): boolean {
  for (let step = path; step; step = step.prev) if (typeof step.key === 'number') return true;
  return false;
}

/** Supporting reads are nullable: null means the read failed, not "none". */
const supporting = { nullable: true } as const;

export const MetricRef = builder.objectRef<SelectedMetric>('Metric').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    orgId: t.exposeID('orgId'),
    projectId: t.id({ ...fromRow('projectId') }),
    domainId: t.id({ nullable: true, ...fromRow('domainId') }),
    key: t.string({ ...fromRow('key') }),
    name: t.string({ ...fromRow('name') }),
    description: t.string({ ...fromRow('description') }),
    metricType: t.string({ ...fromRow('metricType') }),
    definitionVersion: t.string({ ...fromRow('definitionVersion') }),
    status: t.string({
      description: 'Legacy status (draft, review, approved, deprecated), derived from lifecycleStatus.',
      resolve: (metric) => legacyStatus(column(metric, 'lifecycleStatus')),
    }),
    lifecycleStatus: t.field({ type: LifecycleStatusEnum, ...fromRow('lifecycleStatus') }),
    policyTier: t.string({ ...fromRow('policyTier') }),
    ownerTeam: t.string({ ...fromRow('ownerTeam') }),
    ownerDisplayName: t.string({ nullable: true, ...fromRow('ownerDisplayName') }),
    scope: t.field({ type: MetricScopeEnum, ...fromRow('scope') }),
    tags: t.stringList({ ...fromRow('tags') }),
    aliases: t.stringList({
      description: 'Other names people use for this metric ("NRR"); searched like the name.',
      ...fromRow('aliases'),
    }),
    conceptName: t.string({ ...fromRow('conceptName') }),
    templateName: t.string({ ...fromRow('templateName') }),
    sqlExpression: t.string({ ...fromRow('sqlExpression') }),
    grains: t.stringList({ ...fromRow('grains') }),
    defaultGrain: t.string({ ...fromRow('defaultGrain') }),
    dimensions: t.field({ type: 'JSON', ...fromRow('dimensions') }),
    filters: t.stringList({ ...fromRow('filters') }),
    sourceRefs: t.field({ type: 'JSON', ...fromRow('sourceRefs') }),
    expression: t.field({ type: 'JSON', nullable: true, ...fromRow('expression') }),
    dependencies: t.field({ type: 'JSON', nullable: true, ...fromRow('dependencies') }),
    createdAt: t.field({ type: 'DateTime', ...fromRow('createdAt') }),
    updatedAt: t.field({ type: 'DateTime', ...fromRow('updatedAt') }),

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
    timeSemantics: t.field({ type: 'JSON', nullable: true, ...fromRow('timeSemantics') }),
    deprecatedFramingRules: t.field({ type: 'JSON', ...fromRow('deprecatedFramingRules') }),
    dimensionMap: t.field({ type: 'JSON', ...fromRow('dimensionMap') }),
    columnAliases: t.field({ type: 'JSON', ...fromRow('columnAliases') }),
    executionContext: t.field({ type: ExecutionContextRef, resolve: (metric) => metric }),
    governanceFacts: t.field({ type: GovernanceFactsRef, resolve: (metric) => metric }),
    approvalState: t.field({ type: 'JSON', nullable: true, ...fromRow('approvalState') }),
    consumerContexts: t.field({ type: 'JSON', ...fromRow('consumerContexts') }),
    policyExamples: t.field({ type: 'JSON', ...fromRow('policyExamples') }),
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
    businessDefinition: t.field({
      type: BusinessDefinitionRef,
      description: CONTRACT_SCOPE_NOTE,
      resolve: (metric, _args, ctx) => {
        requireContractScope(ctx);
        return metric;
      },
    }),
    businessDefinitionStatus: t.field({
      type: BusinessDefinitionStatusEnum,
      description: `Whether the business definition says anything (empty: its members are blank, not data). ${CONTRACT_SCOPE_NOTE}`,
      resolve: (metric, _args, ctx) => {
        requireContractScope(ctx);
        return businessDefinitionStatus(BUSINESS_DEFINITION_COLUMNS.map((field) => column(metric, field)));
      },
    }),
    currentApprovedVersion: t.field({
      type: ApprovedVersionRef,
      nullable: true,
      description: CONTRACT_SCOPE_NOTE,
      resolve: async (metric, _args, ctx) => {
        requireContractScope(ctx);
        return (await ctx.loaders.stats.load(metric.id)).currentApprovedVersion;
      },
    }),
    lastValidatedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: `When the latest warehouse validation ran; null when none did. ${CONTRACT_SCOPE_NOTE}`,
      resolve: async (metric, _args, ctx) => {
        requireContractScope(ctx);
        return (await ctx.loaders.stats.load(metric.id)).lastValidatedAt;
      },
    }),
    challengesCount: t.int({
      ...supporting,
      description: CONTRACT_SCOPE_NOTE,
      resolve: async (metric, _args, ctx) => {
        requireContractScope(ctx);
        return (await ctx.loaders.stats.load(metric.id)).challengesCount;
      },
    }),
    openChallengesCount: t.int({
      ...supporting,
      description: CONTRACT_SCOPE_NOTE,
      resolve: async (metric, _args, ctx) => {
        requireContractScope(ctx);
        return (await ctx.loaders.stats.load(metric.id)).openChallengesCount;
      },
    }),
    discussionThreadCount: t.int({
      ...supporting,
      description: `Threads on the metric, every intent and resolution status. ${CONTRACT_SCOPE_NOTE}`,
      resolve: async (metric, _args, ctx) => {
        requireContractScope(ctx);
        return (await ctx.loaders.discussion.load(metric.id)).threadCount;
      },
    }),
    discussionMessageCount: t.int({
      ...supporting,
      description: `Messages that are not deleted, across all threads. ${CONTRACT_SCOPE_NOTE}`,
      resolve: async (metric, _args, ctx) => {
        requireContractScope(ctx);
        return (await ctx.loaders.discussion.load(metric.id)).messageCount;
      },
    }),
    agentContextNotes: t.field({
      type: [AgentContextNoteRef],
      ...supporting,
      description: `Pinned, non-deleted messages, most recently pinned first, at most 10. ${CONTRACT_SCOPE_NOTE}`,
      resolve: (metric, _args, ctx) => {
        requireContractScope(ctx);
        return ctx.loaders.agentContextNotes.load(metric.id);
      },
    }),
    discourseSummary: t.field({
      type: DiscourseSummaryRef,
      nullable: true,
      description: `null when no thread has intent objection or proposal. ${CONTRACT_SCOPE_NOTE}`,
      resolve: async (metric, _args, ctx) => {
        requireContractScope(ctx);
        return (await ctx.loaders.discussion.load(metric.id)).discourse;
      },
    }),
    discussionSummary: t.field({
      type: DiscussionSummaryRef,
      ...supporting,
      description:
        'Summary of the discussion, from the cache or generated on a miss (billed to the organization of the ' +
        'key or session on paid plans). null with an error when the discussion could not be read. ' +
        'Only on `metric(id)`: asking it of every item of a list could generate and bill one summary per metric. ' +
        CONTRACT_SCOPE_NOTE,
      resolve: async (metric, _args, ctx, info) => {
        requireContractScope(ctx);
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
      description: `The signed-in product page of the metric (not a public URL). ${CONTRACT_SCOPE_NOTE}`,
      resolve: (metric, _args, ctx) => {
        requireContractScope(ctx);
        return `${ctx.config.publicAppUrl.replace(/\/+$/, '')}/${ctx.principal.org.slug}/metrics/${metric.id}`;
      },
    }),
  }),
});

function subsetOf<T>(set: ReadonlySet<T>, of: ReadonlySet<T>): boolean {
  for (const item of set) if (!of.has(item)) return false;
  return true;
}

builder.objectField(MetricRelationshipRef, 'target', (t) =>
  t.field({
    type: MetricRef,
    resolve: async (relationship, _args, ctx, info) => {
      const { fields } = planMetricRead(info);
      // The relationship carries its target's key fields; any other field is read by the loader.
      const target =
        relationship.target && fields && subsetOf(fields, CARRIED_TARGET_FIELDS)
          ? relationship.target
          : await ctx.loaders.metrics(fields).load(relationship.targetMetricId);
      // Fixture loading keeps both ends of a relationship in one organization.
      if (!target) throw new Error(`relationship ${relationship.id} names a metric outside the organization`);
      return target;
    },
  }),
);
