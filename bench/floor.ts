/**
 * The floor: the same three REST routes from the same tables, as directly as
 * Node can serve them — node:http, one pg Pool (as large as the service's),
 * hand-written SQL, no framework, ORM or GraphQL. Two statements a request
 * (the key lookup by hash, then one statement for the route), no rate
 * limiting. It is what the service is measured against, not a second
 * implementation: it supports what the bench sends (page, pageSize, q), and
 * on POST /graphql the bench's dashboard document only (DASHBOARD_QUERY, as
 * one statement; any other document is a 400).
 *
 * Every statement is a named prepared statement (`pool.query({ name, text,
 * values })`), as a plain implementation would write it: PostgreSQL parses and
 * plans it once per connection, not on every request. Each distinct text has
 * its own name. The floor counts the statements it sends and the requests it
 * answers; `GET /bench/statements` returns both (the bench reads statements
 * per request from them).
 *
 * Run: DATABASE_URL=... PORT=... PUBLIC_APP_URL=... node --import tsx bench/floor.ts
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import pg from 'pg';
import { API_KEY_PATTERN, hashSecret } from '../src/auth/secrets.js';
import { compile } from '../src/db/kysely.js';
import { badRequest, type ErrorResponse, errors } from '../src/errors.js';
import { effectiveFilter } from '../src/metric/list.js';
import { normalizedSearch } from '../src/metric/search-page.js';
import { rankedSearch } from '../src/metric/search-rank.js';
import { isUuid } from '../src/uuid.js';
import { DASHBOARD_QUERY } from './load.js';

const NO_FILTER = effectiveFilter();

type Row = Record<string, unknown>;
interface Org {
  id: string;
  slug: string;
  fiscal: number;
}

const meta = { apiVersion: 'v1' };
const BEARER = /^Bearer ([^\s]+)$/i;
const SATISFIED_BY = {
  'metrics:read': ['metrics:read', 'canonical-metric-api:read', 'definition:read'],
  'canonical-metric-api:read': ['canonical-metric-api:read', 'metrics:read'],
} as const;

/** ISO 8601 UTC with milliseconds, as Date.toISOString() writes it. */
const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const LIST_COLUMNS = `m.id, m.name, m.description, m.policy_tier, m.owner_team, m.lifecycle_status::text, m.definition_version,
  m.scope::text, m.domain_id, ${iso('m.created_at')} AS created_at, ${iso('m.updated_at')} AS updated_at, m.concept_name, m.template_name`;

const LEGACY: Record<string, string> = {
  DRAFT: 'draft',
  VALIDATED: 'review',
  CANDIDATE: 'review',
  APPROVED: 'approved',
  RELEASED: 'approved',
  DEPRECATED: 'deprecated',
};

function listItem(r: Row) {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    policy_tier: r.policy_tier,
    owner_team: r.owner_team,
    status: LEGACY[r.lifecycle_status as string],
    lifecycle_status: r.lifecycle_status,
    definition_version: r.definition_version,
    scope: r.scope,
    domain_id: r.domain_id,
    created_at: r.created_at,
    updated_at: r.updated_at,
    concept_name: r.concept_name,
    template_name: r.template_name,
    trust: trust(r),
  };
}

/**
 * The facts of a verdict that the contract's own columns do not already give, over `m` (the
 * organization's rule for the metric's tier, an approved or released version, the upstream metrics
 * the writers found untrusted: metric_trust_state.untrusted_inputs).
 */
const TRUST_EXTRA = `m.policy_tier AS trust_tier, m.owner_team AS trust_owner,
  (SELECT o.trust_policy -> m.policy_tier FROM organization o WHERE o.id = m.org_id) AS tier_rule,
  EXISTS (SELECT 1 FROM metric_version WHERE metric_id = m.id AND status IN ('released', 'approved')) AS has_approved,
  (SELECT untrusted_inputs FROM metric_trust_state WHERE metric_id = m.id) AS untrusted_inputs`;

/** The supersession chain's end from `m` (the contract's walk, without revisiting a metric). */
const SUPERSEDING = `(WITH RECURSIVE chain(id, depth, path) AS (
     SELECT m.id, 0, ARRAY[m.id]
     UNION ALL
     SELECT r.metric_id, c.depth + 1, c.path || r.metric_id FROM chain c
     JOIN metric_relationship r ON r.target_metric_id = c.id AND r.kind = 'supersedes'
     JOIN metric o ON o.id = r.metric_id AND o.org_id = m.org_id
     WHERE NOT r.metric_id = ANY(c.path) AND c.depth < 32)
   SELECT id::text FROM chain WHERE depth > 0 ORDER BY depth DESC, id LIMIT 1) AS superseding_id`;

/**
 * Every fact of a list item's verdict, for the rows of a page already cut (`m`): the same columns
 * the contract's trust reads, so that one function computes both.
 */
const LIST_TRUST = `m.lifecycle_status::text AS lifecycle,
  (SELECT count(*)::int FROM thread WHERE metric_id = m.id AND intent = 'objection' AND resolution_status = 'open')
    AS open_objections_count,
  v.last_validated_at AS validated_at, v.last_failed,
  EXISTS (SELECT 1 FROM metric_relationship WHERE kind = 'conflicts_with'
    AND (metric_id = m.id OR target_metric_id = m.id)) AS conflicting,
  ${SUPERSEDING}, ${TRUST_EXTRA}`;

/** The latest validation run of `m` (of several at one time, a failure wins). */
const LATEST_VALIDATION = `LEFT JOIN LATERAL (SELECT ran_at AS last_validated_at, status = 'failed' AS last_failed FROM validation
  WHERE metric_id = m.id ORDER BY ran_at DESC, status DESC LIMIT 1) v ON TRUE`;

/**
 * The direct inputs of `m` in position order (the first 100), each with its announced verdict
 * (metric_trust_state; null while it has none), and how many metrics take `m` as an input.
 */
const LINEAGE = `(SELECT coalesce(json_agg(json_build_object('id', im.id, 'key', im.key, 'name', im.name, 'verdict', ts.verdict)
      ORDER BY i.position, i.input_metric_id), '[]')
    FROM (SELECT input_metric_id, position FROM metric_input WHERE metric_id = m.id
      ORDER BY position, input_metric_id LIMIT 100) i
    JOIN metric im ON im.id = i.input_metric_id
    LEFT JOIN metric_trust_state ts ON ts.metric_id = im.id) AS inputs,
  (SELECT count(*)::int FROM metric_input WHERE input_metric_id = m.id) AS dependents_count`;

/** Disambiguation candidates of m.id, as one JSON array (same union, dedupe and order as src/metric/loaders.ts). */
const DISAMBIGUATION = `(SELECT coalesce(json_agg(json_build_object('metric_id', c.other_id, 'key', c.key, 'name', c.name,
    'lifecycle_status', c.lifecycle_status, 'relation', c.relation) ORDER BY c.relation, c.name, c.other_id), '[]')
  FROM (SELECT DISTINCT ON (u.other_id, u.relation) u.* FROM (
    SELECT o.id::text AS other_id, o.key, o.name, o.lifecycle_status::text AS lifecycle_status, r.kind::text AS relation
    FROM metric_relationship r JOIN metric o ON o.id = r.target_metric_id
    WHERE r.metric_id = m.id AND r.kind IN ('variant_of', 'supersedes', 'conflicts_with')
    UNION ALL
    SELECT o.id::text, o.key, o.name, o.lifecycle_status::text,
      CASE r.kind WHEN 'variant_of' THEN 'has_variant' WHEN 'supersedes' THEN 'superseded_by' ELSE 'conflicts_with' END
    FROM metric_relationship r JOIN metric o ON o.id = r.metric_id
    WHERE r.target_metric_id = m.id AND r.kind IN ('variant_of', 'supersedes', 'conflicts_with')) u) c) AS candidates`;

const DETAIL_SQL = `SELECT m.id, m.org_id, m.project_id, m.metric_type, m.key, m.name, m.description, m.definition_version,
  m.policy_tier, m.owner_team, m.owner_display_name, m.tags, m.aliases, m.concept_name, m.template_name, m.sql_expression, m.grains,
  m.default_grain, m.dimensions, m.filters, m.source_refs, m.expression, m.dependencies, m.domain_id, m.time_semantics,
  m.deprecated_framing_rules, m.dimension_map, m.column_aliases, m.resolved_parameters, m.rendered_sql_examples,
  m.latest_closed_period, m.approver_role, m.approver_user, m.approved_at, m.effective_from, m.effective_to,
  m.next_review_date, m.approval_state, m.consumer_contexts, m.policy_examples, m.lifecycle_status::text AS lifecycle, m.scope::text AS scope_text,
  ${iso('m.created_at')} AS created_iso, ${iso('m.updated_at')} AS updated_iso,
  (SELECT coalesce(json_agg(json_build_object('kind', r.kind, 'target_metric_id', r.target_metric_id,
      'target', json_build_object('key', t.key, 'name', t.name, 'lifecycle_status', t.lifecycle_status))
      ORDER BY r.kind, r.target_metric_id), '[]')
    FROM metric_relationship r JOIN metric t ON t.id = r.target_metric_id WHERE r.metric_id = m.id) AS relationships,
  (SELECT coalesce(json_agg(json_build_object('id', a.id, 'version_id', a.version_id, 'approver_user_id', a.approver_user_id,
      'approver_role', a.approver_role, 'decision', a.decision, 'decided_at', ${iso('a.decided_at')}, 'comment', a.comment)
      ORDER BY a.decided_at DESC, a.id), '[]')
    FROM approval a WHERE a.metric_id = m.id) AS approvals,
  (SELECT coalesce(json_agg(json_build_object('id', v.id, 'definition_version', v.definition_version, 'status', v.status,
      'released_at', ${iso('v.released_at')}, 'change_summary', v.change_summary)
      ORDER BY v.released_at DESC NULLS LAST, v.id), '[]')
    FROM metric_version v WHERE v.metric_id = m.id) AS versions,
  ${DISAMBIGUATION}, ${LINEAGE}
FROM metric m WHERE m.id = $1 AND m.org_id = $2`;

const CONTRACT_SQL = `SELECT m.id, m.name, m.bd_included, m.bd_excluded, m.bd_time_window, m.bd_caveats, m.bd_legacy_description,
  m.lifecycle_status::text AS lifecycle,
  c.challenges_count, c.open_challenges_count, t.thread_count, t.has_discourse, t.open_objections_count, t.open_proposals_count,
  g.message_count, ${iso('v.last_validated_at')} AS last_validated_at,
  ${iso('GREATEST(t.last_thread_at, g.last_message_at)')} AS last_activity_at,
  cv.id::text AS version_id, cv.definition_version AS version_definition, ${iso('cv.released_at')} AS version_released_at,
  (SELECT coalesce(json_agg(json_build_object('message_id', n.id, 'thread_id', n.thread_id, 'intent', n.intent,
      'author_display_name', n.author_display_name, 'body', n.body, 'pinned_at', ${iso('n.pinned_at')},
      'created_at', ${iso('n.created_at')}) ORDER BY n.pinned_at DESC, n.id), '[]')
    FROM (SELECT g.id, g.thread_id, t.intent, u.display_name AS author_display_name, g.body, g.pinned_at, g.created_at
      FROM message g JOIN thread t ON t.id = g.thread_id JOIN app_user u ON u.id = g.author_user_id
      WHERE g.metric_id = m.id AND g.pinned_at IS NOT NULL AND g.deleted_at IS NULL
      ORDER BY g.pinned_at DESC, g.id LIMIT 10) n) AS notes,
  ${DISAMBIGUATION},
  EXISTS (SELECT 1 FROM metric_relationship WHERE kind = 'conflicts_with'
    AND (metric_id = m.id OR target_metric_id = m.id)) AS conflicting,
  ${SUPERSEDING},
  v.last_validated_at AS validated_at, v.last_failed, ${TRUST_EXTRA}, ${LINEAGE}
FROM metric m
CROSS JOIN LATERAL (SELECT count(*)::int AS challenges_count, (count(*) FILTER (WHERE status = 'open'))::int AS open_challenges_count
  FROM challenge WHERE metric_id = m.id) c
CROSS JOIN LATERAL (SELECT count(*)::int AS thread_count, bool_or(intent IN ('objection', 'proposal')) IS TRUE AS has_discourse,
  (count(*) FILTER (WHERE intent = 'objection' AND resolution_status = 'open'))::int AS open_objections_count,
  (count(*) FILTER (WHERE intent = 'proposal' AND resolution_status = 'open'))::int AS open_proposals_count,
  max(created_at) AS last_thread_at FROM thread WHERE metric_id = m.id) t
CROSS JOIN LATERAL (SELECT count(*)::int AS message_count, max(created_at) AS last_message_at
  FROM message WHERE metric_id = m.id AND deleted_at IS NULL) g
${LATEST_VALIDATION}
LEFT JOIN LATERAL (SELECT id, definition_version, released_at FROM metric_version
  WHERE metric_id = m.id AND status IN ('released', 'approved') ORDER BY released_at DESC NULLS LAST, id LIMIT 1) cv ON TRUE
WHERE m.id = $1 AND m.org_id = $2`;

/** A metric's announced verdict is `$4` (the list's `trust` filter). */
const TRUST_FILTER = 'EXISTS (SELECT 1 FROM metric_trust_state ts WHERE ts.metric_id = m.id AND ts.verdict = $4)';

/**
 * A page by name with its items' verdict facts and the total: the page is cut first (ids in name
 * order, OFFSET/LIMIT), then the facts are read for its rows only.
 */
const listSql = (filter: string) => `SELECT ${LIST_COLUMNS}, ${LIST_TRUST}, p.total
  FROM (SELECT m.id, (SELECT count(*)::int FROM metric m WHERE m.org_id = $1${filter}) AS total
    FROM metric m WHERE m.org_id = $1${filter} ORDER BY m.name, m.id OFFSET $2 LIMIT $3) p
  JOIN metric m ON m.id = p.id
  ${LATEST_VALIDATION}
  ORDER BY m.name, m.id`;
const LIST_SQL = listSql('');
const LIST_TRUST_SQL = listSql(` AND ${TRUST_FILTER}`);
/** The total of a page past the end (no row to carry it). */
const LIST_TOTAL_SQL = 'SELECT count(*)::int AS total FROM metric WHERE org_id = $1';
const LIST_TRUST_TOTAL_SQL = `SELECT count(*)::int AS total FROM metric m WHERE m.org_id = $1 AND ${TRUST_FILTER.replace('$4', '$2')}`;

/** Search sends the service's own ranking statement; a statement is named by a digest of its text (its shape). */
const shape = (text: string) => createHash('sha1').update(text).digest('hex').slice(0, 12);

const KEY_SQL = `SELECT k.scopes, k.sandbox, k.revoked_at, o.id, o.slug, o.fiscal_calendar_start_month AS fiscal
  FROM api_key k JOIN organization o ON o.id = k.org_id WHERE k.key_hash = $1`;

/**
 * The GraphQL dashboard (DASHBOARD_QUERY in load.ts) as one statement: a page of 100 metrics by name
 * with thread count, live (not deleted) message count and pinned notes (at most 10, newest pinned
 * first), and the organization's total (an init plan, computed once).
 */
const DASHBOARD_SQL = `SELECT m.id, m.name, m.lifecycle_status::text AS lifecycle,
  (SELECT count(*)::int FROM thread t WHERE t.metric_id = m.id) AS thread_count,
  (SELECT count(*)::int FROM message g WHERE g.metric_id = m.id AND g.deleted_at IS NULL) AS message_count,
  (SELECT coalesce(json_agg(json_build_object('messageId', n.id, 'body', n.body) ORDER BY n.pinned_at DESC, n.id), '[]')
    FROM (SELECT g.id, g.body, g.pinned_at FROM message g
      WHERE g.metric_id = m.id AND g.pinned_at IS NOT NULL AND g.deleted_at IS NULL
      ORDER BY g.pinned_at DESC, g.id LIMIT 10) n) AS notes,
  (SELECT count(*)::int FROM metric WHERE org_id = $1) AS total
FROM metric m WHERE m.org_id = $1 ORDER BY m.name, m.id LIMIT 100`;

const DAY_MS = 24 * 60 * 60 * 1000;
/** The server's default (TRUST_STALE_VALIDATION_DAYS), which a tier's rule may replace. */
const STALE_VALIDATION_DAYS = 30;
/** Caution reasons in their order; a tier's rule may make any of them decisive. */
const CAUTIONS = [
  'pre_release',
  'open_objections',
  'never_validated',
  'failed_validation',
  'stale_validation',
  'conflicting_definition',
  'untrusted_input',
  'no_approved_version',
  'no_owner_team',
];

interface TierRule {
  stale_after_days?: number;
  use_requires?: string[];
  [reason: string]: unknown;
}

/**
 * The trust verdict (docs/trust.md), written out again as any plain implementation would: the
 * always-decisive reasons, then the cautions, of which the organization's rule for the metric's
 * tier (organization.trust_policy) may make some decisive, ask for more evidence (`use_requires`)
 * or shorten the time evidence stays current (`stale_after_days`). The upstream metrics behind
 * `untrusted_input` are the ones the writers recorded with the announced verdict.
 */
function trust(r: Row) {
  const rule = (r.tier_rule as TierRule | null) ?? null;
  const validatedAt = r.validated_at as Date | null;
  const staleDays = rule?.stale_after_days ?? STALE_VALIDATION_DAYS;
  const owner = ((r.trust_owner as string | null) ?? '').trim().toLowerCase();
  const inputs = (r.untrusted_inputs as { id: string; key: string; verdict: string; reasons: string[] }[] | null) ?? [];
  const requires = rule?.use_requires ?? [];
  const found = new Set<string>();
  if (r.lifecycle === 'DEPRECATED') found.add('deprecated');
  if (r.superseding_id) found.add('superseded');
  if (!['APPROVED', 'RELEASED'].includes(r.lifecycle as string)) found.add('pre_release');
  if ((r.open_objections_count as number) > 0) found.add('open_objections');
  if (validatedAt === null) found.add('never_validated');
  if (r.last_failed === true) found.add('failed_validation');
  if (validatedAt !== null && Date.now() - validatedAt.getTime() > staleDays * DAY_MS) found.add('stale_validation');
  if (r.conflicting) found.add('conflicting_definition');
  if (inputs.length) found.add('untrusted_input');
  if (requires.includes('approved_version') && r.has_approved !== true) found.add('no_approved_version');
  if (requires.includes('owner_team') && (owner === '' || owner === 'unassigned')) found.add('no_owner_team');
  const ordered = ['deprecated', 'superseded', ...CAUTIONS].filter((reason) => found.has(reason));
  const blocking = ordered.filter(
    (reason) => reason === 'deprecated' || reason === 'superseded' || rule?.[reason] === 'do_not_use',
  );
  const reasons = blocking.length ? blocking : ordered;
  const verdict = blocking.length ? 'do_not_use' : reasons.length ? 'use_with_caution' : 'use';
  return {
    verdict,
    reasons,
    preferred_metric_id: r.superseding_id && verdict === 'do_not_use' ? r.superseding_id : null,
    untrusted_inputs: reasons.includes('untrusted_input')
      ? inputs.map((input) => ({ id: input.id, key: input.key, verdict: input.verdict, reasons: input.reasons }))
      : [],
  };
}

function disambiguation(candidates: { metric_id: string; relation: string }[]) {
  if (!candidates.length) return null;
  return {
    preferred_metric_id: candidates.find((c) => c.relation === 'superseded_by')?.metric_id ?? null,
    candidates,
  };
}

class Failure extends Error {
  constructor(readonly response: ErrorResponse) {
    super(response.status.toString());
  }
}

export function createFloor(pool: pg.Pool, publicAppUrl: string) {
  const base = publicAppUrl.replace(/\/+$/, '');
  /** Statements sent and requests answered since start (GET /bench/statements). */
  const counters = { statements: 0, requests: 0 };

  /** A named prepared statement: parsed and planned once per pooled connection. */
  function run(name: string, text: string, values: unknown[]) {
    counters.statements++;
    return pool.query({ name: `floor_${name}`, text, values });
  }

  async function authenticate(req: IncomingMessage, scope: keyof typeof SATISFIED_BY): Promise<Org> {
    const authorization = req.headers.authorization;
    if (!authorization) throw new Failure(errors.missingAuthorization);
    const secret = BEARER.exec(authorization)?.[1];
    if (!secret) throw new Failure(errors.invalidAuthorizationFormat);
    if (!API_KEY_PATTERN.test(secret)) throw new Failure(errors.invalidApiKeyFormat);
    const { rows } = await run('key', KEY_SQL, [hashSecret(secret)]);
    const key = rows[0] as ({ scopes: string[]; sandbox: boolean; revoked_at: Date | null } & Org) | undefined;
    if (!key) throw new Failure(errors.invalidApiKey);
    if (key.revoked_at) throw new Failure(errors.revokedApiKey);
    if (key.sandbox && req.headers['x-service-env'] !== 'sandbox') throw new Failure(errors.sandboxKeyRequiresSandbox);
    if (!key.scopes.some((s) => (SATISFIED_BY[scope] as readonly string[]).includes(s))) {
      throw new Failure(errors.insufficientScope);
    }
    return key;
  }

  function pageParameter(value: string | null, fallback: number, max: number): number {
    if (value === null || !/^\d+$/.test(value)) return fallback;
    const parsed = Number(value);
    return parsed < 1 ? fallback : Math.min(parsed, max);
  }

  async function list(org: Org, params: URLSearchParams) {
    const page = pageParameter(params.get('page'), 1, 2 ** 31 - 1);
    const pageSize = pageParameter(params.get('pageSize'), 20, 100);
    const skip = (page - 1) * pageSize;
    const q = params.get('q');
    let rows: Row[];
    let total: number;
    if (q?.trim()) {
      // The service's ranking, the same statement (src/metric/search-rank.ts), named by its shape.
      const search = rankedSearch(org.id, normalizedSearch(q), NO_FILTER, { skip, take: pageSize });
      const built = search.build(search.args);
      const ranked = compile(built.page);
      const text = `SELECT ${LIST_COLUMNS}, ${LIST_TRUST}, hit.total FROM (${ranked.sql}) hit JOIN metric m ON m.id = hit.id
        ${LATEST_VALIDATION} ORDER BY hit.rank`;
      ({ rows } = await run(`search_${shape(text)}`, text, [...ranked.parameters]));
      total = (rows[0]?.total as number | undefined) ?? 0;
      if (!rows.length && skip > 0) {
        const count = compile(built.count);
        total = (await run(`search_total_${shape(count.sql)}`, count.sql, [...count.parameters])).rows[0]
          .total as number;
      }
    } else {
      // The announced verdict (metric_trust_state), as the service filters on it; a statement of its own.
      const verdict = params.get('trust');
      if (verdict) {
        ({ rows } = await run('list_trust', LIST_TRUST_SQL, [org.id, skip, pageSize, verdict]));
      } else {
        ({ rows } = await run('list', LIST_SQL, [org.id, skip, pageSize]));
      }
      total = (rows[0]?.total as number | undefined) ?? 0;
      if (!rows.length && skip > 0) {
        total = (
          verdict
            ? await run('list_trust_total', LIST_TRUST_TOTAL_SQL, [org.id, verdict])
            : await run('list_total', LIST_TOTAL_SQL, [org.id])
        ).rows[0].total as number;
      }
    }
    return {
      data: rows.map(listItem),
      pagination: { page, pageSize, total, totalPages: Math.ceil(total / pageSize) },
      meta,
    };
  }

  async function detail(org: Org, id: string) {
    const r = (await run('detail', DETAIL_SQL, [id, org.id])).rows[0] as Row | undefined;
    if (!r) throw new Failure(errors.metricNotFound);
    const metric = {
      id: r.id,
      org_id: r.org_id,
      project_id: r.project_id,
      metric_type: r.metric_type,
      key: r.key,
      name: r.name,
      description: r.description,
      definition_version: r.definition_version,
      status: LEGACY[r.lifecycle as string],
      policy_tier: r.policy_tier,
      owner_team: r.owner_team,
      owner_display_name: r.owner_display_name,
      tags: r.tags,
      aliases: r.aliases,
      concept_name: r.concept_name,
      template_name: r.template_name,
      sql_expression: r.sql_expression,
      grains: r.grains,
      default_grain: r.default_grain,
      dimensions: r.dimensions,
      filters: r.filters,
      source_refs: r.source_refs,
      expression: r.expression,
      dependencies: r.dependencies,
      lifecycle_status: r.lifecycle,
      scope: r.scope_text,
      domain_id: r.domain_id,
      created_at: r.created_iso,
      updated_at: r.updated_iso,
    };
    return {
      data: {
        metric,
        relationships: r.relationships,
        approvals: r.approvals,
        versionHistory: r.versions,
        fiscal_calendar_start_month: org.fiscal,
        time_semantics: r.time_semantics,
        deprecated_framing_rules: r.deprecated_framing_rules,
        dimension_map: r.dimension_map,
        column_aliases: r.column_aliases,
        execution_context: {
          resolved_parameters: r.resolved_parameters,
          rendered_sql_examples: r.rendered_sql_examples,
          latest_closed_period: r.latest_closed_period,
        },
        governance_facts: {
          owner_team: r.owner_team,
          approver_role: r.approver_role,
          approver_user: r.approver_user,
          approved_at: r.approved_at,
          lifecycle_status: r.lifecycle,
          current_version: r.definition_version,
          effective_from: r.effective_from,
          effective_to: r.effective_to,
          next_review_date: r.next_review_date,
        },
        approval_state: r.approval_state,
        consumer_contexts: r.consumer_contexts,
        requires_disambiguation: disambiguation(r.candidates as { metric_id: string; relation: string }[]),
        policy_examples: r.policy_examples,
        inputs: r.inputs,
        dependents_count: r.dependents_count,
      },
      meta,
    };
  }

  async function contract(org: Org, id: string) {
    const r = (await run('contract', CONTRACT_SQL, [id, org.id])).rows[0] as Row | undefined;
    if (!r) throw new Failure(errors.metricNotFound);
    return {
      data: {
        metric_id: r.id,
        name: r.name,
        business_definition: {
          included: r.bd_included,
          excluded: r.bd_excluded,
          time_window: r.bd_time_window,
          caveats: r.bd_caveats,
          legacy_description: r.bd_legacy_description,
        },
        business_definition_status: [
          r.bd_included,
          r.bd_excluded,
          r.bd_time_window,
          r.bd_caveats,
          r.bd_legacy_description,
        ].some((member) => String(member).trim() !== '')
          ? 'defined'
          : 'empty',
        current_approved_version:
          r.version_id && r.version_definition !== null
            ? { id: r.version_id, definition_version: r.version_definition, released_at: r.version_released_at }
            : null,
        last_validated_at: r.last_validated_at,
        lifecycle_status: r.lifecycle,
        challenges_count: r.challenges_count,
        open_challenges_count: r.open_challenges_count,
        requires_disambiguation: disambiguation(r.candidates as { metric_id: string; relation: string }[]),
        canonical_url: `${base}/${org.slug}/metrics/${r.id}`,
        discussion_thread_count: r.thread_count,
        discussion_message_count: r.message_count,
        agent_context_notes: r.notes,
        discourse_summary: r.has_discourse
          ? {
              open_objections_count: r.open_objections_count,
              open_proposals_count: r.open_proposals_count,
              last_activity_at: r.last_activity_at,
            }
          : null,
        trust: trust(r),
        inputs: r.inputs,
        dependents_count: r.dependents_count,
      },
      meta,
    };
  }

  /** POST /graphql: the dashboard document only, as the service answers it. */
  async function dashboard(req: IncomingMessage) {
    const org = await authenticate(req, 'metrics:read');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let query: unknown;
    try {
      query = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { query?: unknown }).query;
    } catch {
      query = undefined;
    }
    if (query !== DASHBOARD_QUERY) {
      throw new Failure(badRequest('the floor answers the bench dashboard query (DASHBOARD_QUERY) only'));
    }
    const { rows } = await run('dashboard', DASHBOARD_SQL, [org.id]);
    let total = (rows[0]?.total as number | undefined) ?? 0;
    if (!rows.length) total = (await run('list_total', LIST_TOTAL_SQL, [org.id])).rows[0].total as number;
    return {
      data: {
        metrics: {
          items: rows.map((r) => ({
            id: r.id,
            name: r.name,
            lifecycleStatus: r.lifecycle,
            discussionThreadCount: r.thread_count,
            discussionMessageCount: r.message_count,
            agentContextNotes: r.notes,
          })),
          pagination: { total },
        },
      },
    };
  }

  async function route(req: IncomingMessage): Promise<unknown> {
    const url = new URL(req.url ?? '/', 'http://floor');
    if (url.pathname === '/graphql' && req.method === 'POST') return dashboard(req);
    const parts = url.pathname.split('/');
    // ['', 'api', 'v1', 'metrics', id?, 'contract'?]
    if (req.method !== 'GET' || parts[1] !== 'api' || parts[2] !== 'v1' || parts[3] !== 'metrics' || parts.length > 6) {
      throw new Failure(errors.notFound);
    }
    if (parts.length === 4) return list(await authenticate(req, 'metrics:read'), url.searchParams);
    const id = parts[4] ?? '';
    if (parts.length === 5) {
      const org = await authenticate(req, 'metrics:read');
      if (!isUuid(id)) throw new Failure(errors.invalidMetricId);
      return detail(org, id);
    }
    if (parts[5] !== 'contract') throw new Failure(errors.notFound);
    const org = await authenticate(req, 'canonical-metric-api:read');
    if (!isUuid(id)) throw new Failure(errors.invalidMetricId);
    return contract(org, id);
  }

  return createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/bench/statements') return send(res, 200, counters);
    counters.requests++;
    route(req).then(
      (body) => send(res, 200, body),
      (error: unknown) => {
        if (error instanceof Failure) return send(res, error.response.status, error.response.body);
        console.error(error);
        send(res, 500, errors.fetchFailed.body);
      },
    );
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE ?? 10) });
  const server = createFloor(pool, process.env.PUBLIC_APP_URL ?? 'http://localhost:3000');
  server.keepAliveTimeout = 72_000;
  server.listen(Number(process.env.PORT ?? 3100), '127.0.0.1', () => {
    console.log(`floor listening on ${process.env.PORT ?? 3100}`);
  });
  process.on('SIGTERM', () => {
    server.close();
    void pool.end().then(() => process.exit(0));
  });
}
