/**
 * Reading the change feed: an organization's events after a cursor, oldest
 * first, and the cursor to resume after the last one. One prepared statement
 * reads the page and where the feed stands (its latest number, and how far
 * retention has removed events).
 */
import { sql } from 'kysely';
import { compile } from '../db/kysely.js';
import { POINT_READ, type SqlReader } from '../db/sql.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { type CloudEvent, CONTRACT_EVENT_TYPES, cloudEvent, type StoredChangeEvent } from './event.js';

export const DEFAULT_CHANGES_LIMIT = 100;
export const MAX_CHANGES_LIMIT = 500;

/** A cursor that is not one of the caller's feed, or one past its latest event. */
export class InvalidCursorError extends Error {
  constructor() {
    super('Invalid cursor');
  }
}

/** A cursor whose following events retention has removed: the consumer must resynchronize. */
export class ExpiredCursorError extends Error {
  constructor() {
    super(
      'Cursor expired: events after it are no longer kept; resynchronize (read the metrics again) and follow the feed from the cursor of a request without after',
    );
  }
}

export interface ChangePage {
  events: CloudEvent[];
  /** resumes after the last event of the page (the cursor given when the page is empty) */
  nextCursor: string;
  /** the number the page resumes after, for a wait (src/changes/watcher.ts) */
  afterSeq: bigint;
}

interface FeedRow {
  last_seq: string | null;
  pruned_through: string | null;
  seq: string | null;
  id: string | null;
  type: string | null;
  subject: string | null;
  time: Date | null;
  data: Record<string, unknown> | null;
}

function pageStatement(orgId: string, after: bigint | null, limit: number, withheld: readonly string[]) {
  return compile(sql<FeedRow>`
    SELECT f.last_seq::text AS last_seq, f.pruned_through::text AS pruned_through,
      e.seq::text AS seq, e.id::text AS id, e.type, e.subject::text AS subject, e.time, e.data
    FROM (SELECT ${orgId}::uuid AS org_id) o
    LEFT JOIN change_feed f ON f.org_id = o.org_id
    LEFT JOIN LATERAL (
      SELECT ce.seq, ce.id, ce.type, ce.subject, ce.time, ce.data FROM change_event ce
      WHERE ce.org_id = o.org_id AND ce.seq > greatest(${String(after ?? -1)}::bigint, f.pruned_through)
        AND ce.type <> ALL(${withheld}::text[])
      ORDER BY ce.seq LIMIT ${limit}::int) e ON TRUE
    ORDER BY e.seq`);
}

/**
 * The latest event number of each of `orgIds`' feeds on the server `reader`
 * reads (an organization without events is left out): the watcher's wake-ups
 * (src/changes/watcher.ts), and how far a read replica serves a cursor.
 */
export async function feedPositions(reader: SqlReader, orgIds: readonly string[]): Promise<Map<string, bigint>> {
  const rows = await reader.query(
    compile(sql<{ org_id: string; last_seq: string }>`
      SELECT org_id::text AS org_id, last_seq::text AS last_seq FROM change_feed WHERE org_id = ANY(${orgIds}::uuid[])`),
    POINT_READ,
  );
  return new Map(rows.map((row) => [row.org_id, BigInt(row.last_seq)]));
}

/** The latest event number of `orgId`'s feed on the server `reader` reads (0 without any). */
export async function lastSeq(reader: SqlReader, orgId: string): Promise<bigint> {
  return (await feedPositions(reader, [orgId])).get(orgId) ?? 0n;
}

/**
 * The page of `orgId`'s feed after `cursor` (from the oldest kept event
 * without one); without `contractEvents` (a key without the contract's
 * scope), the events of CONTRACT_EVENT_TYPES are left out. InvalidCursorError,
 * ExpiredCursorError.
 */
export async function readChanges(
  reader: SqlReader,
  orgId: string,
  cursor: string | null,
  limit: number,
  contractEvents: boolean,
): Promise<ChangePage> {
  let after: bigint | null = null;
  if (cursor !== null) {
    after = decodeCursor(cursor, orgId);
    if (after === null) throw new InvalidCursorError();
  }
  const rows = await reader.query(pageStatement(orgId, after, limit, contractEvents ? [] : CONTRACT_EVENT_TYPES));
  const [first] = rows;
  const last = BigInt(first?.last_seq ?? 0);
  const pruned = BigInt(first?.pruned_through ?? 0);
  if (after !== null && after > last) throw new InvalidCursorError();
  if (after !== null && after < pruned) throw new ExpiredCursorError();
  const events: CloudEvent[] = [];
  let position = after ?? pruned;
  for (const row of rows) {
    if (row.seq === null || row.id === null || row.time === null) continue;
    events.push(
      cloudEvent({
        orgId,
        seq: row.seq,
        id: row.id,
        type: row.type as string,
        subject: row.subject as string,
        time: row.time,
        data: row.data ?? {},
      }),
    );
    position = BigInt(row.seq);
  }
  // A short page read every event up to the latest in the statement's snapshot: the cursor moves past
  // the ones left out too, so a reader of fewer types neither reads them again nor wakes for them.
  if (events.length < limit && last > position) position = last;
  return { events, nextCursor: encodeCursor(orgId, position), afterSeq: position };
}

/**
 * The newest `limit` events of `orgId`'s feed, newest first (a person's view
 * of what changed lately; a consumer follows the feed with {@link readChanges}).
 * Without `contractEvents`, the events of CONTRACT_EVENT_TYPES are left out, as there.
 */
export async function latestChanges(
  reader: SqlReader,
  orgId: string,
  limit: number,
  contractEvents: boolean,
): Promise<CloudEvent[]> {
  const withheld = contractEvents ? [] : CONTRACT_EVENT_TYPES;
  const rows = await reader.query(
    compile(sql<Omit<StoredChangeEvent, 'orgId'>>`
      SELECT ce.seq::text AS seq, ce.id::text AS id, ce.type, ce.subject::text AS subject, ce.time, ce.data
      FROM change_event ce
      WHERE ce.org_id = ${orgId}::uuid AND ce.seq > coalesce((SELECT f.pruned_through FROM change_feed f WHERE f.org_id = ce.org_id), -1)
        AND ce.type <> ALL(${withheld}::text[])
      ORDER BY ce.seq DESC LIMIT ${Math.trunc(limit)}::int`),
  );
  return rows.map((row) => cloudEvent({ orgId, ...row }));
}
