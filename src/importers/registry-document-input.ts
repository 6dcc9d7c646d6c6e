/**
 * The registry document (docs/registry-document.md) as the importers write it: a
 * plain object with the document's snake_case fields, which the registry's
 * own parser then validates like any hand-written document. Fields an
 * importer has nothing for are left out, so that they take the document's
 * defaults.
 */
import type {
  ApprovalDecision,
  LifecycleStatus,
  MetricScope,
  RelationshipKind,
  VersionStatus,
} from '../generated/prisma/enums.js';
import { UNASSIGNED_OWNER_TEAM } from '../metric/trust.js';

export interface RegistryVersionInput {
  definition_version: string;
  status: VersionStatus;
  released_at: string | null;
  change_summary?: string;
}

export interface RegistryApprovalInput {
  definition_version: string | null;
  approver_role: string;
  approver: string | null;
  decision: ApprovalDecision;
  decided_at: string;
  comment?: string;
}

export interface RegistryRelationshipInput {
  kind: RelationshipKind;
  target: string;
}

export interface RegistrySourceRef {
  table: string;
  [member: string]: unknown;
}

export interface RegistryMetricInput {
  key: string;
  name: string;
  description: string;
  sql_expression: string;
  project?: string;
  domain?: string | null;
  owner_team?: string;
  owner_display_name?: string | null;
  metric_type?: string;
  lifecycle_status?: LifecycleStatus;
  definition_version?: string;
  policy_tier?: string;
  scope?: MetricScope;
  tags?: string[];
  aliases?: string[];
  concept_name?: string;
  template_name?: string;
  grains?: string[];
  default_grain?: string;
  dimensions?: unknown[];
  filters?: string[];
  source_refs?: RegistrySourceRef[];
  expression?: unknown;
  dependencies?: unknown;
  business_definition?: Partial<
    Record<'included' | 'excluded' | 'time_window' | 'caveats' | 'legacy_description', string>
  >;
  time_semantics?: Record<string, unknown> | null;
  versions?: RegistryVersionInput[];
  approvals?: RegistryApprovalInput[];
  relationships?: RegistryRelationshipInput[];
  /** the keys of the metrics of the same import it is computed from */
  inputs?: string[];
  // The remaining Metric fields a governance object may set, passed through as given.
  [field: string]: unknown;
}

export interface RegistryDocumentInput {
  organization: string;
  metrics: RegistryMetricInput[];
}

export interface ImportOptions {
  /** slug of the organization the document is for */
  organization: string;
  /** lifecycle of metrics whose governance does not set one (the document's default, DRAFT, otherwise) */
  defaultLifecycle?: LifecycleStatus;
  /** project name of every metric; default per importer (dbt: "dbt"; OSI: the semantic model's name) */
  project?: string;
  /** owner team of metrics that name none; default "unassigned" */
  defaultOwnerTeam?: string;
}

/** owner_team of a metric whose source names no owner and when no default is given (no owner team to a trust policy) */
export const DEFAULT_OWNER_TEAM = UNASSIGNED_OWNER_TEAM;
