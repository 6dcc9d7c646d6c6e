/**
 * What the discussion tests share: an organization as a team has one (an
 * owner, an admin, two members, a viewer, a bot's service token with
 * discussions:write, a read key), released and validated metrics, and the
 * calls the product makes, over a real socket: GraphQL and REST with a
 * session cookie (from the app's own origin) or a bearer credential.
 */

import { createServiceToken } from '../../src/admin/service-tokens.js';
import { createSession } from '../../src/admin/sessions.js';
import { addUser } from '../../src/admin/users.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import type { TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, postValidations, putRegistry, type TeamOrg, uuidV5 } from '../registry/support.js';

/** How a call authenticates: a session cookie (from the app's origin) or a bearer secret. */
export type As = { session: string; origin?: string } | { bearer: string };

export interface DiscussionOrg extends TeamOrg {
  admin: string;
  adminId: string;
  member: string;
  memberId: string;
  otherMember: string;
  viewer: string;
  /** a service token with discussions:write, named "Checks bot" */
  bot: string;
  botId: string;
  /** metric ids by key */
  metrics: Record<string, string>;
}

export const KEYS = ['revenue', 'profit', 'orders'] as const;

async function member(prisma: PrismaClient, org: TeamOrg, name: string, role: string) {
  const email = `${name.toLowerCase().replace(/ /g, '.')}-${org.slug}@example.com`;
  const added = await addUser(prisma, { org: org.slug, email, name, role });
  return { id: added.userId, session: (await createSession(prisma, { user: email, org: org.slug })).token };
}

/**
 * Released metrics validated now (every verdict `use`); `profit` is computed
 * from `revenue` (an input edge), all of tier `tier_1`.
 */
export async function discussionOrg(t: TestApp, label = 'disc'): Promise<DiscussionOrg> {
  const prisma = t.database.prisma;
  const org = await newTeamOrg(prisma, label);
  const applied = await putRegistry(
    t,
    doc(
      org.slug,
      KEYS.map((key) => docMetric(key, { lifecycle_status: 'RELEASED', policy_tier: 'tier_1' })),
    ),
    { token: org.token },
  );
  if (applied.statusCode !== 200) throw new Error(`apply: ${applied.body}`);
  const metrics = Object.fromEntries(KEYS.map((key) => [key, uuidV5(org.id, key)]));
  await prisma.$executeRaw`INSERT INTO metric_input (metric_id, input_metric_id, position)
    VALUES (${metrics.profit}::uuid, ${metrics.revenue}::uuid, 0)`;
  const ranAt = new Date().toISOString();
  const validated = await postValidations(
    t,
    { results: KEYS.map((key) => ({ metric_key: key, ran_at: ranAt, status: 'passed' })) },
    { token: org.token },
  );
  if (validated.statusCode !== 200) throw new Error(`validations: ${validated.body}`);
  const admin = await member(prisma, org, 'Ada Admin', 'admin');
  const m = await member(prisma, org, 'Mia Member', 'member');
  const other = await member(prisma, org, 'Otto Other', 'member');
  const viewer = await member(prisma, org, 'Vic Viewer', 'viewer');
  const bot = await createServiceToken(prisma, { org: org.slug, name: 'Checks bot', scopes: ['discussions:write'] });
  return {
    ...org,
    admin: admin.session,
    adminId: admin.id,
    member: m.session,
    memberId: m.id,
    otherMember: other.session,
    viewer: viewer.session,
    bot: bot.secret,
    botId: bot.id,
    metrics,
  };
}

/** A client of one app over its listening socket. */
export function client(base: string) {
  const host = new URL(base).host;
  const headersOf = (as: As, json: boolean): Record<string, string> => ({
    ...('session' in as ? { cookie: `session=${as.session}`, origin: as.origin ?? base } : {}),
    ...('bearer' in as ? { authorization: `Bearer ${as.bearer}` } : {}),
    ...(json ? { 'content-type': 'application/json' } : {}),
  });

  async function rest(method: string, path: string, as: As, body?: unknown) {
    const res = await fetch(new URL(path, base), {
      method,
      headers: headersOf(as, body !== undefined),
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : null };
  }

  async function gql(as: As, query: string, variables: Record<string, unknown> = {}) {
    const res = await fetch(new URL('/graphql', base), {
      method: 'POST',
      headers: headersOf(as, true),
      body: JSON.stringify({ query, variables }),
    });
    const json = (await res.json()) as {
      data?: Record<string, unknown> | null;
      errors?: { message: string; extensions?: Record<string, unknown> }[];
    };
    return { status: res.status, headers: res.headers, ...json };
  }

  return { host, rest, gql };
}

/** The contract's `data` as an API key reads it, and its ETag. */
export async function contract(t: TestApp, org: TeamOrg, metricId: string, query = '') {
  const res = await t.get(`/api/v1/metrics/${metricId}/contract${query}`, org.key);
  if (res.statusCode !== 200) throw new Error(`contract: ${res.statusCode} ${res.body}`);
  return { data: res.json().data, etag: res.headers.etag as string, headers: res.headers };
}

/** The organization's feed events after `after` (all of them without), in order. */
export async function feed(t: TestApp, org: TeamOrg) {
  const res = await t.get('/api/v1/changes?limit=500', org.key);
  if (res.statusCode !== 200) throw new Error(`feed: ${res.body}`);
  return res.json().data as { id: string; type: string; subject: string; data: Record<string, unknown> }[];
}
