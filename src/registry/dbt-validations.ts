/**
 * Records the evidence of a dbt run (src/importers/dbt-evidence.ts) through
 * the validations write path: one transaction, a `metric.validated` event
 * per result stored, and the trust transitions it causes, dependents
 * included. A metric of the manifest the organization does not have is
 * left out and reported; a metric no counted test is on gets no result.
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import type { DbtEvidence } from '../importers/dbt-evidence.js';
import type { TrustPolicy } from '../metric/trust.js';
import { MAX_VALIDATION_FUTURE_MS } from './limits.js';
import { RegistryError } from './registry-error.js';
import { recordValidations, type ValidationBatch } from './validations.js';

/** The `source` of every result recorded from a dbt run. */
export const DBT_VALIDATION_SOURCE = 'dbt';

export interface DbtMetricSummary {
  key: string;
  /** null: no test ran on its models, nothing was recorded for it */
  status: 'passed' | 'failed' | null;
  tests: { passed: number; warned: number; failed: number; errored: number };
  /** recorded now, already recorded (the same run imported again), not in the registry, or no evidence */
  outcome: 'recorded' | 'duplicate' | 'unmatched' | 'no_tests';
}

export interface DbtValidationSummary {
  ran_at: string;
  source: string;
  recorded: number;
  duplicates: number;
  metrics: DbtMetricSummary[];
  /** metrics of the manifest with test evidence that this organization does not have */
  unmatched: string[];
  /** how the run's results counted (skipped tests are not evidence either way) */
  results: DbtEvidence['results'];
}

/** Records the run's evidence for the organization's metrics; the summary says what became of each metric. */
export async function recordDbtEvidence(
  prisma: PrismaClient,
  orgId: string,
  evidence: DbtEvidence,
  options: { trust: TrustPolicy; now?: Date },
): Promise<DbtValidationSummary> {
  const now = options.now ?? new Date();
  if (new Date(evidence.ranAt).getTime() > now.getTime() + MAX_VALIDATION_FUTURE_MS) {
    throw new RegistryError([
      {
        path: ['run_results', 'metadata', 'generated_at'],
        message: `must not be more than ${MAX_VALIDATION_FUTURE_MS / 60_000} minutes in the future`,
      },
    ]);
  }
  const withEvidence = evidence.metrics.filter((metric) => metric.status !== null);
  // Two dbt metrics whose names make one key: the first one's evidence is recorded.
  const byKey = new Map(withEvidence.map((metric) => [metric.key, metric]));
  const batch: ValidationBatch = {
    results: [...byKey.values()].map((metric) => ({
      metric_key: metric.key,
      ran_at: evidence.ranAt,
      status: metric.status as 'passed' | 'failed',
      details: metric.details,
      source: DBT_VALIDATION_SOURCE,
    })),
  };
  let recorded = 0;
  let duplicates = 0;
  let skipped: string[] = [];
  let storedKeys = new Set<string>();
  if (batch.results.length > 0) {
    const outcome = await recordValidations(prisma, orgId, batch, { ...options, now, skipUnknown: true });
    ({ recorded, duplicates, skipped } = outcome);
    storedKeys = outcome.storedKeys;
  }
  const unmatched = new Set(skipped);
  const metrics = evidence.metrics.map(
    (metric): DbtMetricSummary => ({
      key: metric.key,
      status: metric.status,
      tests: metric.tests,
      outcome:
        metric.status === null
          ? 'no_tests'
          : unmatched.has(metric.key)
            ? 'unmatched'
            : storedKeys.has(metric.key)
              ? 'recorded'
              : 'duplicate',
    }),
  );
  return {
    ran_at: evidence.ranAt,
    source: DBT_VALIDATION_SOURCE,
    recorded,
    duplicates,
    metrics,
    unmatched: [...unmatched],
    results: evidence.results,
  };
}
