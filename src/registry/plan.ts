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
import type { Prisma } from '../generated/prisma/client.js';
import { BUSINESS_DEFINITION_COLUMNS } from '../metric/business-definition.js';
import type { TrustPolicyDocument } from '../metric/trust-policy.js';
import { uuidV5 } from '../uuid.js';
import { canonical } from './canonical.js';
import type { RegistryDocument, RegistryMetric } from './document.js';
import { inputCycleProblems } from './input-cycles.js';
import {
  decideFields,
  type FieldConflict,
  type FieldDecision,
  ownersOf,
  ownersOfNew,
  type PlacedConflict,
} from './ownership.js';
import { type PlanChange, planChange } from './plan-values.js';
import { RegistryError, type RegistryProblem } from './registry-error.js';
import type { ArchivedSummary, RegistryState, StoredMetric, StoredSummary } from './state.js';

export const PLAN_RESULTS = ['created', 'restored', 'updated', 'unchanged', 'absent', 'removed'] as const;
export type PlanResult = (typeof PLAN_RESULTS)[number];

export interface PlanEntry {
  key: string;
  result: PlanResult;
  /** document field names, in the document's order of fields; [] unless `updated` */
  changed_fields: string[];
  /** `updated` only: each changed field's stored and new value, shortened (src/registry/plan-values.ts) */
  changes?: PlanChange[];
  /** fields the document sets to another value than the source that owns them did; absent when none */
  conflicts?: FieldConflict[];
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
  /** the source the apply is made as */
  source: string;
  /** conflicts of the plan's entries, in its order; an apply refuses them unless forced */
  conflicts: PlacedConflict[];
  entries: PlanEntry[];
  totals: Record<PlanResult, number>;
  trustPolicy: TrustPolicyResult;
  writes: PlanWrites;
  /** whether applying the plan writes anything */
  changes: boolean;
}

/** Each document field and the columns it is stored in. */
export const FIELD_COLUMNS: [string, (keyof MetricRow)[]][] = [
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
  ['business_definition', [...BUSINESS_DEFINITION_COLUMNS]],
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

const sortedCanonical = (items: unknown[][]) => items.map((item) => canonical(item)).sort();
const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((item, i) => item === b[i]);

interface Resolver {
  state: RegistryState;
  writes: Pick<PlanWrites, 'projects' | 'domains'>;
  problems: RegistryProblem[];
  idsByKey: ReadonlyMap<string, string>;
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

/** A field's value as a plan shows it: the column's value, or its columns' by name. */
function columnsValue(row: Record<string, unknown>, columns: readonly string[]): unknown {
  const value = (column: string) => JSON.parse(canonical(row[column] ?? null) ?? 'null') as unknown;
  if (columns.length === 1) return value(columns[0] as string);
  return Object.fromEntries(columns.map((column) => [column, value(column)]));
}

/**
 * The document fields of a metric whose desired value (`row`, with the fields
 * other sources own kept as stored) differs from its stored state, in the
 * document's order of fields, each with both values.
 */
function changedFields(metric: DesiredMetric, row: MetricRow, stored: StoredMetric): PlanChange[] {
  const storedRow = stored as unknown as Record<string, unknown>;
  const desiredRow = row as Record<string, unknown>;
  const changes = FIELD_COLUMNS.filter(([, columns]) =>
    columns.some((column) => canonical(desiredRow[column] ?? null) !== canonical(storedRow[column] ?? null)),
  ).map(([field, columns]) => planChange(field, columnsValue(storedRow, columns), columnsValue(desiredRow, columns)));
  const { governance } = metric;
  const list = (field: string, from: string[], to: string[]) => {
    if (!sameList(from, to)) changes.push(planChange(field, from.map(parseItem), to.map(parseItem)));
  };
  list('versions', versionsIdentity(stored.versions), versionsIdentity(governance.versions));
  const storedVersionNames = new Map(stored.versions.map((v) => [v.id, v.definitionVersion]));
  list(
    'approvals',
    approvalsIdentity(stored.approvals, (a) => {
      const versionId = stored.approvals[a]?.versionId;
      return versionId ? (storedVersionNames.get(versionId) ?? versionId) : null;
    }),
    approvalsIdentity(governance.approvals, (a) => metric.approvalVersions[a] ?? null),
  );
  list(
    'relationships',
    sortedCanonical(stored.relationships.map((r) => [r.kind, r.target.key])),
    sortedCanonical(metric.relationshipKeys),
  );
  const storedInputs = stored.inputs.map((input) => input.input.key);
  if (!sameList(metric.inputKeys, storedInputs)) changes.push(planChange('inputs', storedInputs, metric.inputKeys));
  return changes;
}

const parseItem = (item: string): unknown => JSON.parse(item);

/** Every field a source may own: the document's fields, then its lists (each list one field). */
const DOCUMENT_FIELDS = [...FIELD_COLUMNS.map(([field]) => field), 'versions', 'approvals', 'relationships', 'inputs'];

/** The desired row with the columns of the fields kept (another source's) as they are stored. */
function keptAsStored(row: MetricRow, stored: StoredMetric, decision: FieldDecision): MetricRow {
  const merged: Record<string, unknown> = { ...row };
  for (const [field, columns] of FIELD_COLUMNS) {
    if (!decision.keep.has(field)) continue;
    for (const column of columns) merged[column] = (stored as unknown as Record<string, unknown>)[column] ?? null;
  }
  return merged as MetricRow;
}

/** What {@link checkTargets} reads of a metric: its relationships' targets and its inputs. */
type Links = Pick<RegistryMetric, 'relationships' | 'inputs'>;

/**
 * Relationship targets and inputs must exist after the apply: listed (in the
 * document, or in any part of an upload), or kept in the registry. `place`
 * is the path of the metric at `m`.
 */
export function checkTargets(
  metrics: readonly Links[],
  listed: ReadonlySet<string>,
  state: RegistryState,
  options: { source: string; prune: boolean; place: (m: number) => PropertyKey[] },
): RegistryProblem[] {
  const stored = new Set(state.metrics.map((metric) => metric.key));
  const ownSource = new Set(state.metrics.filter((m) => m.source === options.source).map((m) => m.key));
  const problems: RegistryProblem[] = [];
  const check = (key: string, path: PropertyKey[]) => {
    if (listed.has(key)) return;
    if (!stored.has(key)) {
      problems.push({ path, message: `no metric with key "${key}" in the document or the registry` });
    } else if (options.prune && ownSource.has(key)) {
      problems.push({ path, message: `metric "${key}" is not in the document, so prune would remove it` });
    }
  };
  metrics.forEach((metric, m) => {
    metric.relationships.forEach((relationship, r) => {
      check(relationship.target, [...options.place(m), 'relationships', r, 'target']);
    });
    metric.inputs.forEach((input, i) => {
      check(input, [...options.place(m), 'inputs', i]);
    });
  });
  return problems;
}

export interface PlanOptions {
  prune: boolean;
  now: Date;
  /** fields the document sets that another source owns are taken over rather than refused */
  forceConflicts?: boolean;
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
  /** the fields the document sets (docs/registry.md#sources) */
  fieldsSet: ReadonlySet<string>;
  hash: string;
}

export interface DesiredDocument {
  /** the source applying it */
  source: string;
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
function entryHash(row: MetricRow, governance: Governance, source: string, fieldsSet: readonly string[]): string {
  const { id: _id, orgId: _org, createdAt: _created, updatedAt: _updated, appliedHash: _hash, ...fields } = row;
  const inputs = governance.inputs.map((input) => input.inputMetricId);
  // The source and what it sets count: the same entry of another source, or setting fewer fields, is another apply.
  return hash(
    'sha256',
    canonical([
      'registry-entry-2',
      source,
      [...fieldsSet].sort(),
      fields,
      versionsIdentity(governance.versions),
      approvalsIdentity(governance.approvals, (a) => governance.approvals[a]?.versionId ?? null),
      sortedCanonical(governance.relationships.map((r) => [r.kind, r.targetMetricId])),
      ...(inputs.length > 0 ? [inputs] : []),
    ]),
    'base64url',
  );
}

/** The registry's metrics by key, and the id of every key after the apply. */
export interface RegistryIndex {
  /** the stored metrics of the listed keys */
  stored: ReadonlyMap<string, StoredSummary>;
  /** a stored metric's id, a removed one's (it is restored), else the UUIDv5 of the organization and the key */
  ids: ReadonlyMap<string, string>;
}

/** The index of the registry's metrics and of the keys `listed`. */
export function registryIndex(state: RegistryState, listed: Iterable<string>): RegistryIndex {
  const ids = new Map(state.metrics.map((metric) => [metric.key, metric.id]));
  for (const key of listed) {
    if (!ids.has(key)) ids.set(key, state.archived.get(key)?.id ?? uuidV5(state.orgId, key));
  }
  return { stored: state.listed, ids };
}

/** The stored inputs of the metrics that stay after the apply: a prune removes the source's unlisted ones. */
export function inputsThatStay(state: RegistryState, source: string, prune: boolean): [string, string][] {
  if (!prune) return state.otherInputs;
  const pruned = new Set(state.metrics.filter((m) => m.source === source).map((m) => m.key));
  return state.otherInputs.filter(([key]) => !pruned.has(key));
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
  const keys = document.metrics.map((metric) => metric.key);
  const { source } = document;
  const problems = checkTargets(document.metrics, new Set(keys), state, {
    source,
    prune: options.prune,
    place: (m) => ['metrics', m],
  });
  problems.push(...inputCycleProblems(document.metrics, inputsThatStay(state, source, options.prune)));
  const desired = desireMetrics(document, state, registryIndex(state, keys), options.now, problems);
  if (problems.length > 0) throw new RegistryError(problems);
  return desired;
}

/**
 * The rows of the document's metrics, each reference resolved by `index`;
 * approvers who are not members are added to `problems` (at
 * `metrics[m]...`). Projects and domains the document names and the
 * registry has not are in the result, to create.
 */
export function desireMetrics(
  document: RegistryDocument,
  state: RegistryState,
  index: RegistryIndex,
  at: Date,
  problems: RegistryProblem[],
): DesiredDocument {
  const now = at.toISOString();
  const { source } = document;
  const created: Pick<PlanWrites, 'projects' | 'domains'> = { projects: [], domains: [] };
  const resolver: Resolver = {
    state: { ...state, projects: new Map(state.projects), domains: new Map(state.domains) },
    writes: created,
    problems,
    idsByKey: index.ids,
  };
  const metrics = document.metrics.map((metric, m): DesiredMetric => {
    const stored = index.stored.get(metric.key);
    const id = stored?.id ?? (index.ids.get(metric.key) as string);
    const row = desiredRow(resolver, metric, id, now);
    const governance = desiredGovernance(resolver, metric, m, id);
    const fieldsSet = document.fieldsSet[m] ?? [];
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
      fieldsSet: new Set(fieldsSet),
      hash: entryHash(row, governance, source, fieldsSet),
    };
  });
  return {
    source,
    metrics,
    ...created,
    ...(document.trustPolicy === undefined ? {} : { trustPolicy: document.trustPolicy }),
  };
}

/** Ids of the stored metrics that step two must read: those whose stored hash is not the document's. */
export function metricsToCompare(desired: DesiredDocument): string[] {
  return desired.metrics.flatMap((metric) =>
    metric.stored && metric.stored.appliedHash !== metric.hash ? [metric.stored.id] : [],
  );
}

/** Writes of a plan that writes nothing. */
export const noWrites = (): PlanWrites => ({
  projects: [],
  domains: [],
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
});

/**
 * Step two: the plan, from step one and the stored metrics it named
 * (`details`, by id). A metric whose hash matches is unchanged unread. A
 * plan of a `part` of what is applied (a chunk of an upload) plans its
 * metrics only: not the registry's others, nor the trust policy.
 */
export function planApply(
  desired: DesiredDocument,
  state: RegistryState,
  details: ReadonlyMap<string, StoredMetric>,
  options: PlanOptions,
  scope: 'whole' | 'part' = 'whole',
): Plan {
  const writes: PlanWrites = { ...noWrites(), projects: desired.projects, domains: desired.domains };
  const entries: PlanEntry[] = [];
  const conflicts: Plan['conflicts'] = [];
  const { source } = desired;
  desired.metrics.forEach((metric, index) => {
    const { id, governance } = metric;
    if (!metric.stored) {
      const row = {
        ...metric.row,
        appliedHash: metric.hash,
        source,
        fieldSources: ownersOfNew(source, metric.fieldsSet),
      };
      if (metric.archived) writes.restored.push({ ...row, createdAt: metric.archived.createdAt });
      else writes.created.push(row);
      writes.versions.push(...governance.versions);
      writes.approvals.push(...governance.approvals);
      writes.relationships.push(...governance.relationships);
      writes.inputs.push(...governance.inputs);
      entries.push({ key: metric.key, result: metric.archived ? 'restored' : 'created', changed_fields: [] });
      return;
    }
    const stored = metric.stored.appliedHash === metric.hash ? undefined : details.get(id);
    if (!stored) {
      entries.push({ key: metric.key, result: 'unchanged', changed_fields: [] });
      return;
    }
    const differing = changedFields(metric, metric.row, stored);
    const decision = decideFields({
      fields: DOCUMENT_FIELDS,
      source,
      creator: metric.stored.source,
      fieldsSet: metric.fieldsSet,
      owners: ownersOf(metric.stored.fieldSources),
      differs: new Set(differing.map((change) => change.field)),
      force: options.forceConflicts ?? false,
    });
    const row = keptAsStored(metric.row, stored, decision);
    const changes = differing.filter((change) => !decision.keep.has(change.field));
    const fields = changes.map((change) => change.field);
    for (const conflict of decision.conflicts) conflicts.push({ key: metric.key, index, conflict });
    const conflictsOf = decision.conflicts.length > 0 ? { conflicts: decision.conflicts } : {};
    if (fields.includes('versions') || fields.includes('approvals')) {
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
      entries.push({ key: metric.key, result: 'unchanged', changed_fields: [], ...conflictsOf });
      return;
    }
    const data = {
      ...row,
      appliedHash: metric.hash,
      source: metric.stored.source,
      fieldSources: decision.owners,
      createdAt: stored.createdAt,
    };
    writes.updated.push({ id, data });
    entries.push({ key: metric.key, result: 'updated', changed_fields: fields, changes, ...conflictsOf });
  });
  if (scope === 'part') return planOf(state.orgId, source, { conflicts, entries, trustPolicy: 'unchanged', writes });
  const others = planOthers(state, new Set(desired.metrics.map((metric) => metric.key)), source, options.prune);
  entries.push(...others.entries);
  writes.removed = others.removed;
  const trustPolicy = trustPolicyResult(state, desired.trustPolicy);
  if (trustPolicy === 'changed') writes.trustPolicy = { value: desired.trustPolicy ?? null };
  return planOf(state.orgId, source, { conflicts, entries, trustPolicy, writes });
}

/**
 * The registry's metrics not `listed`: `absent`, or `removed` by a prune
 * (the applying source's only: another source's stay, absent).
 */
export function planOthers(
  state: RegistryState,
  listed: ReadonlySet<string>,
  source: string,
  prune: boolean,
): { entries: PlanEntry[]; removed: string[] } {
  const entries: PlanEntry[] = [];
  const removed: string[] = [];
  for (const stored of state.metrics) {
    if (listed.has(stored.key)) continue;
    const removes = prune && stored.source === source;
    if (removes) removed.push(stored.id);
    entries.push({ key: stored.key, result: removes ? 'removed' : 'absent', changed_fields: [] });
  }
  return { entries, removed };
}

/** Whether the stored trust policy differs from `policy` (undefined: the document has none, so it stays). */
export function trustPolicyResult(
  state: RegistryState,
  policy: TrustPolicyDocument | null | undefined,
): TrustPolicyResult {
  return policy !== undefined && canonical(policy) !== canonical(state.trustPolicy ?? null) ? 'changed' : 'unchanged';
}

/** A plan of its entries (counted into totals) and writes. */
export function planOf(
  orgId: string,
  source: string,
  parts: Pick<Plan, 'conflicts' | 'entries' | 'trustPolicy' | 'writes'>,
): Plan {
  const totals = Object.fromEntries(PLAN_RESULTS.map((result) => [result, 0])) as Record<PlanResult, number>;
  for (const entry of parts.entries) totals[entry.result]++;
  const changes =
    totals.created + totals.restored + totals.updated + totals.removed > 0 || parts.trustPolicy === 'changed';
  return { orgId, source, ...parts, totals, changes };
}
