/**
 * The registry document (docs/registry-document.md) as a zod schema: the
 * metrics of one organization, keyed by their `key`s, without ids. Strict
 * like the fixture format (an unknown field is almost always a typo); the
 * definition fields and their validation are the fixture's
 * (src/fixtures/schema.ts), with the document's own defaults.
 */
import { z } from 'zod';
import { problemsFromZod } from '../fixtures/fixture-error.js';
import { metricDefinitionShape, timestamp } from '../fixtures/schema.js';
import { ApprovalDecision, LifecycleStatus, RelationshipKind, VersionStatus } from '../generated/prisma/enums.js';
import { type TrustPolicyDocument, trustPolicySchema } from '../metric/trust-policy.js';
import { MAX_DOCUMENT_METRICS, MAX_METRIC_INPUTS } from './limits.js';
import type { RegistryProblem } from './registry-error.js';

export const METRIC_KEY_PATTERN = /^[a-z0-9][a-z0-9_.-]*$/;
export const MAX_METRIC_KEY_LENGTH = 128;

/** A source's name (docs/registry.md#sources): spelled like a key, with ':' between its kind and its project. */
export const SOURCE_NAME_PATTERN = /^[a-z0-9][a-z0-9_.:-]*$/;
export const MAX_SOURCE_NAME_LENGTH = 128;
/** The source of a registry document that names none. */
export const DEFAULT_SOURCE = 'registry';

export const sourceName = z
  .string()
  .max(MAX_SOURCE_NAME_LENGTH, `a source name is at most ${MAX_SOURCE_NAME_LENGTH} characters`)
  .regex(
    SOURCE_NAME_PATTERN,
    'expected lowercase letters, digits, "_", ".", "-" and ":", starting with a letter or digit',
  );

const metricKey = z
  .string()
  .max(MAX_METRIC_KEY_LENGTH, `a key is at most ${MAX_METRIC_KEY_LENGTH} characters`)
  .regex(METRIC_KEY_PATTERN, 'expected lowercase letters, digits, "_", "." and "-", starting with a letter or digit');

const version = z.strictObject({
  definition_version: z.string().min(1),
  status: z.enum(VersionStatus),
  released_at: timestamp.nullable(),
  change_summary: z.string().default(''),
});

const approval = z.strictObject({
  definition_version: z.string().min(1).nullable(),
  approver_role: z.string(),
  /** a member's email; null: not recorded */
  approver: z.string().min(1).nullable(),
  decision: z.enum(ApprovalDecision),
  decided_at: timestamp,
  comment: z.string().default(''),
});

const relationship = z.strictObject({
  kind: z.enum(RelationshipKind),
  target: metricKey,
});

/** Fields `defaults` may fill: those that are usually the same across a team's metrics. */
export const DEFAULTABLE_FIELDS = [
  'project',
  'domain',
  'owner_team',
  'owner_display_name',
  'metric_type',
  'lifecycle_status',
  'policy_tier',
  'scope',
  'tags',
] as const;

const { metric_type, lifecycle_status, definition_version, policy_tier, scope, concept_name, template_name } =
  metricDefinitionShape;

const metric = z
  .strictObject({
    ...metricDefinitionShape,
    key: metricKey,
    project: z.string().trim().min(1, 'a project name must not be empty'),
    domain: z.string().trim().min(1, 'a domain name must not be empty').nullable().default(null),
    metric_type: metric_type.default('base'),
    lifecycle_status: lifecycle_status.default(LifecycleStatus.DRAFT),
    definition_version: definition_version.default('1.0.0'),
    policy_tier: policy_tier.default('tier_3'),
    scope: scope.default('exploratory'),
    concept_name: concept_name.optional(),
    template_name: template_name.optional(),
    grains: z.array(z.string()).default([]),
    default_grain: z.string().optional(),
    versions: z.array(version).default([]),
    approvals: z.array(approval).default([]),
    relationships: z.array(relationship).default([]),
    /** the keys of the metrics it is computed from, in the document or the registry (docs/registry-document.md, "Inputs") */
    inputs: z.array(metricKey).max(MAX_METRIC_INPUTS, `at most ${MAX_METRIC_INPUTS} inputs a metric`).default([]),
  })
  .transform((parsed) => ({
    ...parsed,
    concept_name: parsed.concept_name ?? parsed.key,
    template_name: parsed.template_name ?? parsed.metric_type,
    default_grain: parsed.default_grain ?? parsed.grains[0] ?? '',
  }));

const defaults = z.strictObject({
  project: z.string().trim().min(1).optional(),
  domain: z.string().trim().min(1).nullable().optional(),
  owner_team: z.string().optional(),
  owner_display_name: z.string().nullable().optional(),
  metric_type: z.string().optional(),
  lifecycle_status: z.enum(LifecycleStatus).optional(),
  policy_tier: z.string().optional(),
  scope: metricDefinitionShape.scope.optional(),
  tags: z.array(z.string()).optional(),
});

const documentShape = z.strictObject({
  organization: z.string().min(1),
  source: sourceName.optional(),
  defaults: defaults.optional(),
  // Validated on its own (trustPolicySchema), so that its problems carry their place under `trust_policy`.
  trust_policy: z.unknown().optional(),
  metrics: z.array(z.unknown()).max(MAX_DOCUMENT_METRICS, `at most ${MAX_DOCUMENT_METRICS} metrics a document`),
});

export type RegistryMetric = z.output<typeof metric>;
export type RegistryVersion = RegistryMetric['versions'][number];
export type RegistryApproval = RegistryMetric['approvals'][number];
export type RegistryRelationship = RegistryMetric['relationships'][number];
export type RegistryDefaults = z.output<typeof defaults>;

export interface RegistryDocument {
  organization: string;
  /** the source applying it (default "registry"): it owns the fields it sets (docs/registry.md#sources) */
  source: string;
  /**
   * The fields each metric sets, by its place in `metrics`: those written in
   * the entry or filled by `defaults`, never those the schema fills. A field
   * a source does not set is left to the source that set it.
   */
  fieldsSet: string[][];
  defaults: RegistryDefaults;
  metrics: RegistryMetric[];
  /**
   * The organization's trust policy as the document sets it: undefined when
   * the document has no `trust_policy` (the stored policy is kept, so that an
   * import, which never carries one, does not erase it); null when it is
   * `null` or `{}` (back to the server's defaults).
   */
  trustPolicy?: TrustPolicyDocument | null;
}

/** zod's issues as problems under `prefix`, a missing field said as `required`. */
function problemsOf(error: z.ZodError, prefix: readonly PropertyKey[] = []): RegistryProblem[] {
  return problemsFromZod(error).map(({ path, message }) => ({
    path: [...prefix, ...path],
    message: message.replace(/^Invalid input: expected \w+, received undefined$/, 'required'),
  }));
}

/**
 * A metric's problems in the order its fields are written (zod reports them in
 * the schema's order), those of fields left out last: the first problem is
 * the first in the file.
 */
function inWrittenOrder(problems: RegistryProblem[], raw: unknown): RegistryProblem[] {
  const written =
    raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? Object.keys(raw as Record<string, unknown>) : [];
  const rank = (problem: RegistryProblem) => {
    const index = written.indexOf(String(problem.path[2]));
    return index < 0 ? written.length : index;
  };
  return problems
    .map((problem, i) => ({ problem, i }))
    .sort((a, b) => rank(a.problem) - rank(b.problem) || a.i - b.i)
    .map(({ problem }) => problem);
}

/** The rules across metrics that a schema of one metric cannot see. */
function crossChecks(metrics: RegistryMetric[]): RegistryProblem[] {
  const problems: RegistryProblem[] = [];
  const keys = new Map<string, number>();
  metrics.forEach((entry, m) => {
    const first = keys.get(entry.key);
    if (first !== undefined) {
      problems.push({ path: ['metrics', m, 'key'], message: `duplicate key "${entry.key}": also metrics[${first}]` });
    } else keys.set(entry.key, m);
    const seen = (path: PropertyKey[], identities: string[], what: string) => {
      const at = new Map<string, number>();
      identities.forEach((identity, i) => {
        const earlier = at.get(identity);
        if (earlier !== undefined) {
          problems.push({ path: ['metrics', m, ...path, i], message: `duplicate ${what}: also [${earlier}]` });
        } else at.set(identity, i);
      });
    };
    seen(
      ['versions'],
      entry.versions.map((v) => v.definition_version),
      'version (same definition_version)',
    );
    seen(
      ['approvals'],
      entry.approvals.map((a) => JSON.stringify([a.definition_version, a.approver_role, a.decided_at])),
      'approval (same definition_version, approver_role and decided_at)',
    );
    seen(
      ['relationships'],
      entry.relationships.map((r) => `${r.kind} ${r.target}`),
      'relationship (same kind and target)',
    );
    seen(['inputs'], entry.inputs, 'input');
    const versions = new Set(entry.versions.map((v) => v.definition_version));
    entry.approvals.forEach((a, i) => {
      if (a.definition_version !== null && !versions.has(a.definition_version)) {
        problems.push({
          path: ['metrics', m, 'approvals', i, 'definition_version'],
          message: `version ${a.definition_version} is not in this metric's versions`,
        });
      }
    });
    entry.relationships.forEach((r, i) => {
      if (r.target === entry.key) {
        problems.push({
          path: ['metrics', m, 'relationships', i, 'target'],
          message: 'a metric cannot be related to itself',
        });
      }
    });
    entry.inputs.forEach((input, i) => {
      if (input === entry.key) {
        problems.push({ path: ['metrics', m, 'inputs', i], message: 'a metric cannot be its own input' });
      }
    });
    if (entry.grains.length > 0 && entry.default_grain !== '' && !entry.grains.includes(entry.default_grain)) {
      problems.push({ path: ['metrics', m, 'default_grain'], message: `"${entry.default_grain}" is not in grains` });
    }
  });
  return problems;
}

/** The fields an entry (with its `defaults` laid under it) writes: every member but its key. */
function writtenFields(entry: unknown): string[] {
  return Object.keys(entry as Record<string, unknown>).filter(
    (field) => field !== 'key' && (entry as Record<string, unknown>)[field] !== undefined,
  );
}

export type ParsedDocument = { ok: true; document: RegistryDocument } | { ok: false; problems: RegistryProblem[] };

type ParsedPolicy =
  | { ok: true; policy: TrustPolicyDocument | null | undefined }
  | { ok: false; problems: RegistryProblem[] };

/** The document's `trust_policy`: absent (keep the stored one), null or `{}` (clear it), or rules per tier. */
function parseTrustPolicy(value: unknown): ParsedPolicy {
  if (value === undefined) return { ok: true, policy: undefined };
  if (value === null) return { ok: true, policy: null };
  const parsed = trustPolicySchema.safeParse(value);
  if (!parsed.success) return { ok: false, problems: problemsOf(parsed.error, ['trust_policy']) };
  return { ok: true, policy: Object.keys(parsed.data).length === 0 ? null : parsed.data };
}

/**
 * Validates a parsed (JSON or YAML) registry document and applies its
 * defaults: `defaults` first, then each field's own. Every problem is
 * reported, each with its path (`metrics[3].lifecycle_status`,
 * `trust_policy.tier_1.failed_validation`).
 */
export function parseRegistryDocument(input: unknown): ParsedDocument {
  const top = documentShape.safeParse(input);
  if (!top.success) return { ok: false, problems: problemsOf(top.error) };
  const fill = top.data.defaults ?? {};
  const policy = parseTrustPolicy(top.data.trust_policy);
  const problems: RegistryProblem[] = policy.ok ? [] : [...policy.problems];
  const metrics: RegistryMetric[] = [];
  const fieldsSet: string[][] = [];
  top.data.metrics.forEach((raw, m) => {
    const withDefaults =
      raw !== null && typeof raw === 'object' && !Array.isArray(raw)
        ? { ...Object.fromEntries(Object.entries(fill).filter(([, value]) => value !== undefined)), ...raw }
        : raw;
    const parsed = metric.safeParse(withDefaults);
    if (parsed.success) {
      metrics.push(parsed.data);
      fieldsSet.push(writtenFields(withDefaults));
    } else problems.push(...inWrittenOrder(problemsOf(parsed.error, ['metrics', m]), raw));
  });
  if (problems.length === 0) problems.push(...crossChecks(metrics));
  if (problems.length > 0 || !policy.ok) return { ok: false, problems };
  const document: RegistryDocument = {
    organization: top.data.organization,
    source: top.data.source ?? DEFAULT_SOURCE,
    fieldsSet,
    defaults: fill,
    metrics,
  };
  if (policy.policy !== undefined) document.trustPolicy = policy.policy;
  return { ok: true, document };
}
