/**
 * The per-request GraphQL context: who is asking (authenticated once, before
 * the operation runs) and fresh DataLoaders.
 */

import type { OidcSettings } from './auth/oidc.js';
import { scopeSatisfied } from './auth/scopes.js';
import type { Database } from './db/client.js';
import type { DiscussionWrites } from './discussions/writer.js';
import type { PrismaClient } from './generated/prisma/client.js';
import type { Plan, PricingState, Role } from './generated/prisma/enums.js';
import type { Metrics } from './http/metrics.js';
import { createMetricLoaders, type MetricLoaders } from './metric/loaders.js';
import type { ReadCache } from './metric/read-cache.js';
import type { TrustPolicy } from './metric/trust.js';
import { type RequestReads, requestReads, type UsageCounter } from './metric/usage.js';
import type { SummaryConfig } from './summaries/generator.js';

export interface OrganizationInfo {
  id: string;
  slug: string;
  plan: Plan;
  pricingState: PricingState;
  fiscalCalendarStartMonth: number;
  summaryDailyCap: number | null;
  /** changes with every change to the organization's metrics (a migration's triggers) */
  metricsVersion: string;
}

export type Principal =
  | {
      kind: 'api_key';
      keyId: string;
      /** the SHA-256 of the secret, as stored: the subject of the key's rate limit window */
      keyHash: string;
      scopes: string[];
      rateLimitPerMinute: number | null;
      org: OrganizationInfo;
    }
  | { kind: 'session'; userId: string; role: Role; org: OrganizationInfo }
  /** automation on the write routes only (src/auth/service-token.ts); never reaches a read */
  | { kind: 'service_token'; tokenId: string; tokenHash: string; scopes: string[]; org: OrganizationInfo };

export interface ServiceConfig {
  publicAppUrl: string;
  /** discussion summaries (SUMMARY_*); made once per app, it also keys the app's in-flight generations */
  summaries: SummaryConfig;
  /** the trust verdict's thresholds (TRUST_STALE_VALIDATION_DAYS) */
  trust: TrustPolicy;
  /** sign-in with an OpenID Connect provider (OIDC_*); absent: one-time links only */
  oidc?: OidcSettings;
}

export interface Context {
  prisma: PrismaClient;
  sql: Database['sql'];
  /**
   * With read replicas: the reader of a state the client has seen (a change-feed cursor), the
   * request's replica when `probe` finds that state there, else the primary's for the rest of the
   * request (src/db/read-routing.ts). Absent: `sql` has every state.
   */
  readerAtLeast?: (probe: (sql: Database['sql']) => Promise<boolean>) => Promise<Database['sql']>;
  reads: ReadCache;
  principal: Principal;
  config: ServiceConfig;
  loaders: MetricLoaders;
  metrics: Metrics;
  /**
   * Whether the fields only the contract serves (`agentContextNotes`,
   * `trust`, `discussionSummary`) may be read: what the contract route
   * needs, `canonical-metric-api:read` or `metrics:read` for a key (a key of
   * `definition:read` alone reads list and detail fields only), any session.
   */
  contractFields: boolean;
  /** counts the metrics this request reads one by one (src/metric/usage.ts); null: not counted */
  usage: RequestReads | null;
  /** what discussion mutations run with (src/discussions/writer.ts); absent: the request cannot write */
  discussionWrites?: DiscussionWrites;
}

export interface ContextOptions {
  /**
   * Overrides {@link Context.contractFields} for a caller that decided the
   * scope of its operations itself (the MCP tools).
   */
  contractFields?: boolean;
  /** false: the single-metric reads of this context are not counted (the caller counts what it means to) */
  countReads?: boolean;
  /** for a request that may run discussion mutations (/graphql, the discussion routes) */
  discussionWrites?: DiscussionWrites;
}

/**
 * Whether `principal` may read what only the contract serves (see
 * {@link Context.contractFields}): any session, a key of
 * `canonical-metric-api:read` or `metrics:read`.
 */
export function readsContractFields(principal: Principal): boolean {
  return principal.kind === 'session' || scopeSatisfied(principal.scopes, 'canonical-metric-api:read');
}

export function createContext(
  {
    prisma,
    sql,
    reads,
    readerAtLeast,
    usage,
  }: Pick<Context, 'prisma' | 'sql' | 'reads' | 'readerAtLeast'> & { usage?: UsageCounter },
  principal: Principal,
  config: ServiceConfig,
  metrics: Metrics,
  options: ContextOptions = {},
): Context {
  const contractFields = options.contractFields ?? readsContractFields(principal);
  return {
    prisma,
    sql,
    ...(readerAtLeast ? { readerAtLeast } : {}),
    reads,
    principal,
    config,
    metrics,
    contractFields,
    usage: options.countReads === false ? null : requestReads(usage, principal),
    ...(options.discussionWrites ? { discussionWrites: options.discussionWrites } : {}),
    loaders: createMetricLoaders(sql, principal.org.id),
  };
}
