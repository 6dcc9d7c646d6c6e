/**
 * A metric's place in the lineage, as parts of its read (src/metric/parts.ts):
 * its direct inputs (table metric_input, in position order) with each
 * input's announced verdict (table metric_trust_state), and the count of its
 * direct dependents. Each is one scalar subquery over an index (the primary
 * key (metric_id, input_metric_id) for inputs, (input_metric_id, metric_id)
 * for dependents), so the detail and the contract carry them in their own
 * single statement, and a list batches them per part.
 */
import { sql } from 'kysely';
import type { LifecycleStatus } from '../generated/prisma/enums.js';
import type { MetricPart } from './parts.js';
import type { TrustVerdictValue } from './trust.js';

/**
 * A metric serves at most this many inputs (a registry document names at
 * most 100 per metric); the first ones by position.
 */
export const MAX_SERVED_INPUTS = 100;

/** An input of a metric as its reads carry it. */
export interface InputMetricRow {
  id: string;
  key: string;
  name: string;
  lifecycleStatus: LifecycleStatus;
  /** the input's place in the metric's list of inputs, from 0 */
  position: number;
  /**
   * the input's announced verdict (src/changes/trust-transitions.ts); null
   * while it has none (a metric loaded or imported before the write or the
   * trust sweep that evaluates it)
   */
  verdict: TrustVerdictValue | null;
}

/**
 * Each input's row and verdict are look-ups by primary key inside the
 * aggregate (no join): the cheapest plan for the few inputs a metric has,
 * with no hash or memo to set up for each read. Positions count from 0, so
 * the first MAX_SERVED_INPUTS are those below it; the LIMIT holds the bound
 * whatever the positions.
 */
export const inputsPart: MetricPart<InputMetricRow[]> = {
  name: 'inputs',
  columns: sql`
    (SELECT coalesce(json_agg(
              (SELECT json_build_object('id', im.id, 'key', im.key, 'name', im.name,
                        'lifecycleStatus', im.lifecycle_status, 'position', i.position,
                        'verdict', (SELECT ts.verdict FROM metric_trust_state ts WHERE ts.metric_id = im.id))
               FROM metric im WHERE im.id = i.input_metric_id)
              ORDER BY i.position, i.input_metric_id), '[]')
     FROM (SELECT input_metric_id, position FROM metric_input
           WHERE metric_id = m.id AND position < ${sql.lit(MAX_SERVED_INPUTS)}
           LIMIT ${sql.lit(MAX_SERVED_INPUTS)}) i) AS inputs`,
  joins: sql``,
  read: (row) => row.inputs as InputMetricRow[],
};

export const dependentsCountPart: MetricPart<number> = {
  name: 'dependentsCount',
  columns: sql`(SELECT count(*)::int FROM metric_input WHERE input_metric_id = m.id) AS dependents_count`,
  joins: sql``,
  read: (row) => row.dependents_count as number,
};
