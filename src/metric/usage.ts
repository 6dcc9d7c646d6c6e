/**
 * Reads of one metric, counted per reading key, metric and UTC day
 * (table metric_usage) without a database write per request: a read adds one
 * to a count held in memory (two Map look-ups), and the counts are written in
 * one statement every USAGE_FLUSH_INTERVAL_MS, when USAGE_MAX_ENTRIES
 * distinct (key, metric) pairs are held, and when the app closes. Counts not
 * yet written when the process dies are lost, as are those of a write that
 * failed (docs/impact.md says so): this is a signal of who reads what, not an
 * audit log.
 *
 * Who counts: an API key, by its id (a service token, by its id, though the
 * write routes never read a metric). A signed-in session is not counted: a
 * person browsing is no integration that a change would break, and the
 * column names a credential.
 */
import type { Principal } from '../context.js';
import { outsideQueryStats } from '../db/query-stats.js';
import type { PrismaClient } from '../generated/prisma/client.js';

/** How often the held counts are written. */
export const USAGE_FLUSH_INTERVAL_MS = 10_000;
/** Distinct (key, metric) pairs held before they are written early; also bounds what waits for a slow write. */
export const USAGE_MAX_ENTRIES = 10_000;
/** Days of usage kept; the sweep forgets older days (src/changes/sweep.ts). */
export const USAGE_RETENTION_DAYS = 90;
/** The window of "recent readers" in plans and of the usage route. */
export const USAGE_WINDOW_DAYS = 30;

const DAY_MS = 24 * 60 * 60 * 1000;

/** The first UTC day (YYYY-MM-DD) of the `days` ending with the day of `now`. */
export function windowStart(now: Date, days: number): string {
  return utcDay(Math.floor(now.getTime() / DAY_MS) - (days - 1));
}

const utcDay = (dayNumber: number) => new Date(dayNumber * DAY_MS).toISOString().slice(0, 10);

export interface UsageCounter {
  /** one read of `metricId` (a metric that exists) by the credential `keyId`, on today's UTC day */
  count(keyId: string, metricId: string): void;
  /** writes what is held, and waits for that write (and any under way); never rejects */
  flush(): Promise<void>;
  /** stops the timer, then flushes */
  close(): Promise<void>;
}

export interface UsageCounterOptions {
  intervalMs?: number;
  maxEntries?: number;
  now?: () => number;
}

/** Counts of one day: key id → metric id → reads. */
interface Held {
  day: number;
  counts: Map<string, Map<string, number>>;
  entries: number;
}

/**
 * Counts reads in memory and writes them in batches (see the module's
 * comment). `onError` hears of a write that failed (its counts are dropped).
 */
export function createUsageCounter(
  prisma: PrismaClient,
  onError: (error: unknown) => void,
  options: UsageCounterOptions = {},
): UsageCounter {
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? USAGE_MAX_ENTRIES;
  let current: Held = { day: Math.floor(now() / DAY_MS), counts: new Map(), entries: 0 };
  // Batches taken from `current`, waiting for the write; bounded (see take()).
  let waiting: Held[] = [];
  let waitingEntries = 0;
  let writing: Promise<void> = Promise.resolve();

  /** Moves the current counts to the batches to write; past the bound, the oldest waiting are dropped. */
  function take(day: number): void {
    if (current.entries === 0) {
      current.day = day;
      return;
    }
    waiting.push(current);
    waitingEntries += current.entries;
    while (waitingEntries > maxEntries * 4 && waiting.length > 1) {
      const dropped = waiting.shift() as Held;
      waitingEntries -= dropped.entries;
      onError(new Error(`usage counts of ${dropped.entries} (key, metric) pairs dropped: the database is behind`));
    }
    current = { day, counts: new Map(), entries: 0 };
  }

  async function drain(): Promise<void> {
    while (waiting.length > 0) {
      const batches = waiting;
      waiting = [];
      waitingEntries = 0;
      try {
        await writeUsage(prisma, batches);
      } catch (error) {
        onError(error);
      }
    }
  }

  /** Each flush writes after the writes before it, so what it took is written when it resolves. */
  function flush(): Promise<void> {
    take(current.day);
    // A count that reaches the bound flushes from inside a request: the write is not the request's statement.
    writing = writing.then(() => outsideQueryStats(drain));
    return writing;
  }

  const timer = setInterval(() => void flush(), options.intervalMs ?? USAGE_FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    count(keyId, metricId) {
      const day = Math.floor(now() / DAY_MS);
      if (day !== current.day) take(day);
      let metrics = current.counts.get(keyId);
      if (metrics === undefined) {
        metrics = new Map();
        current.counts.set(keyId, metrics);
      }
      const reads = metrics.get(metricId);
      if (reads !== undefined) {
        metrics.set(metricId, reads + 1);
        return;
      }
      metrics.set(metricId, 1);
      if (++current.entries >= maxEntries) void flush();
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

/**
 * The reads of one request (one GraphQL context, one MCP tool call): each
 * metric it reads counts once, however many of its operations or fields read
 * it (the MCP contract by key reads the id, then the contract).
 */
export class RequestReads {
  // Most requests read one metric: a string until a second one comes.
  private seen: string | Set<string> | undefined;

  constructor(
    private readonly counter: UsageCounter,
    private readonly keyId: string,
  ) {}

  /** One read of a metric that exists (a read that found nothing is no read). */
  count(metricId: string): void {
    const seen = this.seen;
    if (seen === undefined) this.seen = metricId;
    else if (typeof seen === 'string') {
      if (seen === metricId) return;
      this.seen = new Set([seen, metricId]);
    } else {
      if (seen.has(metricId)) return;
      seen.add(metricId);
    }
    this.counter.count(this.keyId, metricId);
  }
}

/** The credential whose reads `principal` makes: an API key's or service token's id; null for a session. */
function readerKeyId(principal: Principal): string | null {
  switch (principal.kind) {
    case 'api_key':
      return principal.keyId;
    case 'service_token':
      return principal.tokenId;
    case 'session':
      return null;
  }
}

/** The reads of a request by `principal`; null when nothing is counted (no counter, or a session). */
export function requestReads(counter: UsageCounter | undefined, principal: Principal): RequestReads | null {
  const keyId = counter ? readerKeyId(principal) : null;
  return counter && keyId ? new RequestReads(counter, keyId) : null;
}

/** One read of a metric that exists by `principal`, outside a GraphQL context (a 304, an MCP resolve). */
export function countRead(counter: UsageCounter | undefined, principal: Principal, metricId: string): void {
  const keyId = counter ? readerKeyId(principal) : null;
  if (counter && keyId) counter.count(keyId, metricId);
}

/** `read` of the metric `id`, counted in `reads` when it finds the metric. */
export function countFound<T>(reads: RequestReads | null, id: string, read: Promise<T | null>): Promise<T | null> {
  if (!reads) return read;
  return read.then((metric) => {
    if (metric !== null) reads.count(id);
    return metric;
  });
}

/**
 * One statement for every batch: rows summed by (metric, day, key) first
 * (ON CONFLICT cannot touch a row twice in one statement). A metric deleted
 * since its reads is left out by the join; one being deleted or re-keyed at
 * this moment is skipped rather than waited for (SKIP LOCKED), its counts
 * lost; the rows are written in key order, so that two instances' writes do
 * not deadlock.
 */
async function writeUsage(prisma: PrismaClient, batches: readonly Held[]): Promise<void> {
  const rows = new Map<string, { metricId: string; day: string; keyId: string; reads: number }>();
  for (const batch of batches) {
    const day = utcDay(batch.day);
    for (const [keyId, metrics] of batch.counts) {
      for (const [metricId, reads] of metrics) {
        const id = `${metricId}|${day}|${keyId}`;
        const row = rows.get(id);
        if (row) row.reads += reads;
        else rows.set(id, { metricId, day, keyId, reads });
      }
    }
  }
  if (rows.size === 0) return;
  const list = [...rows.values()];
  await prisma.$executeRaw`
    INSERT INTO metric_usage (metric_id, day, key_id, org_id, reads)
    SELECT r.metric_id, r.day, r.key_id, m.org_id, r.reads
    FROM unnest(${list.map((row) => row.metricId)}::uuid[], ${list.map((row) => row.day)}::date[],
                ${list.map((row) => row.keyId)}::uuid[], ${list.map((row) => row.reads)}::int[])
         AS r(metric_id, day, key_id, reads)
    JOIN metric m ON m.id = r.metric_id
    ORDER BY r.metric_id, r.day, r.key_id
    FOR KEY SHARE OF m SKIP LOCKED
    ON CONFLICT (metric_id, day, key_id)
    DO UPDATE SET reads = least(metric_usage.reads::bigint + EXCLUDED.reads, 2147483647)::int`;
}

/** Forgets the usage of `orgId` older than USAGE_RETENTION_DAYS (the sweep, in its transaction). */
export async function forgetOldUsage(tx: Pick<PrismaClient, '$executeRaw'>, orgId: string, now: Date): Promise<void> {
  await tx.$executeRaw`
    DELETE FROM metric_usage WHERE org_id = ${orgId}::uuid AND day < ${windowStart(now, USAGE_RETENTION_DAYS)}::date`;
}
