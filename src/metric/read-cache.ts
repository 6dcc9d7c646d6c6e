/**
 * Reads kept in this process: list totals, search pages and the catalog's
 * aggregates, by organization and its `metrics_version` (src/metric/list-page.ts,
 * search-page.ts, facets.ts and attention.ts use them). The app builds
 * one cache for all its requests (src/app.ts).
 */
import { LRUCache } from 'lru-cache';
import type { SearchHints } from './list-page.js';

/** A search page as kept: the ids of its metrics, in order, the total of all matches, and its hints. */
export interface SearchHits {
  ids: string[];
  total: number;
  hints: SearchHints;
}

/**
 * Reads kept in this process by organization and its `metrics_version`:
 * list totals by filter, search pages by query, filter and page. Both are
 * bounded in bytes (an estimate of the heap an entry holds: its key, two
 * bytes a character, and its value), whatever the keys or pages are, so
 * that no sequence of distinct requests grows the heap past the bounds.
 */
export interface ReadCache {
  totals: LRUCache<string, number>;
  searches: LRUCache<string, SearchHits>;
  /**
   * the catalog's facet counts and metrics needing attention (src/metric/facets.ts, attention.ts), by
   * key and version, and each key's newest as `{ version, value }` under the key alone
   */
  aggregates: LRUCache<string, object>;
  /** reads of aggregates under way, by key and version: concurrent misses share one */
  pending: Map<string, Promise<object>>;
}

export interface ReadCacheBounds {
  /** bytes of all kept list totals (default {@link DEFAULT_READ_CACHE_BOUNDS}) */
  totalsBytes: number;
  /** bytes of all kept search pages */
  searchesBytes: number;
  /** bytes of all kept aggregates */
  aggregatesBytes?: number;
}

/** 4 MiB of totals (about 20,000 filters), 16 MiB of search pages (about 100,000 metric ids). */
export const DEFAULT_READ_CACHE_BOUNDS: ReadCacheBounds = {
  totalsBytes: 4 * 1024 * 1024,
  searchesBytes: 16 * 1024 * 1024,
  aggregatesBytes: 4 * 1024 * 1024,
};

/** What one entry is taken to hold: its key (UTF-16), a fixed overhead for the entry, and its value. */
const ENTRY_OVERHEAD_BYTES = 64;
const ID_BYTES = 2 * 36 + 16;
export const keptEntryBytes = (key: string, value: number | SearchHits) =>
  2 * key.length +
  ENTRY_OVERHEAD_BYTES +
  (typeof value === 'number' ? 8 : value.ids.length * ID_BYTES + hintsBytes(value.hints));

/** A hint's strings (UTF-16) and a fixed overhead for each. */
const hintsBytes = (hints: SearchHints) =>
  [...hints.corrected.flatMap((c) => [c.from, c.to]), ...hints.didYouMean].reduce(
    (sum, text) => sum + 2 * text.length + ENTRY_OVERHEAD_BYTES,
    0,
  );

export function createReadCache(bounds: ReadCacheBounds = DEFAULT_READ_CACHE_BOUNDS): ReadCache {
  return {
    totals: new LRUCache<string, number>({
      maxSize: bounds.totalsBytes,
      sizeCalculation: (value, key) => keptEntryBytes(key, value),
    }),
    searches: new LRUCache<string, SearchHits>({
      maxSize: bounds.searchesBytes,
      sizeCalculation: (value, key) => keptEntryBytes(key, value),
    }),
    aggregates: new LRUCache<string, object>({
      maxSize: bounds.aggregatesBytes ?? (DEFAULT_READ_CACHE_BOUNDS.aggregatesBytes as number),
      // Their text is most of what they hold: two bytes a character of their JSON, and the key's.
      sizeCalculation: (value, key) => 2 * (key.length + JSON.stringify(value).length) + ENTRY_OVERHEAD_BYTES,
    }),
    pending: new Map(),
  };
}

/** The cache and the organization's `metrics_version`, read with the caller's key or session. */
export interface KeptReads {
  cache: ReadCache;
  version: string;
}

/**
 * How long a request waits for an aggregate of a newer version when one of an older version is kept:
 * past it, the older one is served and the read goes on for the requests after. A registry of
 * thousands of metrics is counted well within it; one of 1,000,000 takes seconds.
 */
export const AGGREGATE_WAIT_MS = 250;

interface Newest {
  version: string;
  value: object;
}

/**
 * An aggregate of `orgId`'s metrics kept by `kept.version`: `read` gives it
 * with the version it was read at (same snapshot), and it is kept only when
 * that is `kept.version` (a write committed in between: it is newer, not kept).
 * Requests missing the same version share one read. While it runs, a request
 * that knows an older version's aggregate waits {@link AGGREGATE_WAIT_MS} at
 * most, then is served the older one (also when the read fails): a page of
 * a very large registry shows counts a write behind rather than wait for
 * them, or send every request to count again.
 */
export async function keptAggregate<T extends object>(
  kept: KeptReads,
  key: string,
  read: () => Promise<{ value: T; version: string | null }>,
): Promise<T> {
  const { aggregates, pending } = kept.cache;
  const versioned = `${key}:${kept.version}`;
  const known = aggregates.get(versioned);
  if (known) return known as T;
  let reading = pending.get(versioned);
  if (!reading) {
    reading = read()
      .then(({ value, version }) => {
        if (version === kept.version) aggregates.set(versioned, value);
        const newest = aggregates.get(key) as Newest | undefined;
        if (version !== null && (!newest || BigInt(version) >= BigInt(newest.version))) {
          aggregates.set(key, { version, value } satisfies Newest);
        }
        return value;
      })
      .finally(() => pending.delete(versioned));
    pending.set(versioned, reading);
  }
  const older = aggregates.get(key) as Newest | undefined;
  if (!older) return reading as Promise<T>;
  // Served the older one: the read's outcome is the next requests'.
  const served = reading.catch(() => older.value);
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<object>((resolve) => {
    timer = setTimeout(() => resolve(older.value), AGGREGATE_WAIT_MS);
  });
  try {
    return (await Promise.race([served, waited])) as T;
  } finally {
    clearTimeout(timer);
  }
}
