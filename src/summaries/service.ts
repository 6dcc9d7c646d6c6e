/**
 * `summarize(ctx, metricId)`: the discussion summary of a metric for the
 * caller's organization: cache → daily cap → pricing → generate → persist →
 * bill.
 *
 * One discussion state (fingerprint.ts) is generated and billed at most once
 * per organization:
 * - the cache row and the meter event are unique in the database
 *   (INSERT ... ON CONFLICT DO NOTHING RETURNING decides `charged`);
 * - in one process, concurrent misses of the same state share one in-flight
 *   promise;
 * - across instances, the generating request holds a transaction-scoped
 *   advisory lock on (organization, metric, fingerprint) and looks at the
 *   cache again once it has it, so a second instance waits for the first
 *   and then finds its row. On PGlite (one connection, one process) the
 *   interactive transaction itself is exclusive, which gives the same
 *   ordering.
 * Expected failures (timeout, generator error, cap, pricing, no discussion)
 * are values; a failing database read or write throws (the GraphQL field is
 * then null with an error, which the REST route reports as
 * `discussion_unavailable`).
 */
import { randomUUID } from 'node:crypto';
import type { Context } from '../context.js';
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
  | 'discussion_unavailable';

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
    runtime = { generator: createGenerator(config), inFlight: new Map() };
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

interface LockedRow {
  summary: string | null;
  generated_today: number;
}

async function generate(
  ctx: Context,
  runtime: SummaryRuntime,
  metricId: string,
  fingerprint: string,
): Promise<SummaryOutcome> {
  const { config } = ctx;
  const { org } = ctx.principal;
  const timeoutMs = config.summaries.timeoutMs;
  const dailyCap = org.summaryDailyCap ?? config.summaries.defaultDailyCap;
  const apiKeyId = ctx.principal.kind === 'api_key' ? ctx.principal.keyId : null;

  return ctx.prisma.$transaction(
    async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`summary:${org.id}:${metricId}:${fingerprint}`}))`;
      // Under the lock: another instance may have generated it meanwhile.
      // The cap counts new generations of the organization since UTC midnight.
      const [row] = await tx.$queryRaw<LockedRow[]>`
        SELECT (SELECT summary FROM discussion_summary
                WHERE org_id = ${org.id}::uuid AND metric_id = ${metricId}::uuid AND fingerprint = ${fingerprint})
                 AS summary,
               (SELECT count(*)::int FROM discussion_summary
                WHERE org_id = ${org.id}::uuid
                  AND created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
                 AS generated_today`;
      if (row?.summary != null) return hit(row.summary);
      if ((row?.generated_today ?? 0) >= dailyCap) return degraded('daily_cap_exceeded');
      if (org.pricingState !== 'active') return degraded('pricing_unavailable');

      const discussion = await readDiscussion(tx, metricId);
      const generated = await generateWithTimeout(runtime.generator, discussion, timeoutMs);
      if (typeof generated !== 'string') return degraded(generated.reason);

      const stored = await tx.$queryRaw<{ id: string }[]>`
        INSERT INTO discussion_summary (id, org_id, metric_id, fingerprint, provider, summary)
        VALUES (${randomUUID()}::uuid, ${org.id}::uuid, ${metricId}::uuid, ${fingerprint}, ${runtime.generator.name},
                ${generated})
        ON CONFLICT (org_id, metric_id, fingerprint) DO NOTHING
        RETURNING id::text`;
      let charged = false;
      if (stored.length === 1 && BILLED_PLANS.has(org.plan)) {
        const billed = await tx.$queryRaw<{ id: string }[]>`
          INSERT INTO meter_event (id, org_id, metric_id, kind, fingerprint, api_key_id)
          VALUES (${randomUUID()}::uuid, ${org.id}::uuid, ${metricId}::uuid, ${SUMMARY_METER_KIND}, ${fingerprint},
                  ${apiKeyId}::uuid)
          ON CONFLICT (org_id, kind, metric_id, fingerprint) DO NOTHING
          RETURNING id::text`;
        charged = billed.length === 1;
      }
      return { text: generated, cacheHit: false, charged, degradedReason: null };
    },
    // Waiting for the lock (another instance generating) and generating each take up to the timeout.
    { maxWait: timeoutMs + 5_000, timeout: 2 * timeoutMs + 10_000 },
  );
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
