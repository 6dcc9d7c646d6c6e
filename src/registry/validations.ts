/**
 * Validation evidence from CI (a warehouse test of a metric passed or
 * failed), recorded all or nothing. A result is identified by its metric,
 * `ran_at` and `source`: posting it again records nothing new. The evidence
 * moves the contract's `last_validated_at` and the trust verdict at once.
 */
import { z } from 'zod';
import type { NewChangeEvent } from '../changes/event.js';
import { recordEvents } from '../changes/record.js';
import { metricsAffectedBy, trustTransitions } from '../changes/trust-transitions.js';
import { lockRegistry } from '../db/registry-lock.js';
import { problemsFromZod } from '../fixtures/fixture-error.js';
import { timestamp } from '../fixtures/schema.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { ValidationStatus } from '../generated/prisma/enums.js';
import { storableText, UNSTORABLE_TEXT } from '../metric/input.js';
import type { TrustPolicy } from '../metric/trust.js';
import { uuidV5 } from '../uuid.js';
import {
  MAX_VALIDATION_DETAILS,
  MAX_VALIDATION_FUTURE_MS,
  MAX_VALIDATION_METRIC_KEY,
  MAX_VALIDATION_RESULTS,
  MAX_VALIDATION_SOURCE,
} from './limits.js';
import { RegistryError } from './registry-error.js';

const storable = (text: z.ZodString) => text.refine(storableText, UNSTORABLE_TEXT);
const atMost = (max: number) => storable(z.string().max(max, `at most ${max} characters`));

const result = z.strictObject({
  metric_key: atMost(MAX_VALIDATION_METRIC_KEY).min(1),
  ran_at: timestamp.refine(
    (ranAt) => new Date(ranAt).getTime() <= Date.now() + MAX_VALIDATION_FUTURE_MS,
    `must not be more than ${MAX_VALIDATION_FUTURE_MS / 60_000} minutes in the future`,
  ),
  status: z.enum(ValidationStatus),
  details: atMost(MAX_VALIDATION_DETAILS).default(''),
  source: atMost(MAX_VALIDATION_SOURCE).default(''),
});

export const validationBatch = z.strictObject({
  results: z
    .array(result)
    .min(1, 'at least one result')
    .max(MAX_VALIDATION_RESULTS, `at most ${MAX_VALIDATION_RESULTS} results a request`),
});

export type ValidationBatch = z.output<typeof validationBatch>;

export interface RecordedValidations {
  /** results stored by this call */
  recorded: number;
  /** results that were stored already (same metric, ran_at and source) */
  duplicates: number;
  /** events recorded in the change feed */
  events: number;
  /** keys of results left out because no metric has them (only with `skipUnknown`) */
  skipped: string[];
  /** keys of the metrics with a result stored by this call */
  storedKeys: Set<string>;
}

/** Parses a batch; RegistryError naming `results[i].field` for each problem. */
export function parseValidationBatch(input: unknown): ValidationBatch {
  const parsed = validationBatch.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new RegistryError(problemsFromZod(parsed.error));
}

interface StoredResult {
  id: string;
  metric_id: string;
  ran_at: Date;
  status: string;
  source: string;
}

/**
 * Records the batch, a `metric.validated` event per result stored (not for
 * duplicates), and the trust transitions the new evidence causes.
 */
export async function recordValidations(
  prisma: PrismaClient,
  orgId: string,
  batch: ValidationBatch,
  options: {
    trust: TrustPolicy;
    now?: Date;
    /** leave out results for keys no metric has, rather than refuse the batch (evidence of a whole dbt project) */
    skipUnknown?: boolean;
  },
): Promise<RecordedValidations> {
  return prisma.$transaction(async (tx) => {
    // Serialized with applies: a metric an apply is removing is either still there or reported missing.
    await lockRegistry(tx, orgId);
    const keys = [...new Set(batch.results.map((r) => r.metric_key))];
    const metrics = await tx.metric.findMany({
      where: { orgId, key: { in: keys } },
      select: { id: true, key: true, name: true, lifecycleStatus: true },
    });
    const byKey = new Map(metrics.map((metric) => [metric.key, metric]));
    const missing = batch.results.flatMap((r, i) =>
      byKey.has(r.metric_key)
        ? []
        : [
            {
              path: ['results', i, 'metric_key'],
              message: `no metric with key "${r.metric_key}" in this organization`,
            },
          ],
    );
    if (missing.length > 0 && !options.skipUnknown) throw new RegistryError(missing);
    const known = batch.results.filter((r) => byKey.has(r.metric_key));
    const skipped = batch.results.filter((r) => !byKey.has(r.metric_key)).map((r) => r.metric_key);
    const rows = known.map((r) => {
      const metricId = (byKey.get(r.metric_key) as { id: string }).id;
      return {
        id: uuidV5(metricId, `validation:${JSON.stringify([r.ran_at, r.source])}`),
        metric_id: metricId,
        ran_at: r.ran_at,
        status: r.status,
        details: r.details,
        source: r.source,
      };
    });
    const stored = await tx.$queryRawUnsafe<StoredResult[]>(
      `INSERT INTO validation (id, metric_id, ran_at, status, details, source)
       SELECT id, metric_id, ran_at, status, details, source
       FROM jsonb_populate_recordset(NULL::validation, $1::jsonb)
       ON CONFLICT DO NOTHING
       RETURNING id::text, metric_id::text, ran_at, status::text, source`,
      JSON.stringify(rows),
    );
    const byId = new Map(metrics.map((metric) => [metric.id, metric]));
    const order = new Map(rows.map((row, i) => [row.id, i]));
    stored.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
    const validated = stored.map((result): NewChangeEvent => {
      const metric = byId.get(result.metric_id) as (typeof metrics)[number];
      return {
        type: 'metric.validated',
        metric,
        detail: { status: result.status, ran_at: result.ran_at.toISOString(), source: result.source },
      };
    });
    const now = options.now ?? new Date();
    const evidenceOf = [...new Set(stored.map((result) => result.metric_id))];
    // The metrics built on them too: a failed (or no longer failed) input moves their verdicts.
    const affected = await metricsAffectedBy(tx, evidenceOf);
    const transitions = await trustTransitions(tx, orgId, affected, options.trust, now);
    const events = await recordEvents(tx, orgId, [...validated, ...transitions], now);
    const storedKeys = new Set(stored.map((result) => (byId.get(result.metric_id) as { key: string }).key));
    return { recorded: stored.length, duplicates: rows.length - stored.length, events, skipped, storedKeys };
  });
}
