/**
 * The sweep forgets sessions and one-time sign-in links past their expiry
 * (whichever organization they are of), and keeps every one still valid.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoginLink } from '../../src/admin/login-links.js';
import { createSession } from '../../src/admin/sessions.js';
import { addUser } from '../../src/admin/users.js';
import { sweepOnce } from '../../src/changes/sweep.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { newTeamOrg, type TeamOrg } from '../registry/support.js';

let t: TestApp;
let org: TeamOrg;
const HOUR_MS = 3600_000;

beforeAll(async () => {
  t = await startTestApp();
  org = await newTeamOrg(t.database.prisma, 'sweep-sign-ins');
  await addUser(t.database.prisma, { org: org.slug, email: 'reader@example.com', name: 'A reader', role: 'viewer' });
});
afterAll(async () => {
  await t?.close();
});

describe('the sweep and sign-ins', () => {
  it('forgets expired sessions and links, keeps the valid ones', async () => {
    const { prisma } = t.database;
    const user = { user: 'reader@example.com', org: org.slug };
    const short = await createSession(prisma, { ...user, ttlHours: 1 });
    const long = await createSession(prisma, { ...user, ttlHours: 48 });
    const link = await createLoginLink(prisma, {
      org: org.slug,
      email: 'reader@example.com',
      publicAppUrl: 'http://localhost',
    });
    const sessionsOf = async () =>
      (
        await prisma.session.findMany({
          where: { orgId: org.id, user: { email: 'reader@example.com' } },
          select: { expiresAt: true },
        })
      )
        .map((row) => row.expiresAt.getTime())
        .sort();
    expect(await sessionsOf()).toEqual([short.expiresAt.getTime(), long.expiresAt.getTime()]);
    expect(await prisma.loginLink.count({ where: { orgId: org.id } })).toBe(1);

    // Two hours on: the one-hour session and the link (minutes) have expired, the two-day session has not.
    const later = new Date(Date.now() + 2 * HOUR_MS);
    expect(link.expiresAt.getTime()).toBeLessThan(later.getTime());
    await sweepOnce(prisma, { intervalMs: 1000, retentionDays: 30, trust: { staleValidationDays: 30 } }, later);
    expect(await sessionsOf()).toEqual([long.expiresAt.getTime()]);
    expect(await prisma.loginLink.count({ where: { orgId: org.id } })).toBe(0);
  });
});
