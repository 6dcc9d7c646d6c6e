/**
 * The outbox: events are written by the transaction of the change that
 * causes them (an apply, validation evidence, the trust sweep), so a change
 * that rolls back emits nothing, and one that commits has its events.
 *
 * Numbers: each organization's events are numbered 1, 2, ... by its
 * `change_feed` row, which the writer updates and so holds locked until it
 * commits. Writers of one organization also hold its registry lock
 * (src/db/registry-lock.ts) from before they read what the events are computed
 * from. A second writer numbers after the first has committed, so the feed
 * never shows an event before an earlier-numbered one is visible, and a
 * cursor never skips one.
 */
import { randomUUID } from 'node:crypto';
import type { Prisma } from '../generated/prisma/client.js';
import { eventData, type NewChangeEvent } from './event.js';

type Tx = Prisma.TransactionClient;

/** Events one statement writes at most (one JSON parameter of a few hundred kilobytes). */
const CHUNK = 1000;

/** Records `events` in order after the organization's latest; returns how many. */
export async function recordEvents(
  tx: Tx,
  orgId: string,
  events: readonly NewChangeEvent[],
  now: Date,
): Promise<number> {
  if (!events.length) return 0;
  const [feed] = await tx.$queryRaw<{ first: bigint }[]>`
    INSERT INTO change_feed (org_id, last_seq) VALUES (${orgId}::uuid, ${events.length})
    ON CONFLICT (org_id) DO UPDATE SET last_seq = change_feed.last_seq + EXCLUDED.last_seq
    RETURNING last_seq - ${events.length} AS first`;
  const first = Number(feed?.first ?? 0);
  for (let start = 0; start < events.length; start += CHUNK) {
    const rows = events.slice(start, start + CHUNK).map((event) => ({
      id: randomUUID(),
      type: event.type,
      subject: event.metric.id,
      data: eventData(event),
    }));
    // json, not jsonb, all the way: `data` keeps the order of its members.
    await tx.$executeRawUnsafe(
      `INSERT INTO change_event (org_id, seq, id, type, subject, time, data)
       SELECT $1::uuid, $2::bigint + e.n, (e.row->>'id')::uuid, e.row->>'type', (e.row->>'subject')::uuid,
              $3::timestamptz, e.row->'data'
       FROM json_array_elements($4::json) WITH ORDINALITY AS e(row, n)`,
      orgId,
      first + start,
      now,
      JSON.stringify(rows),
    );
  }
  return events.length;
}
