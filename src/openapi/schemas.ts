/**
 * Response shapes of the REST routes as zod schemas, defined once and turned
 * into the OpenAPI document's components (src/openapi/document.ts). They
 * follow src/rest/operations/*.graphql and src/rest/envelopes.ts (what the
 * routes return) and the contract's field tables; the OpenAPI tests check
 * every real response against them.
 */

import { z } from 'zod';
import { AGENT_CONTRACT_SCOPES } from '../auth/scopes.js';
import { SERVICE_TOKEN_PATTERN } from '../auth/secrets.js';
import { WRITE_SCOPES } from '../auth/service-token.js';
import { CHANGE_EVENT_TYPES } from '../changes/event.js';
import { errors } from '../errors.js';
import { LifecycleStatus, MetricScope } from '../generated/prisma/enums.js';
import { BUSINESS_DEFINITION_STATUSES } from '../metric/business-definition.js';
import { LEGACY_STATUSES } from '../metric/lifecycle.js';
import { LINEAGE_DIRECTIONS, MAX_LINEAGE_DEPTH, MAX_LINEAGE_LIMIT, MAX_LINEAGE_STEPS } from '../metric/lineage.js';
import { MAX_SERVED_INPUTS } from '../metric/lineage-parts.js';
import { MAX_UNTRUSTED_INPUTS, TRUST_REASONS, TRUST_VERDICTS } from '../metric/trust.js';
import { USAGE_WINDOW_DAYS } from '../metric/usage.js';
import { USAGE_REPORT_MAX_KEYS } from '../metric/usage-report.js';
import { DEFINITION_FIELDS, IMPACT_CHANGES, IMPACT_DEPENDENT_KEYS, IMPACT_READER_KEYS } from '../registry/impact.js';
import { PLAN_RESULTS, type PlanResult } from '../registry/plan.js';
import { PLAN_VALUE_MAX_CHARS } from '../registry/plan-values.js';
import { MAX_UPLOAD_METRICS, MAX_UPLOAD_PARTS, UPLOAD_TTL_MS } from '../registry/upload.js';
import type { DegradedReason } from '../summaries/service.js';
import { discussionResponseSchemas } from './discussion-schemas.js';

/** Any 8-4-4-4-12 hex string, as the routes accept (src/uuid.ts). */
const uuid = () => z.guid();
const timestamp = () => z.iso.datetime().describe('ISO 8601 UTC timestamp');
/** A JSON value of the registry whose inner shape the contract does not fix. */
const jsonValue = () => z.unknown();
const jsonObject = () => z.record(z.string(), z.unknown());

/** Values of `X-Discussion-Summary`; the `satisfies` and the check below keep them in step with the service. */
export const DEGRADED_REASONS = [
  'no_discussion',
  'timeout',
  'generator_error',
  'daily_cap_exceeded',
  'pricing_unavailable',
  'discussion_unavailable',
  'generator_busy',
] as const satisfies readonly DegradedReason[];
type Missing = Exclude<DegradedReason, (typeof DEGRADED_REASONS)[number]>;
const _everyReasonListed: Missing extends never ? true : never = true;
void _everyReasonListed;

const lifecycleStatus = z.enum(LifecycleStatus).describe('Canonical lifecycle status (contract section 3).');
const legacyStatus = z
  .enum(LEGACY_STATUSES)
  .describe('Legacy status derived from lifecycle_status; kept for older consumers.');
const scope = z.enum(MetricScope);

const meta = z.object({ apiVersion: z.literal('v1') });

export const Pagination = z.object({
  page: z.int().min(1),
  pageSize: z.int().min(1).max(100),
  total: z.int().min(0),
  totalPages: z.int().min(0).describe('ceil(total / pageSize); 0 when total is 0'),
});

export const MetricListItem = z.object({
  id: uuid(),
  name: z.string(),
  description: z.string(),
  policy_tier: z.string(),
  owner_team: z.string(),
  status: legacyStatus,
  lifecycle_status: lifecycleStatus,
  definition_version: z.string(),
  scope,
  domain_id: z.string().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
  concept_name: z.string(),
  template_name: z.string(),
  // A getter: Trust is declared further down, with the contract.
  get trust() {
    return Trust.optional().describe(
      'The verdict as the contract computes it, at the time of the request (docs/trust.md). Present for a key that ' +
        'may read the contract (`canonical-metric-api:read` or `metrics:read`); absent for a key of ' +
        '`definition:read` alone.',
    );
  },
});

const SearchCorrection = z.object({
  from: z.string().describe('a word of `q` as searched (lowercase)'),
  to: z.string().describe('the word of the organization’s metrics it most likely meant; close words match too'),
});

/** The list's meta: the search's account of itself besides the version (additive fields). */
const listMeta = meta.extend({
  corrected: z
    .array(SearchCorrection)
    .optional()
    .describe(
      'Search only, present when some result came through a correction: the words of `q` read as other words ' +
        '(a typo such as chrun → churn, a partial word such as reven → revenue).',
    ),
  did_you_mean: z
    .array(z.string())
    .optional()
    .describe(
      'Search only, present when the search found nothing (total 0): up to 5 names or keys of the ' +
        'organization’s metrics close to `q`, closest first, whatever the filters; empty when none is close.',
    ),
});

export const MetricList = z
  .object({ data: z.array(MetricListItem), pagination: Pagination, meta: listMeta })
  .describe('Paginated envelope; search responses use the same envelope.');

const DisambiguationHint = z
  .object({
    preferred_metric_id: uuid().nullable(),
    candidates: z.array(
      z.object({
        metric_id: uuid(),
        key: z.string(),
        name: z.string(),
        lifecycle_status: lifecycleStatus,
        relation: z.enum(['variant_of', 'has_variant', 'supersedes', 'superseded_by', 'conflicts_with']),
      }),
    ),
  })
  .nullable()
  .describe('null when the metric has no variant_of, supersedes or conflicts_with relationship');

export const MetricDetailMetric = z.object({
  id: uuid(),
  org_id: uuid(),
  project_id: uuid(),
  metric_type: z.string(),
  key: z.string(),
  name: z.string(),
  description: z.string(),
  definition_version: z.string(),
  status: legacyStatus,
  policy_tier: z.string(),
  owner_team: z.string(),
  owner_display_name: z.string().nullable(),
  tags: z.array(z.string()),
  aliases: z.array(z.string()).describe('Other names people use for this metric ("NRR"); searched like the name'),
  concept_name: z.string(),
  template_name: z.string(),
  sql_expression: z.string(),
  grains: z.array(z.string()),
  default_grain: z.string(),
  dimensions: z.array(jsonValue()),
  filters: z.array(z.string()),
  source_refs: z.array(jsonObject()),
  expression: jsonValue(),
  dependencies: jsonValue(),
  lifecycle_status: lifecycleStatus,
  scope,
  domain_id: z.string().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
});

const nullableString = () => z.string().nullable();

const announcedVerdict = z
  .enum(TRUST_VERDICTS)
  .nullable()
  .describe(
    'the announced verdict (as the change feed last reported it); null while the metric has not been evaluated ' +
      'yet, and for a key of definition:read alone, which reads no verdict',
  );

export const InputMetric = z
  .object({ id: uuid(), key: z.string(), name: z.string(), verdict: announcedVerdict })
  .describe('A metric this one is built from (docs/lineage.md)');

/** A metric's inputs and dependents count, on the detail and the contract (additive). */
const lineageMembers = {
  inputs: z
    .array(InputMetric)
    .max(MAX_SERVED_INPUTS)
    .describe(`the metrics this one is built from, in their order (the first ${MAX_SERVED_INPUTS}); [] when none`),
  dependents_count: z.int().min(0).describe('how many metrics have this one as an input'),
};

export const MetricDetail = z.object({
  metric: MetricDetailMetric,
  relationships: z.array(
    z.object({
      kind: z.string(),
      target_metric_id: uuid(),
      target: z.object({ key: z.string(), name: z.string(), lifecycle_status: lifecycleStatus }),
    }),
  ),
  approvals: z
    .array(
      z.object({
        id: uuid(),
        version_id: uuid().nullable(),
        approver_user_id: uuid().nullable(),
        approver_role: z.string(),
        decision: z.string(),
        decided_at: timestamp(),
        comment: z.string(),
      }),
    )
    .describe('newest first'),
  versionHistory: z
    .array(
      z.object({
        id: uuid(),
        definition_version: z.string(),
        status: z.string(),
        released_at: timestamp().nullable(),
        change_summary: z.string(),
      }),
    )
    .describe('most recently released first'),
  fiscal_calendar_start_month: z.int().min(1).max(12),
  time_semantics: jsonObject()
    .nullable()
    .describe('may hold forward-compatible keys; read known keys, do not reject unknown ones'),
  deprecated_framing_rules: z.array(jsonValue()),
  dimension_map: jsonObject(),
  column_aliases: jsonObject(),
  execution_context: z.object({
    resolved_parameters: jsonObject(),
    rendered_sql_examples: z.array(jsonValue()),
    latest_closed_period: jsonValue(),
  }),
  governance_facts: z.object({
    owner_team: nullableString(),
    approver_role: nullableString(),
    approver_user: nullableString(),
    approved_at: nullableString(),
    lifecycle_status: lifecycleStatus.nullable(),
    current_version: nullableString(),
    effective_from: nullableString(),
    effective_to: nullableString(),
    next_review_date: nullableString(),
  }),
  approval_state: jsonValue(),
  consumer_contexts: jsonObject(),
  requires_disambiguation: DisambiguationHint,
  policy_examples: z.array(jsonValue()),
  ...lineageMembers,
});

export const MetricDetailResponse = z.object({ data: MetricDetail, meta });

export const AgentContextNote = z.object({
  message_id: uuid(),
  thread_id: uuid(),
  intent: z.string().describe('for example decision_rationale, clarification, objection'),
  author_display_name: z.string(),
  body: z.string(),
  pinned_at: timestamp(),
  created_at: timestamp(),
});

export const DiscourseSummary = z
  .object({
    open_objections_count: z.int().min(0),
    open_proposals_count: z.int().min(0),
    last_activity_at: timestamp().nullable(),
  })
  .nullable()
  .describe('null when no thread on the metric has intent objection or proposal');

export const Trust = z
  .object({
    verdict: z.enum(TRUST_VERDICTS),
    reasons: z
      .array(z.enum(TRUST_REASONS))
      .describe(`the codes that decided the verdict, in this order: ${TRUST_REASONS.join(', ')}`),
    preferred_metric_id: uuid()
      .nullable()
      .describe('for do_not_use: the metric that supersedes this one (the end of the chain); else null'),
    untrusted_inputs: z
      .array(
        z.object({
          id: uuid(),
          key: z.string(),
          verdict: z.enum(TRUST_VERDICTS),
          reasons: z.array(z.enum(TRUST_REASONS)).describe("the input's own reasons"),
        }),
      )
      .max(MAX_UNTRUSTED_INPUTS)
      .describe(
        'with untrusted_input: the upstream metrics (direct inputs or inputs of inputs) that are do_not_use or whose ' +
          `latest validation failed, nearest first, at most ${MAX_UNTRUSTED_INPUTS}; else empty (docs/trust.md)`,
      ),
  })
  .describe('Whether to use the metric and why (see docs/trust.md)');

export const MetricContract = z.object({
  metric_id: uuid(),
  name: z.string(),
  business_definition: z.object({
    included: z.string(),
    excluded: z.string(),
    time_window: z.string(),
    caveats: z.string(),
    legacy_description: z.string(),
  }),
  business_definition_status: z
    .enum(BUSINESS_DEFINITION_STATUSES)
    .describe(
      '`empty` when every member of `business_definition` is blank: the metric has no definition yet, and the ' +
        'blank strings are not data; `defined` otherwise (docs/contract-behaviour.md).',
    ),
  current_approved_version: z
    .object({ id: uuid(), definition_version: z.string(), released_at: timestamp().nullable() })
    .nullable(),
  last_validated_at: timestamp().nullable(),
  lifecycle_status: lifecycleStatus,
  challenges_count: z.int().min(0),
  open_challenges_count: z.int().min(0),
  requires_disambiguation: DisambiguationHint,
  canonical_url: z.url().describe('signed-in product detail page: {PUBLIC_APP_URL}/{organization slug}/metrics/{id}'),
  discussion_thread_count: z.int().min(0),
  discussion_message_count: z.int().min(0),
  agent_context_notes: z.array(AgentContextNote).max(10).describe('pinned notes, most recently pinned first'),
  discourse_summary: DiscourseSummary,
  trust: Trust,
  ...lineageMembers,
  discussion_summary: z
    .string()
    .nullable()
    .optional()
    .describe('only with summary=true (absent otherwise); null when degraded, see X-Discussion-Summary'),
  discussion_summary_meta: z
    .object({ cache_hit: z.boolean(), charged: z.boolean() })
    .optional()
    .describe('only with summary=true'),
});

export const MetricContractResponse = z.object({ data: MetricContract, meta });

export const ErrorMessage = z.object({ error: z.string() }).describe('{ "error": "<message>" }');

export const DocumentProblems = z
  .object({
    error: z.string().describe('the first problem, naming its place'),
    details: z
      .array(z.string())
      .min(2)
      .optional()
      .describe('every problem, the first included; only when there are several'),
  })
  .describe(
    '400 of a document or batch that cannot be applied: `{ "error": "<first problem>", "details": [...] }`. ' +
      'Each problem names its place: a JSON path such as `metrics[3].lifecycle_status`, with the line and ' +
      'column in a YAML document, or the line and column of a YAML syntax error.',
  );

export const SandboxError = z
  .object({
    error: z.object({ code: z.literal(errors.sandboxKeyRequiresSandbox.body.error.code), message: z.string() }),
  })
  .describe('403 of a sandbox key sent without X-Service-Env: sandbox');

const keyScopes = z.array(z.string()).describe(`new keys: ${AGENT_CONTRACT_SCOPES.join(' and ')}`);

export const CreatedApiKeyResponse = z.object({
  data: z.object({
    id: uuid(),
    name: z.string(),
    key: z
      .string()
      .regex(/^cl_[0-9a-f]{40}$/)
      .describe('the full secret, shown this once'),
    scopes: keyScopes,
    sandbox: z.boolean(),
    rate_limit_per_minute: z.int().nullable().describe('null: the service default applies'),
    created_at: timestamp(),
  }),
});

export const ApiKeyListResponse = z.object({
  data: z.array(
    z.object({
      id: uuid(),
      name: z.string(),
      key_prefix: z.string(),
      scopes: keyScopes,
      sandbox: z.boolean(),
      rate_limit_per_minute: z.int().nullable(),
      created_at: timestamp(),
      revoked_at: timestamp().nullable(),
      last_used_at: timestamp().nullable(),
    }),
  ),
});

export const RevokedApiKeyResponse = z.object({ data: z.object({ id: uuid(), revoked_at: timestamp() }) });

const writeScopes = z.array(z.enum(WRITE_SCOPES));

export const CreatedServiceTokenResponse = z.object({
  data: z.object({
    id: uuid(),
    name: z.string(),
    token: z.string().regex(SERVICE_TOKEN_PATTERN).describe('the full secret, shown this once'),
    scopes: writeScopes,
    created_at: timestamp(),
  }),
});

export const ServiceTokenListResponse = z.object({
  data: z
    .array(
      z.object({
        id: uuid(),
        name: z.string(),
        token_prefix: z.string().describe('`cls_` and the first 8 hex characters'),
        scopes: writeScopes,
        created_at: timestamp(),
        revoked_at: timestamp().nullable(),
        last_used_at: timestamp().nullable(),
      }),
    )
    .describe('newest first'),
});

export const RevokedServiceTokenResponse = z.object({ data: z.object({ id: uuid(), revoked_at: timestamp() }) });

const webhookTypes = z
  .array(z.enum(CHANGE_EVENT_TYPES))
  .nullable()
  .describe('the event types delivered; null: every type');

export const CreatedWebhookResponse = z.object({
  data: z.object({
    id: uuid(),
    url: z.string(),
    types: webhookTypes,
    description: z.string().nullable(),
    secret: z
      .string()
      .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/)
      .describe('`whsec_` and the base64 of 32 random bytes: the signing key, shown this once (it is stored)'),
    created_at: timestamp(),
  }),
});

const delivery = {
  status_code: z.int().nullable().describe('the HTTP status answered; null when none came'),
  error: z.string().nullable().describe('why the attempt failed, when no status says it'),
};

export const WebhookListResponse = z.object({
  data: z
    .array(
      z.object({
        id: uuid(),
        url: z.string(),
        types: webhookTypes,
        description: z.string().nullable(),
        created_at: timestamp(),
        disabled_at: timestamp().nullable().describe('set once the endpoint failed too long: nothing more is sent'),
        disabled_reason: z.string().nullable(),
        failing_since: timestamp().nullable().describe('the first failure since the last success; null while healthy'),
        next_attempt_at: timestamp().describe('when the next event (or retry) may be sent'),
        last_delivery: z.object({ time: timestamp(), ...delivery }).nullable(),
      }),
    )
    .describe('oldest first; never a secret'),
});

export const DeletedWebhookResponse = z.object({ data: z.object({ id: uuid(), deleted: z.literal(true) }) });

export const WebhookDeliveriesResponse = z.object({
  data: z
    .array(
      z.object({
        event_id: uuid(),
        type: z.string(),
        attempt: z.int().min(1).describe('1 for the first attempt at the event'),
        ...delivery,
        duration_ms: z.int().min(0),
        time: timestamp(),
      }),
    )
    .describe('the latest 100 attempts, newest first'),
});

export const EnabledWebhookResponse = z.object({
  data: z.object({
    id: uuid(),
    enabled: z.boolean().describe('false: the endpoint was not disabled, and nothing changed'),
    skipped_expired_events: z
      .boolean()
      .describe('retention removed events after where it stopped: delivery resumes after the oldest kept'),
  }),
});

export const WebhookTestResponse = z.object({
  data: z.object({
    event_id: uuid(),
    type: z.literal('webhook.test'),
    delivered: z.boolean().describe('a 2xx came within the timeout'),
    ...delivery,
    duration_ms: z.int().min(0),
  }),
});

const count = () => z.int().min(0);
const planTotals = {
  created: count(),
  restored: count(),
  updated: count(),
  unchanged: count(),
  absent: count(),
  removed: count(),
} satisfies Record<PlanResult, z.ZodType>;

export const RegistryPlanResponse = z.object({
  data: z.object({
    organization: z.string().describe('the slug of the organization the document was planned for'),
    source: z
      .string()
      .describe(
        "the source the apply was made as: source=, else the document's `source` (default `registry`), else the " +
          "importer's (`dbt:<project>`, `osi:<model>`)",
      ),
    in_sync: z
      .boolean()
      .optional()
      .describe('with check=true only: whether the registry matches the document (the plan changes nothing)'),
    plan: z
      .array(
        z.object({
          key: z.string(),
          result: z
            .enum(PLAN_RESULTS)
            .describe(
              'created: a new key; restored: a key a prune removed within CHANGES_RETENTION_DAYS, back with its ' +
                'id, evidence and discussions (its fields and lists as the document says); updated: a field, ' +
                'version, approval or relationship differs; unchanged; absent: in the registry, not in the ' +
                'document, kept; removed: the same with prune=true',
            ),
          changed_fields: z
            .array(z.string())
            .describe(
              'for updated: the document fields that differ (`versions`, `approvals`, `relationships`, `inputs` among them), ' +
                "in the document's order of fields; else []",
            ),
          changes: z
            .array(
              z.object({
                field: z.string(),
                from: z.unknown().describe('the stored value'),
                to: z.unknown().describe('the value the apply writes'),
              }),
            )
            .optional()
            .describe(
              `updated only: each changed field with its stored and new value (a field of several columns as an ` +
                `object of them, a list as its items); a value longer than ${PLAN_VALUE_MAX_CHARS} characters (a ` +
                `string's own, JSON text otherwise) is shown as its first ${PLAN_VALUE_MAX_CHARS} characters, "…" ` +
                'and its length ("… (5000 characters)")',
            ),
          conflicts: z
            .array(z.object({ field: z.string(), owner: z.string().describe('the source that owns the field') }))
            .optional()
            .describe(
              'fields the document sets, to another value, that another source owns (docs/registry.md#sources); ' +
                'an apply with any is refused (400) unless force_conflicts=true; absent when none',
            ),
        }),
      )
      .describe("the document's metrics in its order, then the registry's metrics that it does not list"),
    totals: z.object(planTotals).describe('how many entries of the plan have each result'),
    trust_policy: z
      .enum(['unchanged', 'changed'])
      .describe(
        "whether the apply changes the organization's trust policy: a document without `trust_policy` leaves " +
          'it unchanged; a change re-evaluates every verdict of the organization (with its events)',
      ),
    dry_run: z.boolean().describe('the request asked for a dry run: nothing was written'),
    applied: z
      .boolean()
      .describe('whether anything was written: false for a dry run and for a plan of only unchanged and absent'),
    allow_removals_required: count()
      .nullable()
      .describe(
        'the `allow_removals` an apply of this plan needs (its count of removals, when they are more than ' +
          'PRUNE_MAX_REMOVALS or every metric of the organization); null: none',
      ),
    impact: z
      .array(
        z.object({
          key: z.string(),
          change: z
            .enum(IMPACT_CHANGES)
            .describe(
              'removed (prune), deprecated (lifecycle_status becomes DEPRECATED), superseded (a new `supersedes` ' +
                `relationship targets it), definition_changed (one of ${DEFINITION_FIELDS.join(', ')} changed); ` +
                'the first of these when several apply',
            ),
          dependents: z
            .object({
              count: count(),
              keys: z
                .array(z.string())
                .max(IMPACT_DEPENDENT_KEYS)
                .describe(`the first ${IMPACT_DEPENDENT_KEYS} by key`),
            })
            .describe('metrics built on it through their inputs, directly or through other inputs'),
          readers: z
            .object({
              count: count(),
              keys: z
                .array(z.string())
                .max(IMPACT_READER_KEYS)
                .describe(`the names of the ${IMPACT_READER_KEYS} that read it most`),
            })
            .describe(
              `API keys and service tokens, not revoked, that read it in the last ${USAGE_WINDOW_DAYS} days (UTC)`,
            ),
        }),
      )
      .describe(
        'for each metric of the registry that the plan removes, deprecates, supersedes or changes in definition, ' +
          'in the order of `plan`: what is built on it and who read it lately, as before the apply (docs/impact.md)',
      ),
  }),
});

/** What an upload in parts holds (docs/registry.md, "Uploads in parts"). */
export const RegistryUploadResponse = z.object({
  data: z.object({
    upload_id: uuid(),
    created_at: z.iso.datetime(),
    expires_at: z.iso
      .datetime()
      .describe(`when it is removed unapplied: ${UPLOAD_TTL_MS / 3_600_000} hours after it was created`),
    metrics: count().max(MAX_UPLOAD_METRICS).describe('metrics over all its parts'),
    parts: z
      .array(
        z.object({
          part: z.int().min(1).max(MAX_UPLOAD_PARTS),
          source: z.string().describe("the part's `source` (the parts of an upload are one source's)"),
          metrics: count(),
          trust_policy: z.boolean().describe('whether the part sets the trust policy (one part of an upload may)'),
          received_at: z.iso.datetime(),
        }),
      )
      .describe('in the order of their numbers'),
  }),
});

/** The answer of an upload's apply: PUT /api/registry's, with the upload's id. */
export const RegistryUploadPlanResponse = z.object({
  data: RegistryPlanResponse.shape.data.extend({ upload_id: uuid() }),
});

export const MetricSourcesResponse = z.object({
  data: z.object({
    metric_id: uuid(),
    key: z.string(),
    source: z
      .string()
      .describe(
        'the source that created the metric; prune removes it only for this source, and owns the fields not listed',
      ),
    fields: z
      .array(z.object({ field: z.string().describe('a registry document field'), source: z.string() }))
      .describe('the fields a source set, by field name, with that source (docs/registry.md#sources)'),
  }),
});

export const MetricUsageResponse = z.object({
  data: z.object({
    metric_id: uuid(),
    key: z.string(),
    days: z.int().describe('the length of the window in UTC days, today included'),
    since: z.iso.date().describe('the first day of the window'),
    reads: count().describe('reads of the metric in the window, by every credential'),
    readers: count().describe('credentials that read it in the window'),
    keys: z
      .array(
        z.object({
          id: uuid(),
          kind: z.enum(['api_key', 'service_token']),
          name: z.string(),
          prefix: z.string().describe('`cl_` (an API key) or `cls_` (a service token) and the first 8 hex characters'),
          revoked_at: timestamp().nullable(),
          reads: count(),
          last_read_on: z.iso.date().describe('the last UTC day it read the metric'),
        }),
      )
      .max(USAGE_REPORT_MAX_KEYS)
      .describe(`the credentials that read it most, most reads first (at most ${USAGE_REPORT_MAX_KEYS})`),
    daily: z.array(z.object({ day: z.iso.date(), reads: count() })).describe('the days with reads, oldest first'),
  }),
});

export const RecordedValidationsResponse = z.object({
  data: z.object({
    recorded: count().describe('results stored by this request'),
    duplicates: count().describe('results that were stored already (same metric, ran_at and source)'),
  }),
});

const testCounts = z.object({ passed: count(), warned: count(), failed: count(), errored: count() });

export const DbtValidationsResponse = z.object({
  data: z.object({
    ran_at: timestamp().describe("the run's metadata.generated_at (else its results' latest completed_at)"),
    source: z.literal('dbt'),
    recorded: count().describe('results stored by this request'),
    duplicates: count().describe('results stored already (this run imported before)'),
    metrics: z
      .array(
        z.object({
          key: z.string(),
          status: z.enum(['passed', 'failed']).nullable().describe('null: no counted test is on its models'),
          tests: testCounts.describe(
            "the tests counted for it (on the models behind its and its inputs' semantic models)",
          ),
          outcome: z
            .enum(['recorded', 'duplicate', 'unmatched', 'no_tests'])
            .describe('unmatched: the organization has no metric with this key, so nothing was recorded for it'),
        }),
      )
      .describe('every metric of the manifest'),
    unmatched: z.array(z.string()).describe('keys of metrics with evidence that the organization does not have'),
    results: z
      .object({ counted: count(), onNoMetric: count(), skipped: count(), notTests: count() })
      .describe(
        "the run's results: tests counted for a metric, tests on models no metric reads, skipped tests (no evidence), results of nodes that are no tests",
      ),
  }),
});

export const ChangeEvent = z
  .object({
    specversion: z.literal('1.0'),
    id: uuid().describe('unique; the `webhook-id` of its webhook deliveries'),
    source: z.string().describe('/organizations/<organization id>'),
    type: z.enum(CHANGE_EVENT_TYPES),
    subject: uuid().describe("the metric's id"),
    time: timestamp(),
    datacontenttype: z.literal('application/json'),
    data: z
      .object({ id: uuid(), key: z.string(), name: z.string(), lifecycle_status: lifecycleStatus })
      .catchall(z.unknown())
      .describe(
        "The metric after the change, then the type's own members: `changed_fields` (metric.updated), `from` " +
          'and `to` (metric.lifecycle_changed: statuses; metric.trust_changed: `{ verdict, reasons }`, with ' +
          '`preferred_metric_id`), `definition_version`, `status` and `released_at` (metric.version_released), ' +
          '`status`, `ran_at` and `source` (metric.validated).',
      ),
  })
  .describe('A CloudEvents 1.0 event (JSON format).');

export const ChangeFeed = z.object({
  data: z.array(ChangeEvent).describe('oldest first'),
  next_cursor: z.string().describe('`after` of the next request: after the last event here (the one given when none)'),
  meta,
});

export const LineageNode = z.object({
  id: uuid(),
  key: z.string(),
  name: z.string(),
  lifecycle_status: lifecycleStatus,
  verdict: announcedVerdict,
  depth: z
    .int()
    .min(1)
    .max(MAX_LINEAGE_DEPTH)
    .describe('edges from the metric walked from; 1: a direct input or dependent'),
  via: z
    .object({ metric_id: uuid(), input_metric_id: uuid(), position: z.int().min(0) })
    .describe(
      'the edge the node was reached by (metric_id has input_metric_id as its input at position); of several at ' +
        'its depth, the one from the smallest id',
    ),
});

export const MetricLineage = z.object({
  data: z.object({
    metric_id: uuid(),
    direction: z.enum(LINEAGE_DIRECTIONS),
    depth: z.int().min(1).max(MAX_LINEAGE_DEPTH).describe('the depth walked to'),
    total: z.int().min(0).describe('metrics found within the depth (at least that many when truncated)'),
    truncated: z
      .boolean()
      .describe(`the walk stopped after ${MAX_LINEAGE_STEPS} edges: metrics further away may be missing`),
    nodes: z
      .array(LineageNode)
      .max(MAX_LINEAGE_LIMIT)
      .describe('this page: each metric once, at the least depth it is found, by depth, then id'),
  }),
  next_cursor: z.string().nullable().describe('`after` of the next page; null on the last one'),
  meta,
});

export const Health = z.object({ status: z.literal('ok') });

export const Readiness = z.object({
  status: z.enum(['ready', 'unavailable']),
  database: z.enum(['up', 'down']),
  redis: z.enum(['up', 'down']).describe('up when Redis is not configured'),
});

/** Component name → schema; the document refers to them as `#/components/schemas/<name>`. */
export const responseSchemas = {
  Pagination,
  MetricListItem,
  MetricList,
  MetricDetail,
  MetricDetailResponse,
  AgentContextNote,
  Trust,
  MetricContract,
  MetricContractResponse,
  ErrorMessage,
  SandboxError,
  CreatedApiKeyResponse,
  ApiKeyListResponse,
  RevokedApiKeyResponse,
  DocumentProblems,
  CreatedServiceTokenResponse,
  ServiceTokenListResponse,
  RevokedServiceTokenResponse,
  RegistryPlanResponse,
  RegistryUploadResponse,
  RegistryUploadPlanResponse,
  MetricUsageResponse,
  MetricSourcesResponse,
  RecordedValidationsResponse,
  DbtValidationsResponse,
  ChangeEvent,
  ChangeFeed,
  InputMetric,
  LineageNode,
  MetricLineage,
  CreatedWebhookResponse,
  WebhookListResponse,
  DeletedWebhookResponse,
  EnabledWebhookResponse,
  WebhookDeliveriesResponse,
  WebhookTestResponse,
  Health,
  Readiness,
  ...discussionResponseSchemas,
} as const;
