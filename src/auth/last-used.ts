/**
 * Keeps `api_key.last_used_at` without a database write on every request:
 * each instance writes a key's time at most once per minute, after the
 * response, outside the request's statement count; the SQL guard keeps
 * several instances from rewriting a time that is less than a minute old.
 */
import { outsideQueryStats } from '../db/query-stats.js';
import type { PrismaClient } from '../generated/prisma/client.js';

const INTERVAL_MS = 60_000;

export interface LastUsedRecorder {
  touch(keyId: string): void;
}

export function createLastUsedRecorder(
  prisma: PrismaClient,
  onError: (error: unknown) => void,
  now: () => number = Date.now,
): LastUsedRecorder {
  // One entry per key used in the last minute; older entries are dropped as we go.
  const writtenAt = new Map<string, number>();
  return {
    touch(keyId) {
      const time = now();
      const previous = writtenAt.get(keyId);
      if (previous !== undefined && time - previous < INTERVAL_MS) return;
      for (const [id, at] of writtenAt) if (time - at >= INTERVAL_MS) writtenAt.delete(id);
      writtenAt.set(keyId, time);
      // A Prisma query starts when it is awaited: attach the handler inside,
      // so that the query runs (and is counted) outside the request.
      outsideQueryStats(() => {
        prisma.$executeRaw`
          UPDATE api_key SET last_used_at = now()
          WHERE id = ${keyId}::uuid AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`.catch(
          onError,
        );
      });
    },
  };
}
