/** `last_used_at` is kept with at most one write per key per minute. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLastUsedRecorder } from '../../src/auth/last-used.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ slug: 'last-used' });
const key = org.key();
const quiet = org.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build() });
});
afterAll(() => t.close());

async function lastUsedAt(id: string): Promise<Date | null> {
  return (await t.database.prisma.apiKey.findUniqueOrThrow({ where: { id } })).lastUsedAt;
}

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 50; i++) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('condition not reached');
}

describe('last_used_at', () => {
  it('is set after a request with the key, and only for that key', async () => {
    expect(await lastUsedAt(key.id)).toBeNull();
    expect((await t.get('/api/v1/metrics', key.secret)).statusCode).toBe(200);
    const written = await eventually(
      () => lastUsedAt(key.id),
      (value) => value !== null,
    );
    expect(Date.now() - (written as Date).getTime()).toBeLessThan(60_000);
    expect(await lastUsedAt(quiet.id)).toBeNull();
  });

  it('is written at most once a minute per key', async () => {
    let clock = 1_000_000;
    const errors: unknown[] = [];
    const recorder = createLastUsedRecorder(
      t.database.prisma,
      (error) => errors.push(error),
      () => clock,
    );
    const old = new Date('2020-01-01T00:00:00Z');
    await t.database.prisma.apiKey.update({ where: { id: quiet.id }, data: { lastUsedAt: old } });

    recorder.touch(quiet.id);
    const first = await eventually(
      () => lastUsedAt(quiet.id),
      (value) => value?.getTime() !== old.getTime(),
    );

    await t.database.prisma.apiKey.update({ where: { id: quiet.id }, data: { lastUsedAt: old } });
    clock += 30_000;
    recorder.touch(quiet.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await lastUsedAt(quiet.id)).toEqual(old);

    clock += 31_000;
    recorder.touch(quiet.id);
    const third = await eventually(
      () => lastUsedAt(quiet.id),
      (value) => value?.getTime() !== old.getTime(),
    );
    expect((third as Date).getTime()).toBeGreaterThanOrEqual((first as Date).getTime());
    expect(errors).toEqual([]);
  });
});

describe('last_used_at and the statement count', () => {
  it('is not counted against the request that triggers the write', async () => {
    const local = registry();
    const localOrg = local.org({ slug: 'last-used-count' });
    const fresh = localOrg.key();
    const app = await startTestApp({ fixture: local.build(), serverTiming: true });
    try {
      const res = await app.get('/api/v1/metrics', fresh.secret);
      // the key lookup and the page (with its total); the last_used_at write is not one of them
      expect(res.headers['server-timing']).toMatch(/desc="2 queries"/);
      await eventually(
        async () => (await app.database.prisma.apiKey.findUniqueOrThrow({ where: { id: fresh.id } })).lastUsedAt,
        (value) => value !== null,
      );
    } finally {
      await app.close();
    }
  });
});
