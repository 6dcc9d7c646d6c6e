/**
 * One metric's change history: its newest events of the change feed (the
 * events whose subject it is), newest first, at most `limit`, in one
 * statement over the index (org_id, subject, seq) whatever the size of the
 * organization's feed. Without `contractEvents` (a reader without the
 * contract's scope), the contract's event types are left out, as the feed
 * leaves them out (src/changes/feed.ts).
 */
import { sql } from 'kysely';
import { compile } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
import { type CloudEvent, CONTRACT_EVENT_TYPES, cloudEvent } from './event.js';

interface HistoryRow {
  seq: string;
  id: string;
  type: string;
  subject: string;
  time: Date | string;
  data: Record<string, unknown> | null;
}

export async function readMetricHistory(
  reader: SqlReader,
  orgId: string,
  metricId: string,
  limit: number,
  contractEvents: boolean,
): Promise<CloudEvent[]> {
  const withheld = contractEvents ? [] : CONTRACT_EVENT_TYPES;
  const rows = await reader.query(
    compile(sql<HistoryRow>`
      SELECT seq::text AS seq, id::text AS id, type, subject::text AS subject, time, data FROM change_event
      WHERE org_id = ${orgId}::uuid AND subject = ${metricId}::uuid AND type <> ALL(${withheld}::text[])
      ORDER BY seq DESC LIMIT ${limit}::int`),
  );
  return rows.map((row) =>
    cloudEvent({
      orgId,
      seq: row.seq,
      id: row.id,
      type: row.type,
      subject: row.subject,
      time: new Date(row.time),
      data: row.data ?? {},
    }),
  );
}
