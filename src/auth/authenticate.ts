/**
 * Bearer-key and session authentication. Checks run in the order the
 * service interface fixes: header and key format, key lookup (by SHA-256,
 * never compared in clear), revoked, sandbox header, scope.
 */

import { type Expression, sql as rawSql } from 'kysely';
import type { Principal } from '../context.js';
import { db, type Query, ShapeCache } from '../db/kysely.js';
import { POINT_READ, type SqlReader } from '../db/sql.js';
import { type ErrorResponse, errors } from '../errors.js';
import type { Role } from '../generated/prisma/enums.js';
import { type RequestedScope, scopeSatisfied, scopesSatisfying } from './scopes.js';
import { API_KEY_PATTERN, hashSecret } from './secrets.js';

export type AuthResult = { ok: true; principal: Principal } | { ok: false; error: ErrorResponse };

export const BEARER = /^Bearer ([^\s]+)$/i;
export const SERVICE_ENV_HEADER = 'x-service-env';

export const organizationSelect = {
  id: true,
  slug: true,
  plan: true,
  pricingState: true,
  fiscalCalendarStartMonth: true,
  summaryDailyCap: true,
  metricsVersion: true,
} as const;

/**
 * The key with its organization, by the hash of the secret. The columns are
 * named `auth…`, a prefix no column of a read that joins the lookup
 * ({@link ReadWithKey}) has.
 */
const keyLookupQuery = ({ keyHash }: { keyHash: string }) =>
  db
    .selectFrom('apiKey as k')
    .innerJoin('organization as o', 'o.id', 'k.orgId')
    .select([
      'k.id as authKeyId',
      'k.scopes as authScopes',
      'k.sandbox as authSandbox',
      'k.revokedAt as authRevokedAt',
      'k.rateLimitPerMinute as authRateLimit',
      'o.id as authOrgId',
      'o.slug as authOrgSlug',
      'o.plan as authOrgPlan',
      'o.pricingState as authPricingState',
      'o.fiscalCalendarStartMonth as authFiscalMonth',
      'o.summaryDailyCap as authSummaryCap',
      // A bigint: as text, as OrganizationInfo carries it.
      rawSql<string>`o.metrics_version::text`.as('authMetricsVersion'),
    ])
    .where('k.keyHash', '=', keyHash);

type KeyRow = Awaited<ReturnType<ReturnType<typeof keyLookupQuery>['executeTakeFirstOrThrow']>>;

const keyLookup = new ShapeCache<{ keyHash: string }>();

/**
 * A read that travels in the key lookup's own statement, as a lateral
 * subquery over the key's organization: a route that knows what it will read
 * before it is admitted (a metric by id) saves a round trip to the database.
 * It runs only for a request the key admits (not revoked, sandbox header,
 * scope, within its rate limit), so a refused request reads nothing more.
 */
export interface ReadWithKey<A extends object, T> {
  /** names the read's shape (src/db/kysely.ts, ShapeCache) */
  shape: string;
  /** its parameters; none is named like the lookup's own (`keyHash`, `spent`, `defaultLimit`, `serviceEnv`, `scopes`) */
  args: A;
  /** the read over the key's organization `orgId` (an SQL expression); its columns never start with `auth` */
  query(p: A, orgId: Expression<string>): Query<unknown>;
  /** what it read, from the lookup's row (its columns null when it did not run or found nothing) */
  read(row: Record<string, unknown>): T;
}

/** How a {@link ReadWithKey} is admitted: what the key's window holds, with this request. */
export interface WindowState {
  spent: number;
  /** the limit of a key without its own */
  defaultLimit: number;
}

interface KeyArgs {
  keyHash: string;
  spent: number;
  defaultLimit: number;
  serviceEnv: string | null;
  scopes: readonly string[];
}

const keyWithRead = new ShapeCache<KeyArgs & Record<string, unknown>>();

/**
 * The lookup with `read` joined, under the admission checks that the
 * lookup's columns decide: a filter on the key's row alone, which PostgreSQL
 * applies before the read (a one-time filter), so the read does not run for
 * a request that will be refused.
 */
function keyWithReadQuery<A extends object>(p: KeyArgs, read: ReadWithKey<A, unknown>) {
  return keyLookupQuery(p)
    .leftJoinLateral(
      // authReadRan: the read ran (its own columns are null when it found nothing).
      (eb) =>
        rawSql<{ authReadRan: boolean } & Record<string, unknown>>`(
          SELECT true AS "authReadRan", q.* FROM (SELECT 1) AS one
          LEFT JOIN LATERAL (${read.query(p as unknown as A, eb.ref('k.orgId'))}) q ON TRUE
          WHERE k.revoked_at IS NULL AND (NOT k.sandbox OR ${p.serviceEnv}::text = 'sandbox')
            AND k.scopes && ${p.scopes}::text[]
            AND ${p.spent}::int <= coalesce(k.rate_limit_per_minute, ${p.defaultLimit}::int))`.as('r'),
      (join) => join.onTrue(),
    )
    .selectAll('r');
}

/** The key a bearer header presents, by its hash (the lookup's and the key budget's subject). */
export type PresentedKey = { ok: true; keyHash: string } | { ok: false; error: ErrorResponse };

/** Authorization header and key format, the checks before any lookup. */
export function presentedKey(authorization: string | undefined): PresentedKey {
  if (authorization === undefined || authorization === '') return { ok: false, error: errors.missingAuthorization };
  const match = BEARER.exec(authorization);
  if (!match?.[1]) return { ok: false, error: errors.invalidAuthorizationFormat };
  const secret = match[1];
  if (!API_KEY_PATTERN.test(secret)) return { ok: false, error: errors.invalidApiKeyFormat };
  return { ok: true, keyHash: hashSecret(secret) };
}

/**
 * Key lookup, revoked, sandbox header and scope, for a key of the right
 * format ({@link presentedKey}); with `withKey`, its read in the same
 * statement (`read` in the result: its value; absent when it did not run,
 * or failed and the key was looked up alone).
 */
export async function authenticateApiKey<T>(
  sql: SqlReader,
  keyHash: string,
  serviceEnv: string | undefined,
  requested: RequestedScope,
  withKey?: { read: ReadWithKey<object, T>; window: WindowState },
): Promise<AuthResult & { read?: T }> {
  const found = withKey && (await lookupWithRead(sql, keyHash, serviceEnv, requested, withKey));
  // On the SQL reader: this runs on every request (src/db/sql.ts says why), compiled once.
  const key = found
    ? found.key
    : (await sql.query(keyLookup.statement('key', { keyHash }, keyLookupQuery), POINT_READ))[0];
  if (!key) return { ok: false, error: errors.invalidApiKey };
  if (key.authRevokedAt) return { ok: false, error: errors.revokedApiKey };
  if (key.authSandbox && serviceEnv !== 'sandbox') return { ok: false, error: errors.sandboxKeyRequiresSandbox };
  if (!scopeSatisfied(key.authScopes, requested)) return { ok: false, error: errors.insufficientScope };
  return {
    ok: true,
    principal: {
      kind: 'api_key',
      keyId: key.authKeyId,
      keyHash,
      scopes: key.authScopes,
      rateLimitPerMinute: key.authRateLimit,
      org: {
        id: key.authOrgId,
        slug: key.authOrgSlug,
        plan: key.authOrgPlan,
        pricingState: key.authPricingState,
        fiscalCalendarStartMonth: key.authFiscalMonth,
        summaryDailyCap: key.authSummaryCap,
        metricsVersion: key.authMetricsVersion,
      },
    },
    ...(found?.read === undefined ? {} : { read: found.read }),
  };
}

/**
 * The lookup with the read joined: the key's row (undefined: no such key)
 * and what the read found. null when the statement failed: the caller looks
 * the key up alone and the read is left to its route (which degrades as it
 * would without this).
 */
async function lookupWithRead<T>(
  sql: SqlReader,
  keyHash: string,
  serviceEnv: string | undefined,
  requested: RequestedScope,
  { read, window }: { read: ReadWithKey<object, T>; window: WindowState },
): Promise<{ key: KeyRow | undefined; read: T | undefined } | null> {
  const args = {
    ...read.args,
    keyHash,
    spent: window.spent,
    defaultLimit: window.defaultLimit,
    serviceEnv: serviceEnv ?? null,
    scopes: scopesSatisfying(requested),
  };
  try {
    const [row] = await sql.query(
      keyWithRead.statement(`key+${read.shape}`, args, (p) => keyWithReadQuery(p, read)),
      POINT_READ,
    );
    return { key: row, read: row?.authReadRan ? read.read(row) : undefined };
  } catch {
    return null;
  }
}

/** Who a page is shown to: the session's user and the organizations they may switch between. */
export interface PageViewerFacts {
  sessionId: string;
  email: string;
  displayName: string;
  /** the organization the page is of: its name (the principal carries the rest) */
  orgName: string;
  /** every organization the user is a member of, by name */
  organizations: { slug: string; name: string; role: Role }[];
}

/**
 * A session with its user and each of the user's memberships, by the hash
 * of its token: one row per membership (a user without any: one row, its
 * membership columns null). On the SQL reader, prepared once, as the key
 * lookup: every page and every signed-in JSON request runs it.
 */
const sessionLookupQuery = ({ tokenHash }: { tokenHash: string }) =>
  db
    .selectFrom('session as s')
    .innerJoin('appUser as u', 'u.id', 's.userId')
    .leftJoin('membership as m', 'm.userId', 's.userId')
    .leftJoin('organization as o', 'o.id', 'm.orgId')
    .select([
      's.id as sessionId',
      's.userId as userId',
      's.orgId as activeOrgId',
      's.expiresAt as expiresAt',
      'u.email as email',
      'u.displayName as displayName',
      'm.role as role',
      'o.id as orgId',
      'o.slug as orgSlug',
      'o.name as orgName',
      'o.plan as orgPlan',
      'o.pricingState as orgPricingState',
      'o.fiscalCalendarStartMonth as orgFiscalMonth',
      'o.summaryDailyCap as orgSummaryCap',
      rawSql<string | null>`o.metrics_version::text`.as('orgMetricsVersion'),
    ])
    .where('s.tokenHash', '=', tokenHash);

const sessionLookup = new ShapeCache<{ tokenHash: string }>();

type SessionRow = Awaited<ReturnType<ReturnType<typeof sessionLookupQuery>['executeTakeFirstOrThrow']>>;

/** The membership columns of a session row (null only for a user who is a member of none). */
type MemberColumns = 'role' | 'orgId' | 'orgSlug' | 'orgName' | 'orgPlan' | 'orgPricingState' | 'orgFiscalMonth';

/** A session row with a membership and its organization. */
type MemberRow = SessionRow & { [K in MemberColumns | 'orgMetricsVersion']: NonNullable<SessionRow[K]> };

/** The rows of a session that has not expired (none: no such session, or an expired one). */
async function sessionRows(sql: SqlReader, token: string): Promise<SessionRow[]> {
  const rows = await sql.query(
    sessionLookup.statement('session', { tokenHash: hashSecret(token) }, sessionLookupQuery),
    POINT_READ,
  );
  const first = rows[0];
  return first && first.expiresAt.getTime() > Date.now() ? rows : [];
}

const memberships = (rows: SessionRow[]) => rows.filter((row): row is MemberRow => row.orgId !== null);

/** A session's principal in the organization of `row`. */
function sessionPrincipal(row: MemberRow): Principal {
  return {
    kind: 'session',
    userId: row.userId,
    role: row.role,
    org: {
      id: row.orgId,
      slug: row.orgSlug,
      plan: row.orgPlan,
      pricingState: row.orgPricingState,
      fiscalCalendarStartMonth: row.orgFiscalMonth,
      summaryDailyCap: row.orgSummaryCap,
      metricsVersion: row.orgMetricsVersion,
    },
  };
}

/**
 * A signed-in session reading the pages of the organization `orgSlug` (the
 * first segment of a page's path). The session names a user; the page's
 * organization is the one in its URL, among the user's memberships, so that
 * one sign-in reads every organization of the user (the switcher) while the
 * session's active organization stays what the JSON routes act on. Not a
 * member of it, or no such organization: 404, as for a metric of another
 * organization, so that a page says nothing of who exists.
 */
export async function authenticatePageSession(
  sql: SqlReader,
  token: string | undefined,
  orgSlug: string,
): Promise<AuthResult & { read?: PageViewerFacts }> {
  if (!token) return { ok: false, error: errors.notSignedIn };
  const rows = await sessionRows(sql, token);
  const [session] = rows;
  if (!session) return { ok: false, error: errors.notSignedIn };
  const member = memberships(rows);
  const here = member.find((m) => m.orgSlug === orgSlug);
  if (!here) return { ok: false, error: errors.notFound };
  return {
    ok: true,
    principal: sessionPrincipal(here),
    read: {
      sessionId: session.sessionId,
      email: session.email,
      displayName: session.displayName,
      orgName: here.orgName,
      organizations: member
        .map((m) => ({ slug: m.orgSlug, name: m.orgName, role: m.role }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    },
  };
}

/** A signed-in session (cookie `session=<token>`) whose user belongs to its active organization. */
export async function authenticateSession(sql: SqlReader, token: string | undefined): Promise<AuthResult> {
  if (!token) return { ok: false, error: errors.notSignedIn };
  const active = memberships(await sessionRows(sql, token)).find((m) => m.orgId === m.activeOrgId);
  if (!active) return { ok: false, error: errors.notSignedIn };
  return { ok: true, principal: sessionPrincipal(active) };
}
