/**
 * The `governance` object that dbt metrics (config.meta.governance) and OSI
 * metrics (a METRIC_GOVERNANCE extension) carry: any field of the registry
 * document's Metric that the tool has no field for. It is our own format
 * inside a foreign file, so it is read strictly: an unknown field or a value
 * the registry would refuse is an error naming the metric and the field,
 * found here rather than at apply time, where the path would point into the
 * generated document instead of the user's file.
 */
import { z } from 'zod';
import {
  ApprovalDecision,
  LifecycleStatus,
  MetricScope,
  RelationshipKind,
  VersionStatus,
} from '../generated/prisma/enums.js';
import type { ImportProblem } from './import-error.js';
import { formatPath } from './import-error.js';
import type { RegistryMetricInput } from './registry-document-input.js';

const timestamp = z.iso.datetime({
  offset: true,
  local: true,
  error: 'expected an ISO 8601 timestamp, e.g. 2026-01-31T09:00:00Z',
});
const dateOrTimestamp = z.union([z.iso.date(), timestamp], {
  error: 'expected an ISO 8601 date (YYYY-MM-DD) or timestamp, e.g. 2026-01-31T09:00:00Z',
});
const json = z.json();
const jsonObject = z.record(z.string(), json);
const name = z.string().min(1, 'must not be empty');

/** An enum whose error says what was given and what is allowed. */
function oneOf<const T extends Record<string, string>>(values: T) {
  const allowed = Object.values(values).join(', ');
  return z.enum(values, {
    error: (issue) =>
      issue.input === undefined
        ? `missing; expected one of ${allowed}`
        : `${JSON.stringify(issue.input)} is not one of ${allowed}`,
  });
}

const governanceSchema = z.strictObject({
  name: name.optional(),
  description: z.string().optional(),
  sql_expression: name.optional(),
  project: name.optional(),
  domain: name.nullable().optional(),
  owner_team: name.optional(),
  owner_display_name: z.string().nullable().optional(),
  metric_type: name.optional(),
  lifecycle_status: oneOf(LifecycleStatus).optional(),
  definition_version: name.optional(),
  policy_tier: name.optional(),
  scope: oneOf(MetricScope).optional(),
  tags: z.array(z.string()).optional(),
  aliases: z.array(z.string()).optional(),
  concept_name: name.optional(),
  template_name: name.optional(),
  grains: z.array(z.string()).optional(),
  default_grain: z.string().optional(),
  dimensions: z.array(json).optional(),
  filters: z.array(z.string()).optional(),
  source_refs: z.array(z.looseObject({ table: name })).optional(),
  expression: json.optional(),
  dependencies: json.optional(),
  business_definition: z
    .strictObject({
      included: z.string().optional(),
      excluded: z.string().optional(),
      time_window: z.string().optional(),
      caveats: z.string().optional(),
      legacy_description: z.string().optional(),
    })
    .optional(),
  time_semantics: jsonObject.nullable().optional(),
  deprecated_framing_rules: z.array(json).optional(),
  dimension_map: jsonObject.optional(),
  column_aliases: jsonObject.optional(),
  consumer_contexts: jsonObject.optional(),
  policy_examples: z.array(json).optional(),
  execution_context: z
    .strictObject({
      resolved_parameters: jsonObject.optional(),
      rendered_sql_examples: z.array(json).optional(),
      latest_closed_period: json.optional(),
    })
    .optional(),
  governance: z
    .strictObject({
      approver_role: z.string().nullable().optional(),
      approver_user: z.string().nullable().optional(),
      approved_at: dateOrTimestamp.nullable().optional(),
      effective_from: dateOrTimestamp.nullable().optional(),
      effective_to: dateOrTimestamp.nullable().optional(),
      next_review_date: dateOrTimestamp.nullable().optional(),
    })
    .optional(),
  approval_state: json.optional(),
  versions: z
    .array(
      z.strictObject({
        definition_version: name,
        status: oneOf(VersionStatus),
        released_at: timestamp.nullable(),
        change_summary: z.string().optional(),
      }),
    )
    .optional(),
  approvals: z
    .array(
      z.strictObject({
        definition_version: z.string().nullable(),
        approver_role: name,
        approver: z.string().nullable(),
        decision: oneOf(ApprovalDecision),
        decided_at: timestamp,
        comment: z.string().optional(),
      }),
    )
    .optional(),
  relationships: z.array(z.strictObject({ kind: oneOf(RelationshipKind), target: name })).optional(),
  // An export names a metric's inputs here: an expression need not spell them (a dbt import inlines them).
  inputs: z.array(name).optional(),
});

export type MetricGovernance = z.infer<typeof governanceSchema>;

/** The Metric fields a governance object may set (key is the tool's own name, facts accrue in the service). */
export const GOVERNANCE_FIELDS: readonly string[] = Object.keys(governanceSchema.shape);

/**
 * Validates a governance object found at `path` for the metric `metricName`;
 * returns it, or undefined after adding its problems to `problems`.
 */
export function readGovernance(
  value: unknown,
  path: readonly PropertyKey[],
  metricName: string,
  problems: ImportProblem[],
): MetricGovernance | undefined {
  const parsed = governanceSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    const at = [...path, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        problems.push({
          path: formatPath([...at, key]),
          message:
            issue.path.length === 0
              ? `metric "${metricName}": unknown governance field "${key}" (allowed: ${GOVERNANCE_FIELDS.join(', ')})`
              : `metric "${metricName}": unknown field "${key}" in governance.${formatPath(issue.path)}`,
        });
    } else {
      const field = formatPath(issue.path) || 'governance';
      problems.push({ path: formatPath(at), message: `metric "${metricName}": ${field}: ${issue.message}` });
    }
  }
  return undefined;
}

/**
 * The governance fields laid over what the importer derived (governance
 * wins; business_definition member by member), with relationship targets renamed from the tool's metric names to
 * keys; a target that is not a metric of the file is kept as written (it may
 * be a key already in the registry; the apply decides).
 */
export function applyGovernance(
  derived: RegistryMetricInput,
  governance: MetricGovernance | undefined,
  keyOfName: ReadonlyMap<string, string>,
): RegistryMetricInput {
  if (!governance) return derived;
  const merged: RegistryMetricInput = { ...derived };
  for (const [field, value] of Object.entries(governance)) if (value !== undefined) merged[field] = value;
  // members of business_definition are merged, so that a caveat the tool gives survives a governance `included`
  if (governance.business_definition && derived.business_definition)
    merged.business_definition = { ...derived.business_definition, ...governance.business_definition };
  if (governance.relationships)
    merged.relationships = governance.relationships.map(({ kind, target }) => ({
      kind,
      target: keyOfName.get(target) ?? target,
    }));
  if (governance.inputs) merged.inputs = governance.inputs.map((input) => keyOfName.get(input) ?? input);
  return merged;
}
