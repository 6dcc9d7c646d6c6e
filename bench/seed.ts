/**
 * The bench registry, generated straight into PostgreSQL with set-based SQL
 * (INSERT ... SELECT FROM generate_series): no per-row round trips, so
 * 100,000 metrics take seconds. Ids are md5-derived UUIDs, so related rows
 * join by arithmetic instead of lookups and every run has the same shape.
 */
import type pg from 'pg';
import { generateApiKey, generateSessionToken, hashSecret, keyPrefix } from '../src/auth/secrets.js';
import { markAllEvaluated } from '../src/changes/sweep.js';
import { trustTransitions } from '../src/changes/trust-transitions.js';
import { openDatabase } from '../src/db/client.js';
import { lockRegistry } from '../src/db/registry-lock.js';
import { DEFAULT_STALE_VALIDATION_DAYS } from '../src/metric/trust.js';

export interface SeedResult {
  orgId: string;
  otherOrgId: string;
  apiKey: string;
  /** a key of the same organization with `definition:read` alone: its list items carry no `trust` */
  definitionKey: string;
  /** the `session` cookie of a member of the main organization (slug `bench`), for the pages */
  sessionToken: string;
  /** metric ids of the main organization, a spread sample for rotation */
  metricIds: string[];
  /** a metric id of the other organization (404 for the bench key) */
  foreignMetricId: string;
  counts: Record<string, number>;
}

const uuid = (seed: string) => `md5(${seed})::uuid`;

/** Word lists; names are prefix + measure + optional segment, e.g. "Weekly Active Users EMEA". */
const PREFIXES = [
  'Net',
  'Gross',
  'Weekly',
  'Monthly',
  'Daily',
  'Quarterly',
  'Adjusted',
  'Total',
  'New',
  'Recurring',
  'Trailing 12M',
  'Average',
];
const MEASURES = [
  'Revenue',
  'Active Users',
  'Churn Rate',
  'Orders',
  'Conversion Rate',
  'Gross Margin',
  'Customer Lifetime Value',
  'Average Order Value',
  'Sessions',
  'Signups',
  'Refunds',
  'Support Tickets',
  'Retention',
  'Bookings',
  'Pipeline',
  'Annual Recurring Revenue',
  'Net Promoter Score',
  'Page Views',
  'Cart Abandonment',
  'Trial Conversions',
  'Fulfillment Time',
  'Inventory Turnover',
  'Ad Spend',
  'Cost per Acquisition',
  'Expansion Revenue',
];
const SEGMENTS = [
  '',
  'EMEA',
  'APAC',
  'North America',
  'LATAM',
  'Enterprise',
  'SMB',
  'Mobile',
  'Web',
  'Self-Serve',
  'Partner Channel',
];
const TEAMS = [
  'finance-analytics',
  'growth',
  'product-analytics',
  'revenue-ops',
  'customer-success',
  'marketing-science',
];
const CONCEPTS = ['revenue', 'engagement', 'retention', 'acquisition', 'operations', 'profitability', 'satisfaction'];
const INTENTS = ['decision_rationale', 'clarification', 'objection', 'proposal', 'question'];

function sqlArray(words: readonly string[]): string {
  return `ARRAY[${words.map((w) => `'${w.replace(/'/g, "''")}'`).join(', ')}]::text[]`;
}

/** Picks from a word list by a pseudo-random function of i (distinct multipliers decorrelate the lists). */
function pick(words: readonly string[], i: string, multiplier: number): string {
  return `(${sqlArray(words)})[1 + ((${i}::bigint * ${multiplier}) % ${words.length})]`;
}

/**
 * The measure of metric i. A name repeats every 3,300 metrics (12 x 25 x 11) and the 25 measures
 * fix i mod 5, which decides whether a metric is discussed (every fifth): without the shift by
 * (i - 1) / 10,000, every metric of a name would be discussed or none, and at 100,000 metrics the first
 * page by name (about 30 metrics a name) would hold no discussion at all. Metrics 1-10,000 keep
 * their names, so registries of up to 10,000 metrics are what they were.
 */
const MEASURE = `(${sqlArray(MEASURES)})[1 + ((i::bigint * 104729 + (i - 1) / 10000) % ${MEASURES.length})]`;

export async function insertMetrics(db: pg.Pool, orgSeed: string, orgId: string, count: number): Promise<void> {
  const name = `concat_ws(' ', ${pick(PREFIXES, 'i', 7919)}, ${MEASURE}, nullif(${pick(SEGMENTS, 'i', 1299709)}, ''))`;
  const lifecycle = `(ARRAY['DRAFT','VALIDATED','CANDIDATE','APPROVED','RELEASED','RELEASED','RELEASED','DEPRECATED'])[1 + i % 8]::"LifecycleStatus"`;
  await db.query(
    `
    INSERT INTO metric (id, org_id, project_id, domain_id, key, name, description, metric_type, lifecycle_status,
      definition_version, policy_tier, owner_team, owner_display_name, scope, tags, concept_name, template_name,
      sql_expression, grains, default_grain, dimensions, filters, source_refs, expression, dependencies,
      created_at, updated_at, bd_included, bd_excluded, bd_time_window, bd_caveats, time_semantics,
      approver_role, approver_user, approved_at, effective_from, next_review_date)
    SELECT ${uuid(`'${orgSeed}-metric-' || i`)}, $1::uuid, ${uuid(`'${orgSeed}-project-' || (i % 5)`)},
      CASE WHEN i % 7 = 0 THEN NULL ELSE ${uuid(`'${orgSeed}-domain-' || (i % 8)`)} END,
      lower(regexp_replace(n.name, '[^A-Za-z0-9]+', '_', 'g')) || '_' || i, n.name,
      n.name || ' for ' || ${pick(CONCEPTS, 'i', 31)} || ' reporting: the ' || lower(${MEASURE}) ||
        ' of ' || ${pick(TEAMS, 'i', 13)} || ' accounts, net of refunds and test traffic, measured per ' ||
        ${pick(['day', 'week', 'month', 'quarter'], 'i', 17)} || ' in the reporting currency.',
      CASE WHEN i % 3 = 0 THEN 'derived' ELSE 'base' END, ${lifecycle},
      (1 + i % 4) || '.' || (i % 10) || '.0', ${pick(['tier_1', 'tier_2', 'tier_3'], 'i', 11)},
      ${pick(TEAMS, 'i', 13)}, CASE WHEN i % 4 = 0 THEN NULL ELSE 'Owner ' || (i % 97) END,
      (ARRAY['enterprise_canonical','domain_canonical','exploratory'])[1 + i % 3]::"MetricScope",
      ARRAY[${pick(CONCEPTS, 'i', 31)}, ${pick(TEAMS, 'i', 13)}, 'kpi'], ${pick(CONCEPTS, 'i', 31)},
      ${pick(['sum_template', 'ratio_template', 'count_distinct_template'], 'i', 5)},
      'SUM(' || lower(regexp_replace(n.name, '[^A-Za-z0-9]+', '_', 'g')) || ')', ARRAY['day','week','month'], 'day',
      '[{"name":"region","type":"string"},{"name":"channel","type":"string"}]'::jsonb, ARRAY['is_test = false'],
      jsonb_build_array(jsonb_build_object('table', 'warehouse.fact_' || ${pick(CONCEPTS, 'i', 31)})),
      CASE WHEN i % 3 = 0 THEN jsonb_build_object('op', 'ratio') END, NULL,
      timestamptz '2023-01-01' + (i % 500) * interval '1 day', timestamptz '2024-06-01' + (i % 300) * interval '1 hour',
      'Completed orders and paid invoices', 'Test accounts, internal traffic', 'calendar month', 'Late data may restate',
      CASE WHEN i % 2 = 0 THEN '{"timezone":"UTC","week_start":"monday"}'::jsonb END,
      'metric_owner', 'user-' || (i % 50), '2024-05-01T00:00:00.000Z', '2024-05-01', '2025-05-01'
    FROM generate_series(1, $2::int) AS i
    CROSS JOIN LATERAL (SELECT ${name} AS name) n`,
    [orgId, count],
  );
}

/** Versions, approvals, validations, challenges, relationships, threads, messages and pins of one organization. */
async function insertSurroundings(db: pg.Pool, orgSeed: string, count: number): Promise<void> {
  const metric = (i: string) => uuid(`'${orgSeed}-metric-' || ${i}`);
  const statements = [
    // 3 versions: superseded, released (or approved), and a draft on every 4th
    `INSERT INTO metric_version (id, metric_id, definition_version, status, released_at, change_summary)
     SELECT ${uuid(`'${orgSeed}-version-' || i || '-' || v`)}, ${metric('i')}, v || '.0.0',
       (CASE WHEN v = 1 THEN 'superseded' WHEN v = 2 THEN (CASE WHEN i % 5 = 0 THEN 'approved' ELSE 'released' END) ELSE 'draft' END)::"VersionStatus",
       CASE WHEN v < 3 THEN timestamptz '2024-01-01' + (i % 200 + v * 30) * interval '1 day' END,
       'Version ' || v || ': clarified exclusions'
     FROM generate_series(1, $1::int) i, generate_series(1, 3) v WHERE v < 3 OR i % 4 = 0`,
    `INSERT INTO approval (id, metric_id, version_id, approver_user_id, approver_role, decision, decided_at, comment)
     SELECT ${uuid(`'${orgSeed}-approval-' || i`)}, ${metric('i')}, ${uuid(`'${orgSeed}-version-' || i || '-2'`)},
       ${uuid(`'user-' || (i % 50)`)}, 'metric_owner', 'approved', timestamptz '2024-03-01' + (i % 90) * interval '1 day', 'Looks right'
     FROM generate_series(1, $1::int) i`,
    `INSERT INTO validation (id, metric_id, ran_at, status, details)
     SELECT ${uuid(`'${orgSeed}-validation-' || i || '-' || v`)}, ${metric('i')},
       timestamptz '2024-07-01' + (i % 60 + v) * interval '1 day',
       (CASE WHEN (i + v) % 9 = 0 THEN 'failed' ELSE 'passed' END)::"ValidationStatus", 'row count check'
     FROM generate_series(1, $1::int) i, generate_series(1, 2) v`,
    `INSERT INTO challenge (id, metric_id, status, raised_by_user_id, reason, created_at)
     SELECT ${uuid(`'${orgSeed}-challenge-' || i`)}, ${metric('i')},
       (CASE WHEN i % 2 = 0 THEN 'open' ELSE 'resolved' END)::"OpenResolved", ${uuid(`'user-' || (i % 50)`)},
       'Numbers disagree with the finance deck', timestamptz '2024-08-01' + (i % 30) * interval '1 day'
     FROM generate_series(1, $1::int) i WHERE i % 3 = 0`,
    // variants of the previous metric, supersession, conflicts, plain relations
    `INSERT INTO metric_relationship (id, metric_id, kind, target_metric_id)
     SELECT ${uuid(`'${orgSeed}-rel-' || i`)}, ${metric('i')},
       (CASE WHEN i % 40 = 1 THEN 'supersedes' WHEN i % 40 = 21 THEN 'conflicts_with' WHEN i % 10 = 1 THEN 'variant_of' ELSE 'related_to' END)::"RelationshipKind",
       ${metric('i - 1')}
     FROM generate_series(2, $1::int) i WHERE i % 5 = 1`,
    // a fifth of the metrics: 5 threads of 4 messages
    `INSERT INTO thread (id, metric_id, intent, resolution_status, title, created_at)
     SELECT ${uuid(`'${orgSeed}-thread-' || i || '-' || t`)}, ${metric('i')}, (${sqlArray(INTENTS)})[t],
       (CASE WHEN (i + t) % 3 = 0 THEN 'resolved' ELSE 'open' END)::"OpenResolved", 'Thread ' || t,
       timestamptz '2024-09-01' + (i % 40 + t) * interval '1 hour'
     FROM generate_series(5, $1::int, 5) i, generate_series(1, 5) t`,
    // pins: 2 per discussed metric, all 20 (over the cap of 10) on every 25th; 1 in 20 deleted
    `INSERT INTO message (id, thread_id, metric_id, author_user_id, body, created_at, updated_at, deleted_at, pinned_at, pinned_by_user_id)
     SELECT ${uuid(`'${orgSeed}-message-' || i || '-' || t || '-' || k`)}, ${uuid(`'${orgSeed}-thread-' || i || '-' || t`)}, ${metric('i')},
       ${uuid(`'user-' || ((i + k) % 50)`)},
       'Message ' || k || ' on thread ' || t || ': the definition excludes refunds issued after period close; see the finance runbook.',
       timestamptz '2024-09-01' + (i % 40 + t) * interval '1 hour' + k * interval '1 minute',
       timestamptz '2024-09-02',
       CASE WHEN (i + t + k) % 20 = 0 THEN timestamptz '2024-09-03' END,
       CASE WHEN i % 25 = 0 OR (k = 1 AND t <= 2) THEN timestamptz '2024-10-01' + (t * 4 + k) * interval '1 minute' END,
       CASE WHEN i % 25 = 0 OR (k = 1 AND t <= 2) THEN ${uuid(`'user-0'`)} END
     FROM generate_series(5, $1::int, 5) i, generate_series(1, 5) t, generate_series(1, 4) k`,
  ];
  for (const sql of statements) await db.query(sql, [count]);
}

/** Metrics of a chain from its first to its last layer: depth 10 (11 layers). */
export const INPUT_LAYERS = 11;
/** Inputs of every metric past the first layer. */
export const FAN_IN = 5;

/**
 * Inputs as edges of metric_input (docs/lineage.md): metric i (1-based) is in layer (i - 1) % 11 and
 * at place q = (i - 1) / 11 of it. A metric of layer k > 0 takes 5 inputs from layer k - 1, the
 * metrics at places q, q + 1, ..., q + 4 (modulo the full places, Q = count / 11, so that every input
 * exists): chains of depth 10 with a fan-in of 5, and a metric of the first layer has about 230
 * transitive dependents (4k + 1 in layer k). Positions follow the order above.
 */
async function insertInputs(db: pg.Pool, orgSeed: string, count: number): Promise<void> {
  const metric = (i: string) => uuid(`'${orgSeed}-metric-' || ${i}`);
  await db.query(
    `INSERT INTO metric_input (metric_id, input_metric_id, position)
     SELECT ${metric('i')}, ${metric(`((((i - 1) / ${INPUT_LAYERS} + t) % q.full) * ${INPUT_LAYERS} + (i - 1) % ${INPUT_LAYERS})`)}, t
     FROM generate_series(1, $1::int) i, generate_series(0, ${FAN_IN - 1}) t,
       (SELECT greatest(1, $1::int / ${INPUT_LAYERS}) AS full) q
     WHERE (i - 1) % ${INPUT_LAYERS} > 0
     ON CONFLICT DO NOTHING`,
    [count],
  );
}

/**
 * The announced verdicts (metric_trust_state), as the sweep writes them for metrics that have none:
 * the list's `trust` filter reads them, and the writers' untrusted inputs are part of every verdict
 * read. Every metric is new, so no event is recorded.
 */
export async function announceVerdicts(databaseUrl: string, orgIds: string[]): Promise<void> {
  const database = await openDatabase({ kind: 'postgres', url: databaseUrl }, { poolSize: 1 });
  try {
    const policy = { staleValidationDays: DEFAULT_STALE_VALIDATION_DAYS };
    const now = new Date();
    for (const orgId of orgIds) {
      // Every metric is new: worked out together, as the fixture loader does (src/fixtures/load.ts).
      const ids = (await database.prisma.metric.findMany({ where: { orgId }, select: { id: true } })).map((m) => m.id);
      await database.prisma.$transaction(
        async (tx) => {
          // Under the registry lock, as the service's writers: a sweep of the running service evaluating
          // the same new metrics would otherwise deadlock with this transaction (seen with 1,000 tenants).
          await lockRegistry(tx, orgId);
          await trustTransitions(tx, orgId, ids, policy, now);
          // As the loader does: the service's sweep then evaluates the metrics whose evidence goes stale.
          await markAllEvaluated(tx, [orgId], policy.staleValidationDays);
        },
        { timeout: 600_000, maxWait: 60_000 },
      );
    }
  } finally {
    await database.close();
  }
}

export interface SeedOptions {
  /**
   * Evaluate and store every verdict (default true): what the list's trust filter and the inputs'
   * verdicts read. A test of statement plans that needs neither leaves it out (at 100,000
   * metrics it is the slowest part of the seed).
   */
  verdicts?: boolean;
}

/** Fills an empty, migrated database (`databaseUrl` is the one `db` connects to). */
export async function seed(
  db: pg.Pool,
  metrics: number,
  databaseUrl: string,
  options: SeedOptions = {},
): Promise<SeedResult> {
  const orgId = (await db.query<{ id: string }>(`SELECT md5('bench-org')::uuid::text AS id`)).rows[0]!.id;
  const otherOrgId = (await db.query<{ id: string }>(`SELECT md5('other-org')::uuid::text AS id`)).rows[0]!.id;
  const otherCount = Math.max(100, Math.round(metrics / 5));

  await db.query(
    `INSERT INTO organization (id, name, slug, plan) VALUES ($1, 'Bench Corp', 'bench', 'enterprise'), ($2, 'Other Corp', 'other', 'team')`,
    [orgId, otherOrgId],
  );
  await db.query(`
    INSERT INTO app_user (id, email, display_name)
    SELECT ${uuid(`'user-' || u`)}, 'user' || u || '@bench.example', 'User ' || u FROM generate_series(0, 49) u`);
  for (const [seedName, id] of [
    ['bench', orgId],
    ['other', otherOrgId],
  ] as const) {
    await db.query(
      `INSERT INTO project (id, org_id, name) SELECT ${uuid(`'${seedName}-project-' || p`)}, $1, 'Project ' || p FROM generate_series(0, 4) p`,
      [id],
    );
    await db.query(
      `INSERT INTO domain (id, org_id, name) SELECT ${uuid(`'${seedName}-domain-' || d`)}, $1, 'Domain ' || d FROM generate_series(0, 7) d`,
      [id],
    );
    await db.query(
      `INSERT INTO membership (org_id, user_id, role) SELECT $1, ${uuid(`'user-' || u`)}, 'member' FROM generate_series(0, 49) u`,
      [id],
    );
  }
  await insertMetrics(db, 'bench', orgId, metrics);
  await insertMetrics(db, 'other', otherOrgId, otherCount);
  await insertSurroundings(db, 'bench', metrics);
  await insertSurroundings(db, 'other', otherCount);
  await insertInputs(db, 'bench', metrics);
  await insertInputs(db, 'other', otherCount);
  await db.query('ANALYZE');
  if (options.verdicts ?? true) await announceVerdicts(databaseUrl, [orgId, otherOrgId]);

  const apiKey = generateApiKey();
  await db.query(
    `INSERT INTO api_key (id, org_id, name, key_hash, key_prefix, scopes, rate_limit_per_minute)
     VALUES (gen_random_uuid(), $1, 'bench', $2, $3, ARRAY['canonical-metric-api:read','definition:read'], 1000000000)`,
    [orgId, hashSecret(apiKey), keyPrefix(apiKey)],
  );
  const definitionKey = generateApiKey();
  await db.query(
    `INSERT INTO api_key (id, org_id, name, key_hash, key_prefix, scopes, rate_limit_per_minute)
     VALUES (gen_random_uuid(), $1, 'bench definitions', $2, $3, ARRAY['definition:read'], 1000000000)`,
    [orgId, hashSecret(definitionKey), keyPrefix(definitionKey)],
  );
  // A member reading the catalog's pages (routes page-*), signed in for the run.
  const sessionToken = generateSessionToken();
  await db.query(
    `WITH reader AS (
       INSERT INTO app_user (id, email, display_name) VALUES (gen_random_uuid(), 'reader@bench.example', 'Bench Reader')
       RETURNING id),
     joined AS (INSERT INTO membership (org_id, user_id, role) SELECT $1, id, 'member' FROM reader)
     INSERT INTO session (id, token_hash, user_id, org_id, expires_at)
     SELECT gen_random_uuid(), $2, id, $1, now() + interval '7 days' FROM reader`,
    [orgId, hashSecret(sessionToken)],
  );
  await db.query('VACUUM ANALYZE');

  // 20 ids spread over the registry: pinned over the cap (25k), discussed (5k), related (5k+1), variants (10k+1), plain.
  const numbers = Array.from({ length: 20 }, (_, k) => {
    const base = 25 * Math.floor(Math.floor((k * metrics) / 20) / 25);
    return Math.min(metrics, base + [25, 5, 6, 11, 2][k % 5]!);
  });
  const ids = await db.query<{ id: string }>(
    `SELECT md5('bench-metric-' || n)::uuid::text AS id FROM unnest($1::int[]) n`,
    [[...new Set(numbers)]],
  );
  const foreign = await db.query<{ id: string }>(`SELECT md5('other-metric-1')::uuid::text AS id`);
  const counts: Record<string, number> = {};
  for (const table of [
    'metric',
    'metric_version',
    'approval',
    'validation',
    'challenge',
    'metric_relationship',
    'thread',
    'message',
    'metric_input',
    'metric_trust_state',
  ]) {
    counts[table] = Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
  }
  return {
    orgId,
    otherOrgId,
    apiKey,
    definitionKey,
    sessionToken,
    metricIds: ids.rows.map((r) => r.id),
    foreignMetricId: foreign.rows[0]!.id,
    counts,
  };
}
