/**
 * The plan of an apply: a pure function of a validated registry document and
 * the registry's state (src/registry/state.ts). It says, metric by metric,
 * what the apply does (`created`, `restored`, `updated` with the fields that
 * differ, `unchanged`, `absent`, `removed`) and carries the rows it writes, so
 * the same plan is printed, checked (--check, dry run) and applied.
 *
 * A metric's inputs are links to other metrics, resolved to ids as
 * relationship targets are, and must not form a cycle
 * (src/registry/input-cycles.ts). The document's `trust_policy`, when it has
 * one, is compared with the organization's (`trust_policy` of the plan).
 *
 * A key that a prune removed (src/registry/archive.ts) and the document lists
 * again is `restored`: the metric comes back with its id and the time it was
 * created, its fields and lists as the document says, its history as it was.
 *
 * Ids are derived, never invented: a new metric's id is the UUIDv5 of the
 * organization id and its key; a version's, of the metric id and its
 * definition_version; an approval's, of the metric id and its identity; a
 * new project's or domain's, of the organization id and its name. A metric
 * already in the registry, or restored, keeps its id.
 *
 * Planning is in two steps so that an apply reads only what it compares:
 * {@link desireDocument} makes each metric's rows and a hash of them, and a
 * metric whose stored `applied_hash` (the hash of the entry it was last
 * applied from) is the same is unchanged without reading it; the others are
 * read (src/registry/state.ts) and compared field by field in
 * {@link planApply}.
 */

import { hash } from 'node:crypto';
import { metricRow } from '../fixtures/rows.js';
import type { FixtureMetric } from '../fixtures/schema.js';
import { Prisma } from '../generated/prisma/client.js';
import type { TrustPolicyDocument } from '../metric/trust-policy.js';
import { uuidV5 } from '../uuid.js';
import type { RegistryDocument, RegistryMetric } from './document.js';
import { inputCycleProblems } from './input-cycles.js';
import { RegistryError, type RegistryProblem } from './registry-error.js';
import type { ArchivedSummary, RegistryState, StoredMetric, StoredSummary } from './state.js';

export const PLAN_RESULTS = ['created', 'restored', 'updated', 'unchanged', 'absent', 'removed'] as const;
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
  /** removed metrics the document lists again: their rows, with their archived ids and creation times */
  restored: MetricRow[];
  updated: { id: string; data: MetricRow }[];
  /** metrics whose versions and approvals are replaced by `versions` and `approvals` */
  governanceOf: string[];
  versions: Prisma.MetricVersionCreateManyInput[];
  approvals: Prisma.ApprovalCreateManyInput[];
  /** metrics whose relationships are replaced by `relationships` */
  relationshipsOf: string[];
  relationships: Prisma.MetricRelationshipCreateManyInput[];
  /** metrics whose inputs are replaced by `inputs` */
  inputsOf: string[];
  inputs: Prisma.MetricInputCreateManyInput[];
  removed: string[];
  /** the organization's trust policy to store (null: the defaults); undefined: left as it is */
  trustPolicy?: { value: TrustPolicyDocument | null };
}

/** Whether the apply changes the organization's trust policy (a document without one never does). */
export type TrustPolicyResult = 'unchanged' | 'changed';

export interface Plan {
  orgId: string;
  entries: PlanEntry[];
  totals: Record<PlanResult, number>;
  trustPolicy: TrustPolicyResult;
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
  writes: Pick<PlanWrites, 'projects' | 'domains'>;
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
  /** in the document's order: `position` is the place in its list */
  inputs: Prisma.MetricInputCreateManyInput[];
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
  const relationships = metric.relationships.map((relationship) => {
    const targetMetricId = resolver.idsByKey.get(relationship.target) ?? '';
    return {
      id: uuidV5(metricId, `relationship:${relationship.kind}:${targetMetricId}`),
      metricId,
      kind: relationship.kind,
      targetMetricId,
    };
  });
  const inputs = metric.inputs.map((key, position) => ({
    metricId,
    inputMetricId: resolver.idsByKey.get(key) ?? '',
    position,
  }));
  return { versions, approvals, relationships, inputs };
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

/** The document fields of a metric that differ from its stored state, in the document's order of fields. */
function changedFields(metric: DesiredMetric, stored: StoredMetric): string[] {
  const row = stored as unknown as Record<string, unknown>;
  const fields = FIELD_COLUMNS.filter(([, columns]) =>
    columns.some((column) => canonical(metric.row[column] ?? null) !== canonical(row[column] ?? null)),
  ).map(([field]) => field);
  const { governance } = metric;
  if (!sameList(versionsIdentity(governance.versions), versionsIdentity(stored.versions))) fields.push('versions');
  const storedVersionNames = new Map(stored.versions.map((v) => [v.id, v.definitionVersion]));
  const approvalsDiffer = !sameList(
    approvalsIdentity(governance.approvals, (a) => metric.approvalVersions[a] ?? null),
    approvalsIdentity(stored.approvals, (a) => {
      const versionId = stored.approvals[a]?.versionId;
      return versionId ? (storedVersionNames.get(versionId) ?? versionId) : null;
    }),
  );
  if (approvalsDiffer) fields.push('approvals');
  const storedRelations = sortedCanonical(stored.relationships.map((r) => [r.kind, r.target.key]));
  if (!sameList(sortedCanonical(metric.relationshipKeys), storedRelations)) fields.push('relationships');
  const storedInputs = stored.inputs.map((input) => input.input.key);
  if (!sameList(metric.inputKeys, storedInputs)) fields.push('inputs');
  return fields;
}

/** Relationship targets and inputs must exist after the apply: in the document, or kept in the registry. */
function checkTargets(document: RegistryDocument, state: RegistryState, prune: boolean): RegistryProblem[] {
  const listed = new Set(document.metrics.map((metric) => metric.key));
  const stored = new Set(state.metrics.map((metric) => metric.key));
  const problems: RegistryProblem[] = [];
  const check = (key: string, path: PropertyKey[]) => {
    if (listed.has(key)) return;
    if (!stored.has(key)) {
      problems.push({ path, message: `no metric with key "${key}" in the document or the registry` });
    } else if (prune) {
      problems.push({ path, message: `metric "${key}" is not in the document, so prune would remove it` });
    }
  };
  document.metrics.forEach((metric, m) => {
    metric.relationships.forEach((relationship, r) => {
      check(relationship.target, ['metrics', m, 'relationships', r, 'target']);
    });
    metric.inputs.forEach((input, i) => {
      check(input, ['metrics', m, 'inputs', i]);
    });
  });
  return problems;
}

export interface PlanOptions {
  prune: boolean;
  now: Date;
}

/** What the document asks of one metric: its rows, the hash of them, and the stored metric of its key. */
export interface DesiredMetric {
  key: string;
  id: string;
  stored: StoredSummary | undefined;
  /** the removed metric of its key, when it is not in the registry */
  archived: ArchivedSummary | undefined;
  row: MetricRow;
  governance: Governance;
  /** the approvals' definition_versions, in the document's order */
  approvalVersions: (string | null)[];
  /** relationships as `[kind, target key]` */
  relationshipKeys: [string, string][];
  /** the inputs' keys, in the document's order */
  inputKeys: string[];
  hash: string;
}

export interface DesiredDocument {
  metrics: DesiredMetric[];
  projects: Prisma.ProjectCreateManyInput[];
  domains: Prisma.DomainCreateManyInput[];
  /** the document's trust policy: undefined when it has none (the stored one is kept) */
  trustPolicy?: TrustPolicyDocument | null;
}

/**
 * The hash of everything an apply writes of a metric, but its timestamps.
 * Inputs count only when there are some: a metric without inputs keeps the
 * hash it was stored with before inputs existed, so an apply of an
 * unchanged document after the upgrade still reads and writes nothing.
 */
function entryHash(row: MetricRow, governance: Governance): string {
  const { id: _id, orgId: _org, createdAt: _created, updatedAt: _updated, appliedHash: _hash, ...fields } = row;
  const inputs = governance.inputs.map((input) => input.inputMetricId);
  return hash(
    'sha256',
    canonical([
      'registry-entry-1',
      fields,
      versionsIdentity(governance.versions),
      approvalsIdentity(governance.approvals, (a) => governance.approvals[a]?.versionId ?? null),
      sortedCanonical(governance.relationships.map((r) => [r.kind, r.targetMetricId])),
      ...(inputs.length > 0 ? [inputs] : []),
    ]),
    'base64url',
  );
}

/**
 * Step one: the rows the document asks for, resolved against the registry's
 * names and members. RegistryError when it cannot apply to this registry
 * (a relationship or input to no metric, an approver who is not a member,
 * inputs in a cycle).
 */
export function desireDocument(
  document: RegistryDocument,
  state: RegistryState,
  options: PlanOptions,
): DesiredDocument {
  const now = options.now.toISOString();
  const storedByKey = new Map(state.metrics.map((metric) => [metric.key, metric]));
  const idsByKey = new Map(state.metrics.map((metric) => [metric.key, metric.id]));
  for (const metric of document.metrics) {
    if (!idsByKey.has(metric.key)) {
      idsByKey.set(metric.key, state.archived.get(metric.key)?.id ?? uuidV5(state.orgId, metric.key));
    }
  }
  const problems = checkTargets(document, state, options.prune);
  // A prune removes the metrics the document does not list, and their inputs with them.
  problems.push(...inputCycleProblems(document.metrics, options.prune ? [] : state.otherInputs));
  const created: Pick<PlanWrites, 'projects' | 'domains'> = { projects: [], domains: [] };
  const resolver: Resolver = {
    state: { ...state, projects: new Map(state.projects), domains: new Map(state.domains) },
    writes: created,
    problems,
    idsByKey,
  };
  const metrics = document.metrics.map((metric, m): DesiredMetric => {
    const stored = storedByKey.get(metric.key);
    const id = stored?.id ?? (idsByKey.get(metric.key) as string);
    const row = desiredRow(resolver, metric, id, now);
    const governance = desiredGovernance(resolver, metric, m, id);
    return {
      key: metric.key,
      id,
      stored,
      archived: stored ? undefined : state.archived.get(metric.key),
      row,
      governance,
      approvalVersions: metric.approvals.map((approval) => approval.definition_version),
      relationshipKeys: metric.relationships.map((r) => [r.kind, r.target]),
      inputKeys: [...metric.inputs],
      hash: entryHash(row, governance),
    };
  });
  if (problems.length > 0) throw new RegistryError(problems);
  return { metrics, ...created, ...(document.trustPolicy === undefined ? {} : { trustPolicy: document.trustPolicy }) };
}

/** Ids of the stored metrics that step two must read: those whose stored hash is not the document's. */
export function metricsToCompare(desired: DesiredDocument): string[] {
  return desired.metrics.flatMap((metric) =>
    metric.stored && metric.stored.appliedHash !== metric.hash ? [metric.stored.id] : [],
  );
}

/**
 * Step two: the plan, from step one and the stored metrics it named
 * (`details`, by id). A metric whose hash matches is unchanged unread.
 */
export function planApply(
  desired: DesiredDocument,
  state: RegistryState,
  details: ReadonlyMap<string, StoredMetric>,
  options: PlanOptions,
): Plan {
  const writes: PlanWrites = {
    projects: desired.projects,
    domains: desired.domains,
    created: [],
    restored: [],
    updated: [],
    governanceOf: [],
    versions: [],
    approvals: [],
    relationshipsOf: [],
    relationships: [],
    inputsOf: [],
    inputs: [],
    removed: [],
  };
  const entries: PlanEntry[] = [];
  for (const metric of desired.metrics) {
    const { id, governance } = metric;
    const row = { ...metric.row, appliedHash: metric.hash };
    if (!metric.stored) {
      if (metric.archived) writes.restored.push({ ...row, createdAt: metric.archived.createdAt });
      else writes.created.push(row);
      writes.versions.push(...governance.versions);
      writes.approvals.push(...governance.approvals);
      writes.relationships.push(...governance.relationships);
      writes.inputs.push(...governance.inputs);
      entries.push({ key: metric.key, result: metric.archived ? 'restored' : 'created', changed_fields: [] });
      continue;
    }
    const stored = metric.stored.appliedHash === metric.hash ? undefined : details.get(id);
    const fields = stored ? changedFields(metric, stored) : [];
    if (stored && (fields.includes('versions') || fields.includes('approvals'))) {
      // Approvals point at versions: the two are replaced together.
      writes.governanceOf.push(id);
      writes.versions.push(...governance.versions);
      writes.approvals.push(...governance.approvals);
    }
    if (fields.includes('relationships')) {
      writes.relationshipsOf.push(id);
      writes.relationships.push(...governance.relationships);
    }
    if (fields.includes('inputs')) {
      writes.inputsOf.push(id);
      writes.inputs.push(...governance.inputs);
    }
    if (fields.length === 0) {
      entries.push({ key: metric.key, result: 'unchanged', changed_fields: [] });
      continue;
    }
    writes.updated.push({ id, data: { ...row, createdAt: (stored as StoredMetric).createdAt } });
    entries.push({ key: metric.key, result: 'updated', changed_fields: fields });
  }
  const listed = new Set(desired.metrics.map((metric) => metric.key));
  for (const stored of state.metrics) {
    if (listed.has(stored.key)) continue;
    if (options.prune) writes.removed.push(stored.id);
    entries.push({ key: stored.key, result: options.prune ? 'removed' : 'absent', changed_fields: [] });
  }
  const totals = Object.fromEntries(PLAN_RESULTS.map((result) => [result, 0])) as Record<PlanResult, number>;
  for (const entry of entries) totals[entry.result]++;
  let trustPolicy: TrustPolicyResult = 'unchanged';
  if (desired.trustPolicy !== undefined && canonical(desired.trustPolicy) !== canonical(state.trustPolicy ?? null)) {
    trustPolicy = 'changed';
    writes.trustPolicy = { value: desired.trustPolicy };
  }
  const changes = totals.created + totals.restored + totals.updated + totals.removed > 0 || trustPolicy === 'changed';
  return { orgId: state.orgId, entries, totals, trustPolicy, writes, changes };
}
