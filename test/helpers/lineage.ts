/**
 * Lineage written with plain SQL, as an apply or an import writes it: edges
 * of metric_input and announced verdicts of metric_trust_state, for tests of
 * the reads over them.
 */
import type { PrismaClient } from '../../src/generated/prisma/client.js';

/** Makes `inputs` the inputs of `metricId`, in this order (positions from 0). */
export async function insertInputs(prisma: PrismaClient, metricId: string, inputs: readonly string[]): Promise<void> {
  if (!inputs.length) return;
  await prisma.$executeRaw`
    INSERT INTO metric_input (metric_id, input_metric_id, position)
    SELECT ${metricId}::uuid, input, (ord - 1)::int
    FROM unnest(${inputs}::uuid[]) WITH ORDINALITY AS i(input, ord)`;
}

/** Edges given as [metric, input] pairs, in one statement; positions count per metric from 0 in the given order. */
export async function insertEdges(prisma: PrismaClient, edges: readonly (readonly [string, string])[]): Promise<void> {
  if (!edges.length) return;
  await prisma.$executeRaw`
    INSERT INTO metric_input (metric_id, input_metric_id, position)
    SELECT e.metric_id, e.input_id, (row_number() OVER (PARTITION BY e.metric_id ORDER BY e.ord) - 1)::int
    FROM unnest(${edges.map(([metric]) => metric)}::uuid[], ${edges.map(([, input]) => input)}::uuid[])
      WITH ORDINALITY AS e(metric_id, input_id, ord)`;
}

/** Announces `verdict` for `metricId`, as a write that evaluated it would. */
export async function announceVerdict(
  prisma: PrismaClient,
  metricId: string,
  verdict: 'use' | 'use_with_caution' | 'do_not_use',
  reasons: readonly string[] = [],
): Promise<void> {
  await prisma.$executeRaw`
    INSERT INTO metric_trust_state (metric_id, verdict, reasons, evaluated_at)
    VALUES (${metricId}::uuid, ${verdict}, ${reasons}::text[], now())
    ON CONFLICT (metric_id) DO UPDATE SET verdict = EXCLUDED.verdict, reasons = EXCLUDED.reasons,
      evaluated_at = EXCLUDED.evaluated_at`;
}
