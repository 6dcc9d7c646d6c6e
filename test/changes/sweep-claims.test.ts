/**
 * Instances share a sweep (src/changes/sweep.ts): each claims one
 * organization at a time, none is swept twice in an interval, and one whose
 * registry lock a writer holds is left to the next interval, not waited for.
 * PostgreSQL only: two instances need two pools and a lock held from a third
 * connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../src/admin/organization.js';
import { type SweepOptions, sweepOnce } from '../../src/changes/sweep.js';
import { type Database, openDatabase } from '../../src/db/client.js';
import type { Prisma } from '../../src/generated/prisma/client.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';
import { holdRegistryLock } from '../helpers/registry-lock.js';

const OPTIONS: SweepOptions = { intervalMs: 60_000, retentionDays: 30, trust: { staleValidationDays: 30 } };

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

  it('a writer holding an organization: the sweep leaves it to the next interval, sweeps the others, none twice', async () => {
    const slugs = ['claims-a', 'claims-b', 'claims-c', 'claims-d'];
    for (const slug of slugs) await createOrganization(first.prisma, { slug, name: slug });
    const ids = (await first.prisma.organization.findMany({ select: { id: true } })).map((org) => org.id);
    expect(ids).toHaveLength(4);
    const [busyId] = [...ids].sort();
    if (!busyId) throw new Error('no organization');

    // An apply of one organization holds its registry lock: no sweep waits for it.
    const release = await holdRegistryLock(holder.prisma, busyId, 'registry:apply');
    const passes = await Promise.all([sweepOnce(first.prisma, OPTIONS), sweepOnce(second.prisma, OPTIONS)]);
    expect(passes.reduce((sum, pass) => sum + pass.organizations, 0)).toBe(4);
    expect(passes.flatMap((pass) => pass.busy)).toEqual([busyId]);
    const feed = async (orgId: string) => second.prisma.changeFeed.findUnique({ where: { orgId } });
    for (const id of ids) expect((await feed(id))?.sweptAt).not.toBeNull();
    // Left unswept: its verdicts are not recorded as all evaluated.
    expect((await feed(busyId))?.sweptStaleDays).toBeNull();
    await release();

    // Every organization was claimed in this interval, the held one too: a third pass claims none.
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
    // `going` is asked before the claim and at the start of each page: the first page takes HELD_MS.
    const HELD_MS = 400;
    let asked = 0;
    const slowFirstPage = () => {
      asked += 1;
      if (asked === 2) {
        const until = Date.now() + HELD_MS;
        while (Date.now() < until) {
          // a page whose work takes this long
        }
      }
      return true;
    };
    expect((await sweepOnce(first.prisma, OPTIONS, at, slowFirstPage)).organizations).toBe(1);
    expect(asked).toBeGreaterThanOrEqual(3);
    const sweptAt = (await second.prisma.changeFeed.findUnique({ where: { orgId } }))?.sweptAt?.getTime() ?? 0;
    // Its pages set the claim to the pass's time as each began: at least HELD_MS after the claim.
    expect(sweptAt - at.getTime()).toBeGreaterThanOrEqual(HELD_MS);
  });

  it("a stopping instance ends an organization's sweep at its next page, and leaves it to be swept whole", async () => {
    const orgId = (await createOrganization(first.prisma, { slug: 'claims-stop', name: 'claims-stop' })).id;
    const at = new Date(Date.now() + 10 * OPTIONS.intervalMs);
    await first.prisma.changeFeed.updateMany({ where: { orgId: { not: orgId } }, data: { sweptAt: at } });
    // Going when it claims the organization, stopping by its first page.
    let asked = 0;
    const stopping = await sweepOnce(first.prisma, OPTIONS, at, () => ++asked < 2);
    expect(stopping.organizations).toBe(1);
    expect(
      (await second.prisma.changeFeed.findUnique({ where: { orgId } }))?.sweptAt?.getTime(),
    ).toBeGreaterThanOrEqual(at.getTime());
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

  it('a writer that has recorded events of its organization (its change feed row locked): no sweep statement waits for it', async () => {
    const slugs = ['feed-held-a', 'feed-held-b'];
    for (const slug of slugs) await createOrganization(first.prisma, { slug, name: slug });
    const orgs = await first.prisma.organization.findMany({ where: { slug: { in: slugs } }, select: { id: true } });
    const [heldId, otherId] = orgs.map((org) => org.id).sort();
    if (!heldId || !otherId) throw new Error('no organizations');
    const feed = async (orgId: string) => second.prisma.changeFeed.findUnique({ where: { orgId } });
    let at = new Date(Date.now() + 20 * OPTIONS.intervalMs);
    await sweepOnce(first.prisma, OPTIONS, at);
    // As an apply does when it records its events (src/changes/record.ts), inside its transaction.
    const recordEvents = (orgId: string) => (tx: Prisma.TransactionClient) =>
      tx.$executeRaw`
      INSERT INTO change_feed (org_id, last_seq) VALUES (${orgId}::uuid, 1)
      ON CONFLICT (org_id) DO UPDATE SET last_seq = change_feed.last_seq + EXCLUDED.last_seq`;
    let release = await holdRegistryLock(holder.prisma, heldId, 'registry:apply', recordEvents(heldId));
    try {
      // A statement waiting for the writer's row would hold the pass until the writer ends (or the statement timeout).
      at = new Date(at.getTime() + 2 * OPTIONS.intervalMs);
      await sweepOnce(first.prisma, OPTIONS, at);
      expect((await feed(otherId))?.sweptAt?.getTime()).toBeGreaterThanOrEqual(at.getTime());
    } finally {
      await release();
    }

    // A new organization's first writer inserts its row: the pass still ends, and leaves that row to its writer.
    const { id: newId } = await createOrganization(first.prisma, { slug: 'feed-held-new', name: 'feed-held-new' });
    release = await holdRegistryLock(holder.prisma, newId, 'registry:apply', recordEvents(newId));
    try {
      at = new Date(at.getTime() + 2 * OPTIONS.intervalMs);
      await sweepOnce(first.prisma, OPTIONS, at);
      expect(await feed(newId)).toBeNull();
    } finally {
      await release();
    }
    at = new Date(at.getTime() + 2 * OPTIONS.intervalMs);
    await sweepOnce(second.prisma, OPTIONS, at);
    expect((await feed(newId))?.sweptAt?.getTime()).toBeGreaterThanOrEqual(at.getTime());
  });
});
