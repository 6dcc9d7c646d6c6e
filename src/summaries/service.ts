/**
 * `summarize(ctx, metricId)`: the discussion summary of a metric for the
 * caller's organization: cache → daily cap → pricing → generate → persist →
 * bill.
 *
 * No database connection or transaction is held while the generator runs:
 * 1. one statement reads the discussion state and the cache;
 * 2. a short transaction takes the organization's summary lock
 *    (`pg_advisory_xact_lock`), looks at the cache again, counts the day's
 *    generations (stored summaries and live claims), checks pricing and
 *    inserts a claim (`discussion_summary_claim`), then commits;
 * 3. the discussion is read and the generator runs, with no connection;
 * 4. one statement stores the summary (`ON CONFLICT DO NOTHING`), inserts the
 *    meter event (`ON CONFLICT DO NOTHING`) and deletes the claim; a failed
 *    generation deletes its claim.
 *
 * One discussion state is generated and billed at most once per organization:
 * the cache row and the meter event are unique in the database; in one
 * process, concurrent misses of the same state share one in-flight promise;
 * across instances, a live claim on the state makes another instance wait
 * for the cached row (polling, without a connection between polls) rather
 * than generate. The daily cap is atomic per organization: claims are taken
 * under one lock per organization and count until their summary is stored.
 * At most `maxConcurrent` generations run at once per instance, and at most
 * half of them (at least 1) for one organization, so that one organization
 * cannot keep the others on `generator_busy`; past either a miss degrades to
 * `generator_busy`.
 *
 * Expected failures (timeout, generator error, cap, pricing, no discussion,
 * busy) are values; a failing database read or write throws (the GraphQL
 * field is then null with an error, which the REST route reports as
 * `discussion_unavailable`).
 */
import { randomUUID } from 'node:crypto';
import type { Context } from '../context.js';
import { Prisma } from '../generated/prisma/client.js';
import type { Plan } from '../generated/prisma/enums.js';
import { readDiscussion } from './discussion.js';
import { extractiveGenerator } from './extractive.js';
import { readDiscussionState } from './fingerprint.js';
import type { Discussion, SummaryConfig, SummaryGenerator } from './generator.js';
import { openaiGenerator } from './openai.js';

export type DegradedReason =
  | 'no_discussion'
  | 'timeout'
  | 'generator_error'
  | 'daily_cap_exceeded'
  | 'pricing_unavailable'
  | 'discussion_unavailable'
  | 'generator_busy';

export interface SummaryOutcome {
  text: string | null;
  /** a summary generated earlier (by any request of the organization) served this call */
  cacheHit: boolean;
  /** this call persisted a new billable meter event */
  charged: boolean;
  /** why `text` is null; null when it is not */
  degradedReason: DegradedReason | null;
}

/** The meter event kind of a generated summary. */
export const SUMMARY_METER_KIND = 'discussion_summary';

/** Plans on which a generated summary is metered overage (contract 4.3). */
export const BILLED_PLANS: ReadonlySet<Plan> = new Set<Plan>(['starter', 'team', 'enterprise', 'design_partner']);

interface SummaryRuntime {
  generator: SummaryGenerator;
  /** org:metric:fingerprint → the generation under way in this process */
  inFlight: Map<string, Promise<SummaryOutcome>>;
  /** generations of this process running now (at most `SummaryConfig.maxConcurrent`) */
  running: number;
  /** of those, per organization id (at most {@link organizationShare}; absent at 0) */
  runningByOrg: Map<string, number>;
}

/** The generations one organization may run at once on an instance of `maxConcurrent`: half, at least 1. */
export function organizationShare(maxConcurrent: number): number {
  return Math.max(1, Math.floor(maxConcurrent / 2));
}

export function createGenerator(config: SummaryConfig): SummaryGenerator {
  return config.provider.kind === 'openai' ? openaiGenerator(config.provider) : extractiveGenerator;
}

// One runtime per service configuration, i.e. per app instance: the
// configuration object is made once when the app is built.
const runtimes = new WeakMap<SummaryConfig, SummaryRuntime>();

function runtimeFor(config: SummaryConfig): SummaryRuntime {
  let runtime = runtimes.get(config);
  if (!runtime) {
    runtime = { generator: createGenerator(config), inFlight: new Map(), running: 0, runningByOrg: new Map() };
    runtimes.set(config, runtime);
  }
  return runtime;
}

/** The generator's name (provider and model) under this configuration: part of the discussion fingerprint. */
export function summaryGeneratorName(config: SummaryConfig): string {
  return runtimeFor(config).generator.name;
}

const degraded = (reason: DegradedReason): SummaryOutcome => ({
  text: null,
  cacheHit: false,
  charged: false,
  degradedReason: reason,
});

const hit = (text: string): SummaryOutcome => ({ text, cacheHit: true, charged: false, degradedReason: null });

export async function summarize(ctx: Context, metricId: string): Promise<SummaryOutcome> {
  const runtime = runtimeFor(ctx.config.summaries);
  const orgId = ctx.principal.org.id;
  const state = await readDiscussionState(ctx.prisma, { orgId, metricId, generatorName: runtime.generator.name });
  if (state.messageCount === 0) return degraded('no_discussion');
  if (state.cachedSummary !== null) return hit(state.cachedSummary);

  const key = `${orgId}:${metricId}:${state.fingerprint}`;
  const running = runtime.inFlight.get(key);
  // Requests that joined another's generation are served by its summary: a hit, never charged.
  if (running)
    return running.then((outcome) => (outcome.text === null ? { ...outcome, charged: false } : hit(outcome.text)));
  const generation = generate(ctx, runtime, metricId, state.fingerprint).finally(() => runtime.inFlight.delete(key));
  runtime.inFlight.set(key, generation);
  return generation;
}

/** How often an instance waiting for another instance's generation looks for its summary. */
const CLAIM_POLL_MS = 100;
/** A claim outlives the generator's timeout by this much (reading the discussion, storing the summary). */
const CLAIM_GRACE_MS = 5_000;

async function generate(
  ctx: Context,
  runtime: SummaryRuntime,
  metricId: string,
  fingerprint: string,
): Promise<SummaryOutcome> {
  // Checked and taken with no await in between: the limit holds however many requests arrive at once.
  const { maxConcurrent } = ctx.config.summaries;
  const orgId = ctx.principal.org.id;
  const ofOrg = runtime.runningByOrg.get(orgId) ?? 0;
  if (runtime.running >= maxConcurrent || ofOrg >= organizationShare(maxConcurrent)) return degraded('generator_busy');
  runtime.running++;
  runtime.runningByOrg.set(orgId, ofOrg + 1);
  try {
    return await claimAndGenerate(ctx, runtime, metricId, fingerprint);
  } finally {
    runtime.running--;
    const left = (runtime.runningByOrg.get(orgId) ?? 1) - 1;
    if (left > 0) runtime.runningByOrg.set(orgId, left);
    else runtime.runningByOrg.delete(orgId);
  }
}

type Claim =
  | { kind: 'claimed'; token: string }
  | { kind: 'hit'; text: string }
  | { kind: 'claimed_elsewhere' }
  | { kind: 'degraded'; reason: 'daily_cap_exceeded' | 'pricing_unavailable' };

/** The cached summary of a discussion state (`summary`) and whether a live claim holds it (`claimed`). */
const cachedOrClaimed = (orgId: string, metricId: string, fingerprint: string) => Prisma.sql`
  (SELECT summary FROM discussion_summary
   WHERE org_id = ${orgId}::uuid AND metric_id = ${metricId}::uuid AND fingerprint = ${fingerprint}) AS summary,
  EXISTS (SELECT 1 FROM discussion_summary_claim
          WHERE org_id = ${orgId}::uuid AND metric_id = ${metricId}::uuid
            AND fingerprint = ${fingerprint} AND expires_at > now()) AS claimed`;

interface ClaimRow {
  summary: string | null;
  claimed: boolean;
  used_today: number;
}

/**
 * Step 2: under the organization's summary lock, in a short transaction:
 * the cache again, a live claim of the same state (another instance
 * generating), the daily cap (stored summaries of the day and live claims),
 * pricing; then the claim.
 */
async function claim(ctx: Context, metricId: string, fingerprint: string): Promise<Claim> {
  const { org } = ctx.principal;
  const dailyCap = org.summaryDailyCap ?? ctx.config.summaries.defaultDailyCap;
  const ttlMs = ctx.config.summaries.timeoutMs + CLAIM_GRACE_MS;
  return ctx.prisma.$transaction(
    async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`summary:${org.id}`}))`;
      const [row] = await tx.$queryRaw<ClaimRow[]>`
        SELECT ${cachedOrClaimed(org.id, metricId, fingerprint)},
               (SELECT count(*)::int FROM discussion_summary
                WHERE org_id = ${org.id}::uuid
                  AND created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
               + (SELECT count(*)::int FROM discussion_summary_claim
                  WHERE org_id = ${org.id}::uuid AND expires_at > now())
                 AS used_today`;
      if (row?.summary != null) return { kind: 'hit', text: row.summary };
      if (row?.claimed) return { kind: 'claimed_elsewhere' };
      if ((row?.used_today ?? 0) >= dailyCap) return { kind: 'degraded', reason: 'daily_cap_exceeded' };
      if (org.pricingState !== 'active') return { kind: 'degraded', reason: 'pricing_unavailable' };
      const token = randomUUID();
      // Only an expired claim can be in the way here (a live one returned above): it is taken over.
      await tx.$executeRaw`
        INSERT INTO discussion_summary_claim (org_id, metric_id, fingerprint, token, expires_at)
        VALUES (${org.id}::uuid, ${metricId}::uuid, ${fingerprint}, ${token}::uuid,
                now() + ${ttlMs} * interval '1 millisecond')
        ON CONFLICT (org_id, metric_id, fingerprint)
          DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at`;
      return { kind: 'claimed', token };
    },
    // Every claim of the organization queues on its lock; each holds it for three short statements.
    { maxWait: 10_000, timeout: 10_000 },
  );
}

async function claimAndGenerate(
  ctx: Context,
  runtime: SummaryRuntime,
  metricId: string,
  fingerprint: string,
): Promise<SummaryOutcome> {
  const { config } = ctx;
  const { org } = ctx.principal;
  const timeoutMs = config.summaries.timeoutMs;
  // How long to wait for another instance's generation: its claim's lifetime.
  const deadline = Date.now() + timeoutMs + CLAIM_GRACE_MS;
  let claimed: Claim = await claim(ctx, metricId, fingerprint);
  while (claimed.kind === 'claimed_elsewhere') {
    if (Date.now() >= deadline) return degraded('timeout');
    await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
    const [row] = await ctx.prisma.$queryRaw<{ summary: string | null; claimed: boolean }[]>`
      SELECT ${cachedOrClaimed(org.id, metricId, fingerprint)}`;
    if (row?.summary != null) return hit(row.summary);
    // The other generation failed (its claim is gone or expired): try to claim it ourselves.
    if (!row?.claimed) claimed = await claim(ctx, metricId, fingerprint);
  }
  if (claimed.kind === 'hit') return hit(claimed.text);
  if (claimed.kind === 'degraded') return degraded(claimed.reason);
  const { token } = claimed;

  let generated: string | { reason: 'timeout' | 'generator_error' };
  try {
    const discussion = await readDiscussion(ctx.prisma, metricId);
    generated = await generateWithTimeout(runtime.generator, discussion, timeoutMs);
  } catch (error) {
    await releaseClaim(ctx, token);
    throw error;
  }
  if (typeof generated !== 'string') {
    await releaseClaim(ctx, token);
    return degraded(generated.reason);
  }

  // Step 4, one statement: store, bill once, release the claim (it stops counting as the row starts to).
  const apiKeyId = ctx.principal.kind === 'api_key' ? ctx.principal.keyId : null;
  const billable = BILLED_PLANS.has(org.plan);
  const [stored] = await ctx.prisma.$queryRaw<{ stored: number; billed: number; summary: string | null }[]>`
    WITH stored AS (
      INSERT INTO discussion_summary (id, org_id, metric_id, fingerprint, provider, summary)
      VALUES (${randomUUID()}::uuid, ${org.id}::uuid, ${metricId}::uuid, ${fingerprint}, ${runtime.generator.name},
              ${generated})
      ON CONFLICT (org_id, metric_id, fingerprint) DO NOTHING
      RETURNING id
    ), billed AS (
      INSERT INTO meter_event (id, org_id, metric_id, kind, fingerprint, api_key_id)
      SELECT ${randomUUID()}::uuid, ${org.id}::uuid, ${metricId}::uuid, ${SUMMARY_METER_KIND}, ${fingerprint},
             ${apiKeyId}::uuid
      FROM stored WHERE ${billable}::boolean
      ON CONFLICT (org_id, kind, metric_id, fingerprint) DO NOTHING
      RETURNING id
    ), released AS (
      DELETE FROM discussion_summary_claim WHERE token = ${token}::uuid RETURNING 1
    )
    SELECT (SELECT count(*)::int FROM stored) AS stored, (SELECT count(*)::int FROM billed) AS billed,
           (SELECT summary FROM discussion_summary
            WHERE org_id = ${org.id}::uuid AND metric_id = ${metricId}::uuid AND fingerprint = ${fingerprint})
             AS summary`;
  // Stored by someone else meanwhile (this claim had expired): theirs serves the call, unbilled.
  if (stored?.stored !== 1 && stored?.summary != null) return hit(stored.summary);
  return { text: generated, cacheHit: false, charged: stored?.billed === 1, degradedReason: null };
}

async function releaseClaim(ctx: Context, token: string): Promise<void> {
  await ctx.prisma.$executeRaw`DELETE FROM discussion_summary_claim WHERE token = ${token}::uuid`;
}

class SummaryTimeout extends Error {
  constructor(ms: number) {
    super(`summary generation took longer than ${ms} ms`);
  }
}

/** Runs the generator with a deadline; past it the generator is aborted and the call degrades. */
async function generateWithTimeout(
  generator: SummaryGenerator,
  discussion: Discussion,
  timeoutMs: number,
): Promise<string | { reason: 'timeout' | 'generator_error' }> {
  const controller = new AbortController();
  const timeout = new SummaryTimeout(timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  // Also rejects when a generator ignores its signal.
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      controller.abort(timeout);
      reject(timeout);
    }, timeoutMs);
  });
  try {
    return await Promise.race([generator.generate(discussion, { signal: controller.signal }), deadline]);
  } catch {
    return { reason: controller.signal.reason === timeout ? 'timeout' : 'generator_error' };
  } finally {
    clearTimeout(timer);
  }
}
