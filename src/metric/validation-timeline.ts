/**
 * A metric's validation evidence as a timeline: its newest runs first, at
 * most `limit` of them, with how many there are in all, in one statement
 * over the index (metric_id, ran_at) whatever the number of runs.
 */
import { sql } from 'kysely';
import { compile } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';

export interface ValidationRun {
  ranAt: Date;
  status: string;
  details: string;
  source: string;
}

export interface ValidationTimeline {
  runs: ValidationRun[];
  /** every run recorded for the metric */
  total: number;
}

interface TimelineRow {
  total: number;
  ran_at: Date | string | null;
  status: string | null;
  details: string | null;
  source: string | null;
}

export async function readValidationTimeline(
  reader: SqlReader,
  metricId: string,
  limit: number,
): Promise<ValidationTimeline> {
  const rows = await reader.query(
    compile(sql<TimelineRow>`
      SELECT c.total, v.ran_at, v.status::text AS status, v.details, v.source
      FROM (SELECT count(*)::int AS total FROM validation WHERE metric_id = ${metricId}::uuid) c
      LEFT JOIN LATERAL (
        SELECT ran_at, status, details, source FROM validation WHERE metric_id = ${metricId}::uuid
        ORDER BY ran_at DESC, status DESC, source LIMIT ${limit}::int) v ON TRUE
      ORDER BY v.ran_at DESC, v.status DESC, v.source`),
  );
  const runs = rows
    .filter((row) => row.ran_at !== null)
    .map((row) => ({
      ranAt: new Date(row.ran_at as string),
      status: row.status as string,
      details: row.details ?? '',
      source: row.source ?? '',
    }));
  return { runs, total: rows[0]?.total ?? 0 };
}
