/**
 * A turn's window spends on a Redis Cluster (docs/redis-cluster.md). A
 * script may touch the keys of one hash slot only, and an admission's windows
 * (the client's throttle, the key's) are in two: the turn's keys are grouped
 * by slot, one spend script call per slot, and the calls bound for one master
 * go in one pipeline, one write and one read per master and turn.
 */
import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';

/** A window as the spend script left it: its count, and the milliseconds before it resets. */
export type Counted = [consumed: number, msBeforeReset: number];

/**
 * Spends one unit of each of `keys` (in order: a key given twice is spent
 * twice) with the script `mgSpendEach`; null for the keys of a slot whose call
 * failed (its master lost, the slot moving, no answer in time), whose caller
 * spends them elsewhere; `failed` hears each failure.
 */
export async function spendPerSlot(
  client: Cluster,
  keys: readonly string[],
  windowSeconds: number,
  failed: (error: unknown) => void,
) {
  const slots = new Map<number, number[]>();
  keys.forEach((key, index) => {
    const slot = calculateSlot(key);
    const indexes = slots.get(slot);
    if (indexes) indexes.push(index);
    else slots.set(slot, [index]);
  });
  // The master the client last saw serving each slot; a stale one answers MOVED, and ioredis follows.
  const masters = new Map<string, number[][]>();
  for (const [slot, indexes] of slots) {
    const master = client.slots[slot]?.[0] ?? '';
    const groups = masters.get(master);
    if (groups) groups.push(indexes);
    else masters.set(master, [indexes]);
  }
  const counted: (Counted | null)[] = keys.map(() => null);
  await Promise.all(
    [...masters.values()].map(async (groups) => {
      const pipeline = client.pipeline();
      for (const indexes of groups) {
        pipeline.mgSpendEach(indexes.length, ...indexes.map((index) => keys[index] as string), windowSeconds);
      }
      const replies = await pipeline.exec().catch((error: unknown) => {
        failed(error);
        return null;
      });
      groups.forEach((indexes, call) => {
        const [error, counts] = replies?.[call] ?? [null, null];
        if (error) failed(error);
        if (error || !Array.isArray(counts)) return;
        indexes.forEach((index, i) => {
          counted[index] = [Number(counts[2 * i]), Number(counts[2 * i + 1])];
        });
      });
    }),
  );
  return counted;
}
