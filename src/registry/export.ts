/**
 * The organization's registry as a registry document
 * (docs/registry-document.md): every field a document can carry, written
 * out in full (no `defaults`), so that applying the export back plans
 * nothing. Versions are named by definition_version, approvals by the
 * approver's email, relationship targets and inputs by key. Metrics are read
 * a page at a time, in key order, and handed on page by page, so that a
 * caller can stream them (src/http/export-routes.ts).
 */
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import { MAX_DOCUMENT_METRICS } from './limits.js';

type Reader = PrismaClient | Prisma.TransactionClient;

/** What an export is written as: a registry document, or an Apache Ossie (OSI) document. */
export const EXPORT_FORMATS = ['registry', 'osi'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A source names an importer and a project (`dbt:scooters`): a short label. */
export const MAX_EXPORT_SOURCE_LENGTH = 200;

/** Metrics read per statement: a page of full metrics stays a few MB. */
const PAGE = 500;

const exportInclude = {
  project: { select: { name: true } },
  domain: { select: { name: true } },
  versions: { orderBy: [{ releasedAt: 'asc' }, { definitionVersion: 'asc' }] },
  approvals: { orderBy: [{ decidedAt: 'asc' }, { id: 'asc' }] },
  relationships: { select: { kind: true, target: { select: { key: true } } } },
  inputs: { select: { input: { select: { key: true } } }, orderBy: { position: 'asc' } },
} as const satisfies Prisma.MetricInclude;

type ExportedRow = Prisma.MetricGetPayload<{ include: typeof exportInclude }>;

/** A metric as the registry document writes it (every field, in the documentation's order). */
export type ExportedMetric = Record<string, unknown> & { key: string; project: string };

export interface ExportHead {
  organization: string;
  /** the organization's trust policy, when it has one */
  trust_policy?: unknown;
  /** how many metrics the export holds */
  count: number;
  /** the parts the export is in: MAX_DOCUMENT_METRICS metrics each, by key (at least 1) */
  parts: number;
}

export interface ExportOptions {
  /** only the metrics this source created (metric.source) */
  source?: string;
  /**
   * Only this part (1, 2, ...) of the metrics in key order, MAX_DOCUMENT_METRICS
   * each: the documents of an upload in parts (docs/registry.md). The trust
   * policy is in the first part only, as an upload takes it from one part.
   */
  part?: number;
  /** metrics a part holds; default MAX_DOCUMENT_METRICS, what one document lists */
  partSize?: number;
}

const partSizeOf = (options: ExportOptions) => options.partSize ?? MAX_DOCUMENT_METRICS;

/** An organization with more metrics than one document may list cannot be exported as one. */
export class ExportTooLarge extends Error {
  constructor(
    readonly count: number,
    /** the parts it is exported in */
    readonly parts: number,
  ) {
    super(
      `the registry holds ${count} metrics; a document lists at most ${MAX_DOCUMENT_METRICS}: export it in ${parts} parts`,
    );
  }
}

/** A part past the export's last. */
export class NoSuchExportPart extends Error {
  constructor(readonly parts: number) {
    super(`the export is in ${parts} part${parts === 1 ? '' : 's'}`);
  }
}

/** JSON members with SQL NULL read back as null. */
const json = (value: Prisma.JsonValue | null): unknown => value ?? null;

/**
 * A stored metric as a document entry: the inverse of the apply's rows
 * (src/fixtures/rows.ts); `emails` names approvers by user id.
 */
export function exportedMetric(row: ExportedRow, emails: ReadonlyMap<string, string>): ExportedMetric {
  const versionNames = new Map(row.versions.map((version) => [version.id, version.definitionVersion]));
  return {
    key: row.key,
    name: row.name,
    description: row.description,
    project: row.project.name,
    domain: row.domain?.name ?? null,
    owner_team: row.ownerTeam,
    owner_display_name: row.ownerDisplayName,
    metric_type: row.metricType,
    lifecycle_status: row.lifecycleStatus,
    definition_version: row.definitionVersion,
    policy_tier: row.policyTier,
    scope: row.scope,
    tags: row.tags,
    aliases: row.aliases,
    concept_name: row.conceptName,
    template_name: row.templateName,
    sql_expression: row.sqlExpression,
    grains: row.grains,
    default_grain: row.defaultGrain,
    dimensions: json(row.dimensions),
    filters: row.filters,
    source_refs: json(row.sourceRefs),
    expression: json(row.expression),
    dependencies: json(row.dependencies),
    business_definition: {
      included: row.bdIncluded,
      excluded: row.bdExcluded,
      time_window: row.bdTimeWindow,
      caveats: row.bdCaveats,
      legacy_description: row.bdLegacyDescription,
    },
    time_semantics: json(row.timeSemantics),
    deprecated_framing_rules: json(row.deprecatedFramingRules),
    dimension_map: json(row.dimensionMap),
    column_aliases: json(row.columnAliases),
    consumer_contexts: json(row.consumerContexts),
    policy_examples: json(row.policyExamples),
    execution_context: {
      resolved_parameters: json(row.resolvedParameters),
      rendered_sql_examples: json(row.renderedSqlExamples),
      latest_closed_period: json(row.latestClosedPeriod),
    },
    governance: {
      approver_role: row.approverRole,
      approver_user: row.approverUser,
      approved_at: row.approvedAt,
      effective_from: row.effectiveFrom,
      effective_to: row.effectiveTo,
      next_review_date: row.nextReviewDate,
    },
    approval_state: json(row.approvalState),
    versions: row.versions.map((version) => ({
      definition_version: version.definitionVersion,
      status: version.status,
      released_at: version.releasedAt?.toISOString() ?? null,
      change_summary: version.changeSummary,
    })),
    approvals: row.approvals.map((approval) => ({
      definition_version: approval.versionId === null ? null : (versionNames.get(approval.versionId) ?? null),
      approver_role: approval.approverRole,
      approver: approval.approverUserId === null ? null : (emails.get(approval.approverUserId) ?? null),
      decision: approval.decision,
      decided_at: approval.decidedAt.toISOString(),
      comment: approval.comment,
    })),
    relationships: row.relationships
      .map((relationship) => ({ kind: relationship.kind, target: relationship.target.key }))
      .sort((a, b) => (a.kind + a.target < b.kind + b.target ? -1 : 1)),
    inputs: row.inputs.map((input) => input.input.key),
  };
}

/**
 * The head of the export of organization `orgId` (its slug, trust policy,
 * count of metrics and parts); ExportTooLarge past MAX_DOCUMENT_METRICS
 * without a part, NoSuchExportPart past the last part.
 */
export async function exportHead(reader: Reader, orgId: string, options: ExportOptions = {}): Promise<ExportHead> {
  const organization = await reader.organization.findUniqueOrThrow({
    where: { id: orgId },
    select: { slug: true, trustPolicy: true },
  });
  const total = await reader.metric.count({ where: { orgId, ...sourceFilter(options) } });
  const size = partSizeOf(options);
  const parts = Math.max(1, Math.ceil(total / size));
  const { part } = options;
  if (part === undefined && total > size) throw new ExportTooLarge(total, parts);
  if (part !== undefined && part > parts) throw new NoSuchExportPart(parts);
  const count = part === undefined ? total : Math.min(size, total - (part - 1) * size);
  return {
    organization: organization.slug,
    ...(organization.trustPolicy === null || (part ?? 1) > 1 ? {} : { trust_policy: organization.trustPolicy }),
    count,
    parts,
  };
}

const sourceFilter = (options: ExportOptions) => (options.source === undefined ? {} : { source: options.source });

/** The key a part begins at (undefined: the first part, or past the last). */
async function partStart(reader: Reader, orgId: string, options: ExportOptions): Promise<string | undefined> {
  if ((options.part ?? 1) === 1) return undefined;
  const [first] = await reader.metric.findMany({
    where: { orgId, ...sourceFilter(options) },
    select: { key: true },
    orderBy: { key: 'asc' },
    skip: ((options.part ?? 1) - 1) * partSizeOf(options),
    take: 1,
  });
  return first?.key;
}

/** The organization's metrics (of the part asked for) as document entries, a page at a time in key order. */
export async function* exportedMetrics(
  reader: Reader,
  orgId: string,
  options: ExportOptions = {},
): AsyncGenerator<ExportedMetric[]> {
  const start = await partStart(reader, orgId, options);
  if ((options.part ?? 1) > 1 && start === undefined) return;
  let left = options.part === undefined ? Number.POSITIVE_INFINITY : partSizeOf(options);
  let from: { key: { gte: string } } | { key: { gt: string } } | object =
    start === undefined ? {} : { key: { gte: start } };
  while (left > 0) {
    const page: ExportedRow[] = await reader.metric.findMany({
      where: { orgId, ...sourceFilter(options), ...from },
      include: exportInclude,
      orderBy: { key: 'asc' },
      take: Math.min(PAGE, left),
    });
    if (page.length === 0) return;
    const approvers = [...new Set(page.flatMap((row) => row.approvals.flatMap((a) => a.approverUserId ?? [])))];
    const users = await reader.user.findMany({ where: { id: { in: approvers } }, select: { id: true, email: true } });
    const emails = new Map(users.map((user) => [user.id, user.email]));
    yield page.map((row) => exportedMetric(row, emails));
    left -= page.length;
    if (page.length < PAGE) return;
    from = { key: { gt: page[page.length - 1]?.key as string } };
  }
}

/** The whole export as one registry document (for the CLI and tests; HTTP streams it). */
export async function exportRegistry(
  reader: Reader,
  orgId: string,
  options: ExportOptions = {},
): Promise<{ organization: string; trust_policy?: unknown; metrics: ExportedMetric[] }> {
  const { count: _count, parts: _parts, ...head } = await exportHead(reader, orgId, options);
  const metrics: ExportedMetric[] = [];
  for await (const page of exportedMetrics(reader, orgId, options)) metrics.push(...page);
  return { ...head, metrics };
}
