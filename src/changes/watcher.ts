/**
 * Long-polls of the change feed wait here, holding no database connection:
 * one loop per instance asks, ten times a second and only while someone
 * waits, where the feeds of the waiting organizations stand (one small
 * statement for all of them), and wakes the waiters whose feed has moved
 * past their cursor. It sees the commits of every instance, whatever
 * pooler or replica is in between; a commit made by this instance wakes its
 * waiters at once ({@link ChangeWatcher.poke}).
 */
import type { SqlReader } from '../db/sql.js';
import { feedPositions } from './feed.js';

/** How often the feeds of waiting organizations are read: a waiter wakes at most this late. */
export const WATCH_INTERVAL_MS = 100;

interface Waiter {
  afterSeq: bigint;
  wake(moved: boolean): void;
}

export interface ChangeWatcher {
  /**
   * Resolves true once `orgId` has an event after `afterSeq`, false after
   * `timeoutMs`, when `signal` aborts, or when the watcher closes.
   */
  wait(orgId: string, afterSeq: bigint, timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  /** This instance committed events of `orgId`: its waiters read again now. */
  poke(orgId: string): void;
  /** Wakes every waiter (false) and stops: the instance is shutting down. */
  close(): void;
  /** how many long-polls wait (for metrics and tests) */
  readonly waiting: number;
}

interface Logger {
  warn(object: object, message: string): void;
}

export function createChangeWatcher(
  reader: SqlReader,
  logger: Logger,
  intervalMs = WATCH_INTERVAL_MS,
  /** also told of each poke (the webhook worker) */
  onPoke: (orgId: string) => void = () => {},
): ChangeWatcher {
  const waiters = new Map<string, Set<Waiter>>();
  let count = 0;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  let failing = false;

  const wakeOrg = (orgId: string, moved: (waiter: Waiter) => boolean) => {
    for (const waiter of waiters.get(orgId) ?? []) if (moved(waiter)) waiter.wake(true);
  };

  async function look(): Promise<void> {
    timer = null;
    if (closed || count === 0) return;
    try {
      const positions = await feedPositions(reader, [...waiters.keys()]);
      failing = false;
      for (const [orgId, latest] of positions) wakeOrg(orgId, (waiter) => waiter.afterSeq < latest);
    } catch (error) {
      // The waiters time out as usual; the log says it once per outage.
      if (!failing) logger.warn({ err: (error as Error).message }, 'change feed: cannot read where feeds stand');
      failing = true;
    }
    schedule();
  }

  function schedule() {
    if (timer || closed || count === 0) return;
    timer = setTimeout(() => void look(), intervalMs);
    timer.unref();
  }

  return {
    wait(orgId, afterSeq, timeoutMs, signal) {
      if (closed || signal?.aborted) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const waiter: Waiter = {
          afterSeq,
          wake(moved) {
            const set = waiters.get(orgId);
            if (!set?.delete(waiter)) return;
            count--;
            if (set.size === 0) waiters.delete(orgId);
            clearTimeout(timeout);
            signal?.removeEventListener('abort', abort);
            resolve(moved);
          },
        };
        const abort = () => waiter.wake(false);
        const timeout = setTimeout(abort, timeoutMs);
        signal?.addEventListener('abort', abort, { once: true });
        let set = waiters.get(orgId);
        if (!set) {
          set = new Set();
          waiters.set(orgId, set);
        }
        set.add(waiter);
        count++;
        schedule();
      });
    },
    poke(orgId) {
      wakeOrg(orgId, () => true);
      onPoke(orgId);
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      for (const set of [...waiters.values()]) for (const waiter of [...set]) waiter.wake(false);
    },
    get waiting() {
      return count;
    },
  };
}
