/**
 * The usage of one metric as an admin reads it (GET /api/metrics/{id}/usage):
 * who read it over the last USAGE_WINDOW_DAYS UTC days, most reads first,
 * and its reads per day. What an instance has counted and not yet written is
 * not here (src/metric/usage.ts).
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import { USAGE_WINDOW_DAYS, windowStart } from './usage.js';

/** Credentials a report lists at most (`readers` counts every one). */
export const USAGE_REPORT_MAX_KEYS = 100;

export interface UsageReport {
  metric_id: string;
  key: string;
  days: number;
  /** the first day of the window (UTC, YYYY-MM-DD); the last is today */
  since: string;
  reads: number;
  /** credentials that read it in the window */
  readers: number;
  keys: {
    id: string;
    kind: 'api_key' | 'service_token';
    name: string;
    prefix: string;
    revoked_at: string | null;
    reads: number;
    /** the last day it read the metric (UTC, YYYY-MM-DD) */
    last_read_on: string;
  }[];
  /** days with reads, oldest first */
  daily: { day: string; reads: number }[];
}

/** The report of `metricId` in `orgId`; null when the organization has no such metric. */
export async function readUsageReport(
  prisma: PrismaClient,
  orgId: string,
  metricId: string,
  now: Date,
): Promise<UsageReport | null> {
  const [metric] = await prisma.$queryRaw<{ key: string }[]>`
    SELECT key FROM metric WHERE id = ${metricId}::uuid AND org_id = ${orgId}::uuid`;
  if (!metric) return null;
  const since = windowStart(now, USAGE_WINDOW_DAYS);
  const keys = await prisma.$queryRaw<
    {
      id: string;
      kind: 'api_key' | 'service_token';
      name: string;
      prefix: string;
      revoked_at: Date | null;
      reads: bigint;
      last_read_on: string;
      readers: bigint;
    }[]
  >`
    WITH per_key AS (
      SELECT key_id, sum(reads) AS reads, max(day) AS last_read_on
      FROM metric_usage
      WHERE metric_id = ${metricId}::uuid AND org_id = ${orgId}::uuid AND day >= ${since}::date
      GROUP BY key_id
    )
    SELECT p.key_id::text AS id,
           CASE WHEN k.id IS NOT NULL THEN 'api_key' ELSE 'service_token' END AS kind,
           coalesce(k.name, t.name) AS name, coalesce(k.key_prefix, t.token_prefix) AS prefix,
           coalesce(k.revoked_at, t.revoked_at) AS revoked_at,
           p.reads::bigint AS reads, p.last_read_on::text AS last_read_on, count(*) OVER () AS readers
    FROM per_key p
    LEFT JOIN api_key k ON k.id = p.key_id
    LEFT JOIN service_token t ON t.id = p.key_id
    WHERE k.id IS NOT NULL OR t.id IS NOT NULL
    ORDER BY p.reads DESC, p.key_id
    LIMIT ${USAGE_REPORT_MAX_KEYS}::int`;
  const daily = await prisma.$queryRaw<{ day: string; reads: bigint }[]>`
    SELECT day::text AS day, sum(reads)::bigint AS reads
    FROM metric_usage
    WHERE metric_id = ${metricId}::uuid AND org_id = ${orgId}::uuid AND day >= ${since}::date
    GROUP BY day ORDER BY day`;
  return {
    metric_id: metricId,
    key: metric.key,
    days: USAGE_WINDOW_DAYS,
    since,
    reads: daily.reduce((sum, row) => sum + Number(row.reads), 0),
    readers: Number(keys[0]?.readers ?? 0),
    keys: keys.map((row) => ({
      id: row.id,
      kind: row.kind,
      name: row.name,
      prefix: row.prefix,
      revoked_at: row.revoked_at === null ? null : row.revoked_at.toISOString(),
      reads: Number(row.reads),
      last_read_on: row.last_read_on,
    })),
    daily: daily.map((row) => ({ day: row.day, reads: Number(row.reads) })),
  };
}
