/**
 * Instances share a sweep (src/changes/sweep.ts): each claims one
 * organization at a time, so while one instance is held up sweeping an
 * organization, another sweeps the rest, and none is swept twice in an
 * interval. PostgreSQL only: two instances need two pools and a lock held
 * from a third connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../src/admin/organization.js';
import { type SweepOptions, sweepOnce } from '../../src/changes/sweep.js';
import { type Database, openDatabase } from '../../src/db/client.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';
import { holdRegistryLock } from '../helpers/registry-lock.js';

const OPTIONS: SweepOptions = { intervalMs: 60_000, retentionDays: 30, trust: { staleValidationDays: 30 } };

/** `check` polled until true; fails after `ms`. */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(lacks(POSTGRES))('instances sharing a sweep (PostgreSQL)', () => {
  const opened: Database[] = [];
  let drop: () => Promise<void>;
  let first: Database;
  let second: Database;
  let holder: Database;

  beforeAll(async () => {
    const created = await createTestTarget();
    drop = created.drop;
    for (let i = 0; i < 3; i++) opened.push(await openDatabase(created.target, { poolSize: 2 }));
    [first, second, holder] = opened as [Database, Database, Database];
  });

  afterAll(async () => {
    for (const database of opened) await database.close();
    await drop?.();
  });

  it('one instance held up on an organization leaves the others to another instance, and none is swept twice', async () => {
    const slugs = ['claims-a', 'claims-b', 'claims-c', 'claims-d'];
    for (const slug of slugs) await createOrganization(first.prisma, { slug, name: slug });
    const ids = (await first.prisma.organization.findMany({ select: { id: true } })).map((org) => org.id);
    expect(ids).toHaveLength(4);
    // The longest unswept goes first, then the lowest id: none was ever swept, so the lowest id.
    const [firstClaimed] = [...ids].sort();
    if (!firstClaimed) throw new Error('no organization');

    // An apply of the first organization holds its registry lock: its sweep waits for it.
    const release = await holdRegistryLock(holder.prisma, firstClaimed, 'registry:apply');

    const held = sweepOnce(first.prisma, OPTIONS);
    const sweptAt = async (orgId: string) =>
      (await second.prisma.changeFeed.findUnique({ where: { orgId }, select: { sweptAt: true } }))?.sweptAt ?? null;
    await until(
      async () => (await sweptAt(firstClaimed)) !== null,
      10_000,
      'the first instance claims an organization',
    );

    // The first instance waits on its one claim; the second sweeps the other three meanwhile.
    const other = await sweepOnce(second.prisma, OPTIONS);
    expect(other.organizations).toBe(3);
    for (const id of ids) expect(await sweptAt(id)).not.toBeNull();

    await release();
    expect((await held).organizations).toBe(1);
    // Every organization was swept in this interval: a third pass claims none.
    expect((await sweepOnce(second.prisma, OPTIONS)).organizations).toBe(0);
  });

  it('a stopping instance claims no more', async () => {
    const later = new Date(Date.now() + 2 * OPTIONS.intervalMs);
    expect((await sweepOnce(first.prisma, OPTIONS, later, () => false)).organizations).toBe(0);
    expect((await sweepOnce(second.prisma, OPTIONS, later)).organizations).toBe(4);
  });

  it("renews an organization's claim with each page of its sweep", async () => {
    const [orgId] = (await first.prisma.organization.findMany({ select: { id: true }, orderBy: { id: 'asc' } })).map(
      (org) => org.id,
    );
    if (!orgId) throw new Error('no organization');
    const at = new Date(Date.now() + 6 * OPTIONS.intervalMs);
    // Every other organization swept at `at` already: this one alone is due.
    await first.prisma.changeFeed.updateMany({ where: { orgId: { not: orgId } }, data: { sweptAt: at } });
    const release = await holdRegistryLock(holder.prisma, orgId, 'registry:apply');
    const held = sweepOnce(first.prisma, OPTIONS, at);
    const sweptAt = async () =>
      (await second.prisma.changeFeed.findUnique({ where: { orgId }, select: { sweptAt: true } }))?.sweptAt?.getTime();
    await until(async () => ((await sweptAt()) ?? 0) >= at.getTime(), 10_000, 'the organization is claimed');
    const HELD_MS = 400;
    await new Promise((resolve) => setTimeout(resolve, HELD_MS));
    await release();
    expect((await held).organizations).toBe(1);
    // Its pages ran after the wait, and each set the claim to the pass's time then.
    expect(((await sweptAt()) ?? 0) - at.getTime()).toBeGreaterThanOrEqual(HELD_MS);
  });

  it("a stopping instance ends an organization's sweep at its next page, and leaves it to be swept whole", async () => {
    const orgId = (await createOrganization(first.prisma, { slug: 'claims-stop', name: 'claims-stop' })).id;
    const at = new Date(Date.now() + 10 * OPTIONS.intervalMs);
    await first.prisma.changeFeed.updateMany({ where: { orgId: { not: orgId } }, data: { sweptAt: at } });
    const release = await holdRegistryLock(holder.prisma, orgId, 'registry:apply');
    let going = true;
    const stopping = sweepOnce(first.prisma, OPTIONS, at, () => going);
    await until(
      async () =>
        ((await second.prisma.changeFeed.findUnique({ where: { orgId } }))?.sweptAt?.getTime() ?? 0) >= at.getTime(),
      10_000,
      'the organization is claimed',
    );
    // Its first page waits for the lock; the instance stops meanwhile.
    going = false;
    await release();
    expect((await stopping).organizations).toBe(1);
    // Not swept whole: its verdicts are not recorded as all evaluated, so the next sweep evaluates every metric.
    const feed = await second.prisma.changeFeed.findUnique({ where: { orgId } });
    expect(feed?.sweptStaleDays).toBeNull();
    expect(
      (await sweepOnce(second.prisma, OPTIONS, new Date(at.getTime() + 2 * OPTIONS.intervalMs))).organizations,
    ).toBe(5);
    expect((await second.prisma.changeFeed.findUnique({ where: { orgId } }))?.sweptStaleDays).toBe(
      OPTIONS.trust.staleValidationDays,
    );
  });

  it('a pass longer than the interval sweeps each organization once, then ends', async () => {
    const later = new Date(Date.now() + 16 * OPTIONS.intervalMs);
    expect((await sweepOnce(first.prisma, { ...OPTIONS, intervalMs: 1 }, later)).organizations).toBe(5);
  });
});
