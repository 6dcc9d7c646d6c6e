/**
 * Request bodies of the write routes as zod schemas, turned into the OpenAPI
 * document's components with `io: 'input'` (what a client sends: a field
 * with a default may be left out).
 *
 * The validation batch and the service token body are the routes' own
 * schemas. The registry document's schemas are not exported by
 * src/registry/document.ts, so its metric is rebuilt here from the parts it
 * is made of (the fixture's definition fields, the key pattern, the
 * defaults); the OpenAPI tests check that this description and
 * parseRegistryDocument accept and refuse the same documents.
 */
import { z } from 'zod';
import { WRITE_SCOPES } from '../auth/service-token.js';
import { CHANGE_EVENT_TYPES } from '../changes/event.js';
import { metricDefinitionShape, timestamp } from '../fixtures/schema.js';
import { ApprovalDecision, LifecycleStatus, RelationshipKind, VersionStatus } from '../generated/prisma/enums.js';
import { createServiceTokenBody } from '../http/admin-routes.js';
import { createWebhookBody } from '../http/webhook-routes.js';
import { trustPolicySchema } from '../metric/trust-policy.js';
import { DEFAULTABLE_FIELDS, MAX_METRIC_KEY_LENGTH, METRIC_KEY_PATTERN } from '../registry/document.js';
import {
  EARLIEST_YEAR,
  LATEST_YEAR,
  MAX_DOCUMENT_METRICS,
  MAX_METRIC_INPUTS,
  MAX_NAME_CHARACTERS,
  MAX_PROSE_CHARACTERS,
  MAX_SQL_CHARACTERS,
} from '../registry/limits.js';
import { validationBatch } from '../registry/validations.js';
import { discussionRequestSchemas } from './discussion-schemas.js';

/**
 * The fixture format's free JSON value (`expression`, `dimensions[]`, ...), the very instance the fields use:
 * it is recursive, so it is one component that they refer to.
 */
export const JsonValue = metricDefinitionShape.expression.unwrap();

const metricKey = z
  .string()
  .max(MAX_METRIC_KEY_LENGTH)
  .regex(METRIC_KEY_PATTERN)
  .describe(
    `lowercase letters, digits, "_", "." and "-", starting with a letter or digit; at most ${MAX_METRIC_KEY_LENGTH}`,
  );

const at = () => timestamp.describe('ISO 8601 timestamp, for example 2026-02-15T00:00:00Z; without a zone it is UTC');

const fromDefaults = (description: string) => `${description}; may come from \`defaults\``;

const RegistryVersion = z
  .strictObject({
    definition_version: z.string().min(1).describe('identity of the version within its metric'),
    status: z.enum(VersionStatus),
    released_at: at().nullable(),
    change_summary: z.string().default(''),
  })
  .describe('A version of the definition; identity `definition_version`.');

const RegistryApproval = z
  .strictObject({
    definition_version: z
      .string()
      .min(1)
      .nullable()
      .describe("one of this metric's `versions`, or null: not tied to a version"),
    approver_role: z.string(),
    approver: z.string().min(1).nullable().describe('the email of a member of the organization, or null: not recorded'),
    decision: z.enum(ApprovalDecision),
    decided_at: at(),
    comment: z.string().default(''),
  })
  .describe('An approval decision; identity `(definition_version, approver_role, decided_at)`.');

const RegistryRelationship = z
  .strictObject({
    kind: z.enum(RelationshipKind),
    target: metricKey.describe('the key of another metric, in this document or already in the registry'),
  })
  .describe('identity `(kind, target)`');

const { metric_type, lifecycle_status, definition_version, policy_tier, scope, owner_team, tags } =
  metricDefinitionShape;

export const RegistryMetric = z
  .strictObject({
    ...metricDefinitionShape,
    key: metricKey.describe("required; unique in the document; the metric's identity"),
    project: z
      .string()
      .trim()
      .min(1)
      .optional()
      .describe('a project **name** of the organization, created when missing; required unless in `defaults`'),
    domain: z
      .string()
      .trim()
      .min(1)
      .nullable()
      .default(null)
      .describe(fromDefaults('a domain **name**, created when missing, or null')),
    owner_team: owner_team.optional().describe('required unless in `defaults`'),
    owner_display_name: metricDefinitionShape.owner_display_name.describe(fromDefaults('default null')),
    metric_type: metric_type.default('base').describe(fromDefaults('for example base or derived')),
    lifecycle_status: lifecycle_status.default(LifecycleStatus.DRAFT).describe(fromDefaults('canonical lifecycle')),
    definition_version: definition_version.default('1.0.0').describe('quote it in YAML: 1.0 would be a number'),
    policy_tier: policy_tier.default('tier_3').describe(fromDefaults('for example tier_1')),
    scope: scope.default('exploratory').describe(fromDefaults('the scope of the definition')),
    tags: tags.describe(fromDefaults('default []')),
    concept_name: metricDefinitionShape.concept_name.optional().describe('default: the key'),
    template_name: metricDefinitionShape.template_name.optional().describe('default: the metric type'),
    grains: z.array(z.string()).default([]),
    default_grain: z.string().optional().describe('one of `grains`; default the first grain, or "" without grains'),
    versions: z
      .array(RegistryVersion)
      .default([])
      .describe("default []; the metric's versions, made to match this list exactly"),
    approvals: z.array(RegistryApproval).default([]).describe('default []; made to match this list exactly'),
    relationships: z.array(RegistryRelationship).default([]).describe('made to match this list exactly'),
    inputs: z
      .array(metricKey)
      .max(MAX_METRIC_INPUTS)
      .default([])
      .describe(
        'default []; the keys of the metrics it is computed from, each in this document or already in the ' +
          'registry, once, not the metric itself, and no cycle; made to match this list (and its order) exactly',
      ),
  })
  .describe(
    'A metric, keyed by `key` (no ids: the service derives them). Every field of the fixture format’s metric, ' +
      'with the defaults shown; `id`, `project_id`, `domain_id`, `created_at`, `updated_at`, `validations`, ' +
      '`challenges` and `threads` are refused, like any unknown field. A field left out takes its default ' +
      '(or the value in `defaults`) on every apply.\n\n' +
      `Each text at most ${MAX_NAME_CHARACTERS} characters (names, labels, list entries), ` +
      `${MAX_PROSE_CHARACTERS} in \`description\`, \`business_definition\`, \`change_summary\`, \`comment\`, ` +
      `\`filters\` and the free-form JSON fields, ${MAX_SQL_CHARACTERS} in \`sql_expression\` and ` +
      '`execution_context`; no control characters but tab and line breaks; timestamps from ' +
      `${EARLIEST_YEAR} to ${LATEST_YEAR} (docs/registry-document.md, "Limits").`,
  );

export const RegistryDefaults = z
  .strictObject({
    project: z.string().trim().min(1).optional(),
    domain: z.string().trim().min(1).nullable().optional(),
    owner_team: z.string().optional(),
    owner_display_name: z.string().nullable().optional(),
    metric_type: z.string().optional(),
    lifecycle_status: z.enum(LifecycleStatus).optional(),
    policy_tier: z.string().optional(),
    scope: metricDefinitionShape.scope.optional(),
    tags: z.array(z.string()).optional(),
  } satisfies Record<(typeof DEFAULTABLE_FIELDS)[number], z.ZodType>)
  .describe(`Values for the metrics that leave these fields out: ${DEFAULTABLE_FIELDS.join(', ')}.`);

export const RegistryDocument = z
  .strictObject({
    organization: z
      .string()
      .min(1)
      .describe("the slug of the caller's organization (its id is accepted too); another organization is 403"),
    defaults: RegistryDefaults.optional(),
    trust_policy: trustPolicySchema
      .nullable()
      .optional()
      .describe(
        "rules per `policy_tier` (docs/trust.md); absent: the organization's stored policy is kept; null or {}: " +
          "back to the server's defaults",
      ),
    metrics: z
      .array(RegistryMetric)
      .max(MAX_DOCUMENT_METRICS)
      .describe('every metric the organization should have (may be empty); keys unique'),
  })
  .describe('A registry document (docs/registry-document.md): the metrics of one organization, as YAML or JSON.');

export const ValidationResultsRequest = validationBatch.describe(
  'Validation evidence: each result names a metric by key. A result already recorded (same metric, `ran_at` ' +
    'and `source`) is not recorded again.',
);

export const DbtEvidenceRequest = z
  .strictObject({
    run_results: z
      .looseObject({ results: z.array(z.looseObject({ unique_id: z.string(), status: z.string() })) })
      .describe("dbt's target/run_results.json of a `dbt test` or `dbt build` (schema v6), as dbt wrote it"),
    manifest: z
      .looseObject({
        nodes: z.record(z.string(), z.unknown()),
        semantic_models: z.record(z.string(), z.unknown()),
        metrics: z.record(z.string(), z.unknown()),
      })
      .describe("dbt's target/manifest.json of the same project (schema v12), as dbt wrote it"),
  })
  .describe("A dbt run's artifacts: its test results and the manifest that ties tests to models and metrics.");

/** The route's body, with `scopes` narrowed to what the route accepts (it refuses any other value with 400). */
export const CreateServiceTokenRequest = createServiceTokenBody.extend({
  scopes: z
    .array(z.enum(WRITE_SCOPES))
    .min(1)
    .max(8)
    .describe(`one or more of ${WRITE_SCOPES.join(', ')}`),
});

/** The route's body, with `types` narrowed to what the route accepts (anything else is 400). */
export const CreateWebhookRequest = createWebhookBody.extend({
  url: z
    .string()
    .max(2048)
    .describe('https:// (http:// only with WEBHOOK_ALLOW_HTTP), resolving to public addresses only'),
  types: z
    .array(z.enum(CHANGE_EVENT_TYPES))
    .min(1)
    .max(50)
    .optional()
    .describe('the event types to deliver; absent: every type'),
  description: z.string().max(500).nullable().optional(),
});

/** Component name → request schema. */
export const requestSchemas = {
  JsonValue,
  RegistryDocument,
  RegistryDefaults,
  RegistryMetric,
  ValidationResultsRequest,
  DbtEvidenceRequest,
  CreateServiceTokenRequest,
  CreateWebhookRequest,
  ...discussionRequestSchemas,
} as const;
