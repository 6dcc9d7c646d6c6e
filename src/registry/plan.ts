/**
 * The plan of an apply: a pure function of a validated registry document and
 * the registry's state (src/registry/state.ts). It says, metric by metric,
 * what the apply does (`created`, `updated` with the fields that differ,
 * `unchanged`, `absent`, `removed`) and carries the rows it writes, so the
 * same plan is printed, checked (--check, dry run) and applied.
 *
 * Ids are derived, never invented: a new metric's id is the UUIDv5 of the
 * organization id and its key; a version's, of the metric id and its
 * definition_version; an approval's, of the metric id and its identity; a
 * new project's or domain's, of the organization id and its name. A metric
 * already in the registry keeps its id.
 */

import { metricRow } from '../fixtures/rows.js';
import type { FixtureMetric } from '../fixtures/schema.js';
import { Prisma } from '../generated/prisma/client.js';
import { uuidV5 } from '../uuid.js';
import type { RegistryDocument, RegistryMetric } from './document.js';
import { RegistryError, type RegistryProblem } from './registry-error.js';
import type { RegistryState, StoredMetric } from './state.js';

export const PLAN_RESULTS = ['created', 'updated', 'unchanged', 'absent', 'removed'] as const;
export type PlanResult = (typeof PLAN_RESULTS)[number];

export interface PlanEntry {
  key: string;
  result: PlanResult;
  /** document field names, in the document's order of fields; [] unless `updated` */
  changed_fields: string[];
}

type MetricRow = Prisma.MetricCreateManyInput;

/** The rows an apply writes; empty lists when it writes nothing. */
export interface PlanWrites {
  projects: Prisma.ProjectCreateManyInput[];
  domains: Prisma.DomainCreateManyInput[];
  created: MetricRow[];
  updated: { id: string; data: MetricRow }[];
  /** metrics whose versions and approvals are replaced by `versions` and `approvals` */
  governanceOf: string[];
  versions: Prisma.MetricVersionCreateManyInput[];
  approvals: Prisma.ApprovalCreateManyInput[];
  /** metrics whose relationships are replaced by `relationships` */
  relationshipsOf: string[];
  relationships: Prisma.MetricRelationshipCreateManyInput[];
  removed: string[];
}

export interface Plan {
  orgId: string;
  entries: PlanEntry[];
  totals: Record<PlanResult, number>;
  writes: PlanWrites;
  /** whether applying the plan writes anything */
  changes: boolean;
}

/** Each document field and the columns it is stored in. */
const FIELD_COLUMNS: [string, (keyof MetricRow)[]][] = [
  ['project', ['projectId']],
  ['domain', ['domainId']],
  ['name', ['name']],
  ['description', ['description']],
  ['metric_type', ['metricType']],
  ['lifecycle_status', ['lifecycleStatus']],
  ['definition_version', ['definitionVersion']],
  ['policy_tier', ['policyTier']],
  ['owner_team', ['ownerTeam']],
  ['owner_display_name', ['ownerDisplayName']],
  ['scope', ['scope']],
  ['tags', ['tags']],
  ['aliases', ['aliases']],
  ['concept_name', ['conceptName']],
  ['template_name', ['templateName']],
  ['sql_expression', ['sqlExpression']],
  ['grains', ['grains']],
  ['default_grain', ['defaultGrain']],
  ['dimensions', ['dimensions']],
  ['filters', ['filters']],
  ['source_refs', ['sourceRefs']],
  ['expression', ['expression']],
  ['dependencies', ['dependencies']],
  ['business_definition', ['bdIncluded', 'bdExcluded', 'bdTimeWindow', 'bdCaveats', 'bdLegacyDescription']],
  ['time_semantics', ['timeSemantics']],
  ['deprecated_framing_rules', ['deprecatedFramingRules']],
  ['dimension_map', ['dimensionMap']],
  ['column_aliases', ['columnAliases']],
  ['consumer_contexts', ['consumerContexts']],
  ['policy_examples', ['policyExamples']],
  ['execution_context', ['resolvedParameters', 'renderedSqlExamples', 'latestClosedPeriod']],
  ['governance', ['approverRole', 'approverUser', 'approvedAt', 'effectiveFrom', 'effectiveTo', 'nextReviewDate']],
  ['approval_state', ['approvalState']],
];

/**
 * One spelling of a value for comparison: object members sorted (jsonb keeps
 * its own order), dates as ISO strings, SQL NULL as null.
 */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, member: unknown) => {
    if (member === Prisma.DbNull || member === Prisma.JsonNull) return null;
    if (member !== null && typeof member === 'object' && !Array.isArray(member) && !(member instanceof Date)) {
      return Object.fromEntries(Object.entries(member).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return member;
  });
}

const sortedCanonical = (items: unknown[][]) => items.map((item) => canonical(item)).sort();
const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((item, i) => item === b[i]);

interface Resolver {
  state: RegistryState;
  writes: PlanWrites;
  problems: RegistryProblem[];
  idsByKey: Map<string, string>;
}

/** A project or domain id by name, creating one (in the plan) when the organization has none of that name. */
function named(resolver: Resolver, kind: 'project' | 'domain', name: string): string {
  const known = kind === 'project' ? resolver.state.projects : resolver.state.domains;
  const existing = known.get(name);
  if (existing) return existing;
  const id = uuidV5(resolver.state.orgId, `${kind}:${name}`);
  known.set(name, id);
  (kind === 'project' ? resolver.writes.projects : resolver.writes.domains).push({
    id,
    orgId: resolver.state.orgId,
    name,
  });
  return id;
}

function desiredRow(resolver: Resolver, metric: RegistryMetric, id: string, now: string): MetricRow {
  const projectId = named(resolver, 'project', metric.project);
  const domainId = metric.domain === null ? null : named(resolver, 'domain', metric.domain);
  const asFixture: FixtureMetric = {
    ...metric,
    id,
    project_id: projectId,
    domain_id: domainId,
    created_at: now,
    updated_at: now,
    versions: [],
    approvals: [],
    relationships: [],
    validations: [],
    challenges: [],
    threads: [],
  };
  return metricRow(resolver.state.orgId, asFixture);
}

interface Governance {
  versions: Prisma.MetricVersionCreateManyInput[];
  approvals: Prisma.ApprovalCreateManyInput[];
  relationships: Prisma.MetricRelationshipCreateManyInput[];
}

function desiredGovernance(resolver: Resolver, metric: RegistryMetric, m: number, metricId: string): Governance {
  const versionId = (definitionVersion: string) => uuidV5(metricId, `version:${definitionVersion}`);
  const versions = metric.versions.map((version) => ({
    id: versionId(version.definition_version),
    metricId,
    definitionVersion: version.definition_version,
    status: version.status,
    releasedAt: version.released_at === null ? null : new Date(version.released_at),
    changeSummary: version.change_summary,
  }));
  const approvals = metric.approvals.map((approval, a) => {
    let approverUserId: string | null = null;
    if (approval.approver !== null) {
      approverUserId = resolver.state.memberIds.get(approval.approver.toLowerCase()) ?? null;
      if (approverUserId === null) {
        resolver.problems.push({
          path: ['metrics', m, 'approvals', a, 'approver'],
          message: `${approval.approver} is not a member of this organization`,
        });
      }
    }
    const identity = JSON.stringify([approval.definition_version, approval.approver_role, approval.decided_at]);
    return {
      id: uuidV5(metricId, `approval:${identity}`),
      metricId,
      versionId: approval.definition_version === null ? null : versionId(approval.definition_version),
      approverUserId,
      approverRole: approval.approver_role,
      decision: approval.decision,
      decidedAt: new Date(approval.decided_at),
      comment: approval.comment,
    };
  });
  const relationships = metric.relationships.map((relationship) => ({
    metricId,
    kind: relationship.kind,
    targetMetricId: resolver.idsByKey.get(relationship.target) ?? '',
  }));
  return { versions, approvals, relationships };
}

type VersionLike = Pick<Prisma.MetricVersionCreateManyInput, 'definitionVersion' | 'status' | 'changeSummary'> & {
  releasedAt?: Date | string | null;
};
type ApprovalLike = Pick<Prisma.ApprovalCreateManyInput, 'approverRole' | 'decision' | 'comment'> & {
  approverUserId?: string | null;
  decidedAt: Date | string;
};

/** Versions as a reader sees them (not their ids), comparable as a list. */
const versionsIdentity = (versions: VersionLike[]) =>
  sortedCanonical(
    versions.map((v) => [
      v.definitionVersion,
      v.status,
      v.releasedAt ? new Date(v.releasedAt).toISOString() : null,
      v.changeSummary ?? '',
    ]),
  );

/** Approvals likewise, each with the definition_version it approves (`versionOf`). */
const approvalsIdentity = (approvals: ApprovalLike[], versionOf: (i: number) => string | null) =>
  sortedCanonical(
    approvals.map((a, i) => [
      versionOf(i),
      a.approverUserId ?? null,
      a.approverRole,
      a.decision,
      new Date(a.decidedAt).toISOString(),
      a.comment ?? '',
    ]),
  );

function changedFields(desired: MetricRow, stored: StoredMetric): string[] {
  const row = stored as unknown as Record<string, unknown>;
  return FIELD_COLUMNS.filter(([, columns]) =>
    columns.some((column) => canonical(desired[column] ?? null) !== canonical(row[column] ?? null)),
  ).map(([field]) => field);
}

/** Relationship targets must exist after the apply: in the document, or kept in the registry. */
function checkTargets(document: RegistryDocument, state: RegistryState, prune: boolean): RegistryProblem[] {
  const listed = new Set(document.metrics.map((metric) => metric.key));
  const stored = new Set(state.metrics.map((metric) => metric.key));
  const problems: RegistryProblem[] = [];
  document.metrics.forEach((metric, m) => {
    metric.relationships.forEach((relationship, r) => {
      if (listed.has(relationship.target)) return;
      const path = ['metrics', m, 'relationships', r, 'target'];
      if (!stored.has(relationship.target)) {
        problems.push({ path, message: `no metric with key "${relationship.target}" in the document or the registry` });
      } else if (prune) {
        problems.push({
          path,
          message: `metric "${relationship.target}" is not in the document, so prune would remove it`,
        });
      }
    });
  });
  return problems;
}

export interface PlanOptions {
  prune: boolean;
  now: Date;
}

/** The plan of applying `document` to `state`; RegistryError when the document cannot apply to it. */
export function planApply(document: RegistryDocument, state: RegistryState, options: PlanOptions): Plan {
  const now = options.now.toISOString();
  const writes: PlanWrites = {
    projects: [],
    domains: [],
    created: [],
    updated: [],
    governanceOf: [],
    versions: [],
    approvals: [],
    relationshipsOf: [],
    relationships: [],
    removed: [],
  };
  const storedByKey = new Map(state.metrics.map((metric) => [metric.key, metric]));
  const idsByKey = new Map(state.metrics.map((metric) => [metric.key, metric.id]));
  for (const metric of document.metrics) {
    if (!idsByKey.has(metric.key)) idsByKey.set(metric.key, uuidV5(state.orgId, metric.key));
  }
  const problems = checkTargets(document, state, options.prune);
  const resolver: Resolver = {
    state: { ...state, projects: new Map(state.projects), domains: new Map(state.domains) },
    writes,
    problems,
    idsByKey,
  };
  const entries: PlanEntry[] = [];
  document.metrics.forEach((metric, m) => {
    const stored = storedByKey.get(metric.key);
    const id = stored?.id ?? (idsByKey.get(metric.key) as string);
    const row = desiredRow(resolver, metric, id, now);
    const governance = desiredGovernance(resolver, metric, m, id);
    if (!stored) {
      writes.created.push(row);
      writes.versions.push(...governance.versions);
      writes.approvals.push(...governance.approvals);
      writes.relationships.push(...governance.relationships);
      entries.push({ key: metric.key, result: 'created', changed_fields: [] });
      return;
    }
    const fields = changedFields(row, stored);
    const storedVersionNames = new Map(stored.versions.map((v) => [v.id, v.definitionVersion]));
    const versionsDiffer = !sameList(versionsIdentity(governance.versions), versionsIdentity(stored.versions));
    const approvalsDiffer = !sameList(
      approvalsIdentity(governance.approvals, (a) => metric.approvals[a]?.definition_version ?? null),
      approvalsIdentity(stored.approvals, (a) => {
        const versionId = stored.approvals[a]?.versionId;
        return versionId ? (storedVersionNames.get(versionId) ?? versionId) : null;
      }),
    );
    if (versionsDiffer) fields.push('versions');
    if (approvalsDiffer) fields.push('approvals');
    // Approvals point at versions: the two are replaced together.
    if (versionsDiffer || approvalsDiffer) {
      writes.governanceOf.push(id);
      writes.versions.push(...governance.versions);
      writes.approvals.push(...governance.approvals);
    }
    const desiredRelations = sortedCanonical(metric.relationships.map((r) => [r.kind, r.target]));
    const storedRelations = sortedCanonical(stored.relationships.map((r) => [r.kind, r.target.key]));
    if (!sameList(desiredRelations, storedRelations)) {
      fields.push('relationships');
      writes.relationshipsOf.push(id);
      writes.relationships.push(...governance.relationships);
    }
    if (fields.length === 0) {
      entries.push({ key: metric.key, result: 'unchanged', changed_fields: [] });
      return;
    }
    const { createdAt: _created, ...data } = row;
    writes.updated.push({ id, data: { ...data, createdAt: stored.createdAt } });
    entries.push({ key: metric.key, result: 'updated', changed_fields: fields });
  });
  if (problems.length > 0) throw new RegistryError(problems);
  const listed = new Set(document.metrics.map((metric) => metric.key));
  for (const stored of state.metrics) {
    if (listed.has(stored.key)) continue;
    if (options.prune) writes.removed.push(stored.id);
    entries.push({ key: stored.key, result: options.prune ? 'removed' : 'absent', changed_fields: [] });
  }
  const totals = Object.fromEntries(PLAN_RESULTS.map((result) => [result, 0])) as Record<PlanResult, number>;
  for (const entry of entries) totals[entry.result]++;
  const changes = totals.created + totals.updated + totals.removed > 0;
  return { orgId: state.orgId, entries, totals, writes, changes };
}
