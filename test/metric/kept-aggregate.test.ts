/**
 * The catalog's aggregates kept by the organization's metrics_version (src/metric/read-cache.ts):
 * requests missing the same version share one read, and while a newer version is read, one that
 * knows an older version's aggregate waits a bounded time, then is served the older one (at
 * 1,000,000 metrics the counts take seconds, and every request counting again timed the home out).
 */
import { describe, expect, it } from 'vitest';
import { AGGREGATE_WAIT_MS, createReadCache, keptAggregate } from '../../src/metric/read-cache.js';

interface Counts {
  total: number;
}

/** A read the test ends when it says: `finish` resolves it with `value` at `version`, `fail` rejects it. */
function heldRead() {
  let calls = 0;
  let finish: (value: Counts, version: string) => void = () => {};
  let fail: (error: Error) => void = () => {};
  const read = () => {
    calls += 1;
    return new Promise<{ value: Counts; version: string | null }>((resolve, reject) => {
      finish = (value, version) => resolve({ value, version });
      fail = reject;
    });
  };
  return { read, calls: () => calls, finish: (v: Counts, at: string) => finish(v, at), fail: (e: Error) => fail(e) };
}

const settled = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('aggregates kept by metrics_version', () => {
  it('shares one read between the requests that miss the same version, and keeps its result', async () => {
    const cache = createReadCache();
    const held = heldRead();
    const requests = Array.from({ length: 20 }, () => keptAggregate({ cache, version: '7' }, 'facets:o', held.read));
    expect(held.calls()).toBe(1);
    held.finish({ total: 3 }, '7');
    expect(await Promise.all(requests)).toEqual(Array.from({ length: 20 }, () => ({ total: 3 })));
    // Kept: the next request reads nothing.
    expect(await keptAggregate({ cache, version: '7' }, 'facets:o', held.read)).toEqual({ total: 3 });
    expect(held.calls()).toBe(1);
    expect(cache.pending.size).toBe(0);
  });

  it('serves a newer version read within the wait, and an older one past it; the read goes on for later requests', async () => {
    const cache = createReadCache();
    const first = heldRead();
    const one = keptAggregate({ cache, version: '1' }, 'facets:o', first.read);
    first.finish({ total: 1 }, '1');
    expect(await one).toEqual({ total: 1 });

    // Read at once: the newer counts.
    const quick = heldRead();
    const two = keptAggregate({ cache, version: '2' }, 'facets:o', quick.read);
    quick.finish({ total: 2 }, '2');
    expect(await two).toEqual({ total: 2 });

    // A read longer than the wait: the older counts, after the wait and not before.
    const slow = heldRead();
    const started = performance.now();
    expect(await keptAggregate({ cache, version: '3' }, 'facets:o', slow.read)).toEqual({ total: 2 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(AGGREGATE_WAIT_MS - 5);
    // A request meanwhile joins the same read; once it ends its counts are served and kept.
    const meanwhile = keptAggregate({ cache, version: '3' }, 'facets:o', slow.read);
    expect(slow.calls()).toBe(1);
    slow.finish({ total: 3 }, '3');
    expect(await meanwhile).toEqual({ total: 3 });
    expect(await keptAggregate({ cache, version: '3' }, 'facets:o', slow.read)).toEqual({ total: 3 });
  });

  it('a failed read fails the request that has nothing older, and serves the older one otherwise; nothing is kept', async () => {
    const cache = createReadCache();
    const broken = heldRead();
    const none = settled(keptAggregate({ cache, version: '1' }, 'attention:o', broken.read));
    broken.fail(new Error('statement timeout'));
    expect(await none).toEqual({ error: new Error('statement timeout') });
    expect(cache.pending.size).toBe(0);

    const good = heldRead();
    const kept = keptAggregate({ cache, version: '1' }, 'attention:o', good.read);
    good.finish({ total: 5 }, '1');
    expect(await kept).toEqual({ total: 5 });

    const failing = heldRead();
    const older = keptAggregate({ cache, version: '2' }, 'attention:o', failing.read);
    failing.fail(new Error('statement timeout'));
    expect(await older).toEqual({ total: 5 });
    // Not kept as version 2: the next request reads again.
    const again = heldRead();
    const next = keptAggregate({ cache, version: '2' }, 'attention:o', again.read);
    again.finish({ total: 6 }, '2');
    expect(await next).toEqual({ total: 6 });
    expect(again.calls()).toBe(1);
  });

  it('keeps nothing as the version asked for when the read saw a newer one, but serves it as the newest', async () => {
    const cache = createReadCache();
    const raced = heldRead();
    const request = keptAggregate({ cache, version: '4' }, 'facets:o', raced.read);
    raced.finish({ total: 9 }, '5');
    expect(await request).toEqual({ total: 9 });
    expect(cache.aggregates.get('facets:o:4')).toBeUndefined();
    expect(cache.aggregates.get('facets:o')).toEqual({ version: '5', value: { total: 9 } });
  });
});
