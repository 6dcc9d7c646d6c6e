/**
 * Read-your-writes with read replicas: after a write of an organization
 * commits (an apply, validations), the primary's WAL position is noted as
 * the organization's mark for {@link WRITE_MARK_TTL_MS}; its reads go to a
 * replica only once that replica has replayed past the mark
 * (src/db/read-routing.ts).
 *
 * With Redis (REDIS_URL or REDIS_CLUSTER_NODES) the mark is kept there
 * (`<prefix>:rw:<org>`), so every instance knows of a write another one made;
 * each instance also keeps the marks of its own writes, which are what it
 * has while Redis does not answer.
 */
import { connectRedis, type RedisTarget } from '../redis.js';

/** How long an organization's reads wait for the replicas at most after its write. */
export const WRITE_MARK_TTL_MS = 30_000;

export interface WriteMarks {
  /** `orgId` wrote; its write is on the primary up to `lsn`. */
  note(orgId: string, lsn: bigint): Promise<void>;
  /** The position a replica must have replayed to read for `orgId`; null: no write within the TTL. */
  get(orgId: string): Promise<bigint | null>;
  close(): Promise<void>;
}

interface Logger {
  warn(object: object, message: string): void;
  info(object: object, message: string): void;
}

export interface WriteMarksOptions {
  redis?: RedisTarget;
  /** isolates one deployment's (or test's) marks from another's in a shared Redis */
  keyPrefix?: string;
  logger: Logger;
}

/** 16 hex digits: positions compare as strings in Redis as they do as numbers. */
const encode = (lsn: bigint) => lsn.toString(16).padStart(16, '0');

/** Keeps the later of the stored mark and ARGV[1]; either way for ARGV[2] ms more. */
const NOTE_LATEST = `
local current = redis.call('GET', KEYS[1])
if (not current) or current < ARGV[1] then current = ARGV[1] end
redis.call('SET', KEYS[1], current, 'PX', ARGV[2])
return 1`;

export function createWriteMarks(options: WriteMarksOptions): WriteMarks {
  const prefix = `${options.keyPrefix ?? 'mg'}:rw:`;
  const local = new Map<string, { lsn: bigint; until: number }>();
  const localMark = (orgId: string): bigint | null => {
    const mark = local.get(orgId);
    if (!mark) return null;
    if (mark.until > Date.now()) return mark.lsn;
    local.delete(orgId);
    return null;
  };
  const redis = options.redis
    ? connectRedis(options.redis, options.logger, {
        outage: 'read-your-writes marks are this instance’s own',
        recovery: 'read-your-writes marks shared through Redis',
      })
    : null;
  // A command that fails (Redis down, or frozen past its command timeout) leaves the instance's own marks.
  const unanswered = () => null;

  return {
    async note(orgId, lsn) {
      const previous = localMark(orgId);
      local.set(orgId, {
        lsn: previous !== null && previous > lsn ? previous : lsn,
        until: Date.now() + WRITE_MARK_TTL_MS,
      });
      // Expired marks of organizations that wrote once and never read again go with the next write.
      if (local.size > 10_000) for (const id of local.keys()) localMark(id);
      await redis?.eval(NOTE_LATEST, 1, `${prefix}${orgId}`, encode(lsn), WRITE_MARK_TTL_MS).catch(unanswered);
    },
    async get(orgId) {
      const own = localMark(orgId);
      if (!redis) return own;
      const shared = await redis.get(`${prefix}${orgId}`).catch(unanswered);
      const mark = shared === null ? null : BigInt(`0x${shared}`);
      return own !== null && (mark === null || own > mark) ? own : mark;
    },
    async close() {
      if (redis) await redis.quit().catch(() => redis.disconnect());
    },
  };
}
