/**
 * What the registry tests share: organizations made the way a team makes one
 * (no fixture: createOrganization, addUser, a service token, a read key),
 * registry documents as data (written as YAML or JSON by the test), the two
 * write routes, and an independent UUIDv5 to check the ids an apply derives.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { stringify } from 'yaml';
import { createApiKey } from '../../src/admin/api-keys.js';
import { createOrganization } from '../../src/admin/organization.js';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { createSession } from '../../src/admin/sessions.js';
import { addUser } from '../../src/admin/users.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';

/** The Host the tests send: a session's cross-origin check compares Origin with it. */
export const HOST = 'api.test.example';

export type Res = LightMyRequestResponse;
/** A TestApp or a FastifyInstance. */
export type Injector = { inject(options: InjectOptions): Promise<Res> };

/** A metric of a registry document: the required fields and anything else given. */
export type DocMetric = { key: string } & Record<string, unknown>;

export interface RegistryDoc {
  organization: string;
  defaults?: Record<string, unknown>;
  metrics: DocMetric[];
  trust_policy?: Record<string, unknown> | null;
}

/** The smallest valid metric of a document whose `defaults` give project and owner_team. */
export function docMetric(key: string, fields: Record<string, unknown> = {}): DocMetric {
  return { key, name: `Metric ${key}`, description: `About ${key}.`, sql_expression: 'SUM(amount)', ...fields };
}

/** A document with `defaults` naming the project and owner team. */
export function doc(organization: string, metrics: DocMetric[], defaults: Record<string, unknown> = {}): RegistryDoc {
  return {
    organization,
    defaults: { project: 'Core Analytics', owner_team: 'Finance Analytics', ...defaults },
    metrics,
  };
}

export const toYaml = (value: unknown): string => stringify(value, { lineWidth: 0 });

export interface Caller {
  /** a service token (Authorization: Bearer) */
  token?: string;
  /** a session cookie value */
  session?: string;
  headers?: Record<string, string>;
}

function callerHeaders(caller: Caller): Record<string, string> {
  return {
    host: HOST,
    ...(caller.token === undefined ? {} : { authorization: `Bearer ${caller.token}` }),
    ...(caller.session === undefined ? {} : { cookie: `session=${caller.session}` }),
    ...caller.headers,
  };
}

export interface PutOptions extends Caller {
  query?: string;
  /** default: application/json for an object, application/yaml for a string */
  contentType?: string;
}

/** PUT /api/registry with a document (an object is sent as JSON, a string as is). */
export function putRegistry(app: Injector, body: RegistryDoc | string, options: PutOptions = {}): Promise<Res> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const contentType = options.contentType ?? (typeof body === 'string' ? 'application/yaml' : 'application/json');
  return app.inject({
    method: 'PUT',
    url: `/api/registry${options.query ? `?${options.query}` : ''}`,
    headers: { ...callerHeaders(options), 'content-type': contentType },
    payload: text,
  });
}

/** POST /api/validations with a body (an object is sent as JSON). */
export function postValidations(
  app: Injector,
  body: unknown,
  options: Caller & { contentType?: string } = {},
): Promise<Res> {
  return app.inject({
    method: 'POST',
    url: '/api/validations',
    headers: { ...callerHeaders(options), 'content-type': options.contentType ?? 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export interface PlanBody {
  plan: { key: string; result: string; changed_fields: string[] }[];
  totals: { created: number; restored: number; updated: number; unchanged: number; absent: number; removed: number };
}

/** The 200 body of an apply: its plan and totals. */
export function planOf(res: Res): PlanBody {
  if (res.statusCode !== 200) throw new Error(`expected 200, got ${res.statusCode}: ${res.body}`);
  const { data } = res.json() as { data: PlanBody };
  return { plan: data.plan, totals: data.totals };
}

export const totals = (counts: Partial<PlanBody['totals']>): PlanBody['totals'] => ({
  created: 0,
  restored: 0,
  updated: 0,
  unchanged: 0,
  absent: 0,
  removed: 0,
  ...counts,
});

/** An organization as a new team has one: an owner, a CI token with both write scopes, a read key. */
export interface TeamOrg {
  id: string;
  slug: string;
  ownerEmail: string;
  ownerId: string;
  /** the owner's session cookie value */
  ownerSession: string;
  /** a service token with registry:write and validations:write */
  token: string;
  /** a read API key (the contract's scopes), not rate limited in practice */
  key: string;
}

export async function newTeamOrg(prisma: PrismaClient, label = 'team'): Promise<TeamOrg> {
  const slug = `${label}-${randomBytes(4).toString('hex')}`;
  const organization = await createOrganization(prisma, { slug, name: `Team ${slug}` });
  const ownerEmail = `owner-${slug}@example.com`;
  const owner = await addUser(prisma, { org: slug, email: ownerEmail, name: 'Olivia Owner', role: 'owner' });
  const session = await createSession(prisma, { user: ownerEmail, org: slug });
  const token = await createServiceToken(prisma, {
    org: slug,
    name: 'CI',
    scopes: ['registry:write', 'validations:write'],
  });
  const key = await createApiKey(prisma, { org: slug, name: 'reader', rateLimitPerMinute: 1_000_000 });
  return {
    id: organization.id,
    slug,
    ownerEmail,
    ownerId: owner.userId,
    ownerSession: session.token,
    token: token.secret,
    key: key.secret,
  };
}

/** The keys of the organization's metrics as stored, in order. */
export async function storedKeys(prisma: PrismaClient, orgId: string): Promise<string[]> {
  const rows = await prisma.metric.findMany({ where: { orgId }, select: { key: true }, orderBy: { key: 'asc' } });
  return rows.map((row) => row.key);
}

/** The stored inputs of each of the organization's metrics that has some, by key, in their order. */
export async function storedInputs(prisma: PrismaClient, orgId: string): Promise<Record<string, string[]>> {
  const rows = await prisma.metricInput.findMany({
    where: { metric: { orgId } },
    select: { metric: { select: { key: true } }, input: { select: { key: true } } },
    orderBy: [{ metric: { key: 'asc' } }, { position: 'asc' }],
  });
  const inputs: Record<string, string[]> = {};
  for (const row of rows) {
    const list = inputs[row.metric.key] ?? [];
    list.push(row.input.key);
    inputs[row.metric.key] = list;
  }
  return inputs;
}

/** The organization's `metrics_version` as stored. */
export async function metricsVersion(prisma: PrismaClient, orgId: string): Promise<bigint> {
  const organization = await prisma.organization.findUniqueOrThrow({ where: { id: orgId } });
  return organization.metricsVersion;
}

/**
 * RFC 9562 version 5 (SHA-1, name-based) UUID, written here from the RFC
 * rather than taken from src/, so that the ids an apply derives are checked
 * against the standard.
 */
export function uuidV5(namespace: string, name: string): string {
  const bytes = createHash('sha1')
    .update(Buffer.from(namespace.replace(/-/g, ''), 'hex'))
    .update(Buffer.from(name, 'utf8'))
    .digest()
    .subarray(0, 16);
  bytes.writeUInt8((bytes.readUInt8(6) & 0x0f) | 0x50, 6);
  bytes.writeUInt8((bytes.readUInt8(8) & 0x3f) | 0x80, 8);
  const hex = bytes.toString('hex');
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join('-');
}
