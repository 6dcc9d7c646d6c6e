/**
 * Listing and searching the metrics of one organization (contract 4.1 and
 * the ordering rules of the service interface).
 *
 * Plain listing: `name` ascending (code-point order, the column is
 * COLLATE "C"), then `id`. Search: relevance, then `name`, then `id`
 * (src/metric/rows.ts reads the pages; the full-text vector weighs name and
 * key more than concept and tags, which weigh more than the description).
 */
import { Prisma } from '../generated/prisma/client.js';
import { type LifecycleStatus, MetricScope } from '../generated/prisma/enums.js';
import { isLegacyStatus, LEGACY_STATUS_MATCHES, LIFECYCLE_STATUSES } from './lifecycle.js';

/** The schema's enum, in its order. */
export const METRIC_SCOPES: readonly MetricScope[] = Object.values(MetricScope);

/** Filters as consumers send them; see {@link effectiveFilter} for their meaning. */
export interface MetricFilterInput {
  lifecycleStatus?: string | null;
  status?: string | null;
  policyTier?: string | null;
  scope?: string | null;
  type?: string | null;
}

export interface EffectiveFilter {
  /** null: no lifecycle filter; []: a filter nothing matches */
  lifecycle: LifecycleStatus[] | null;
  policyTier: string | null;
  scope: MetricScope | null;
  metricType: string | null;
}

/**
 * `lifecycleStatus` is passed through (a value that is no lifecycle status
 * matches nothing); legacy `status` applies only without it, through the
 * mapping table (an unknown legacy value is ignored); an invalid `scope` is
 * ignored.
 */
export function effectiveFilter(input: MetricFilterInput = {}): EffectiveFilter {
  let lifecycle: LifecycleStatus[] | null = null;
  if (input.lifecycleStatus != null) {
    const value = input.lifecycleStatus;
    lifecycle = (LIFECYCLE_STATUSES as readonly string[]).includes(value) ? [value as LifecycleStatus] : [];
  } else if (input.status != null && isLegacyStatus(input.status)) {
    lifecycle = [...LEGACY_STATUS_MATCHES[input.status]];
  }
  const scope =
    input.scope != null && (METRIC_SCOPES as readonly string[]).includes(input.scope)
      ? (input.scope as MetricScope)
      : null;
  return { lifecycle, policyTier: input.policyTier ?? null, scope, metricType: input.type ?? null };
}

export function metricWhere(orgId: string, filter: EffectiveFilter): Prisma.MetricWhereInput {
  return {
    orgId,
    ...(filter.lifecycle ? { lifecycleStatus: { in: filter.lifecycle } } : {}),
    ...(filter.policyTier !== null ? { policyTier: filter.policyTier } : {}),
    ...(filter.scope !== null ? { scope: filter.scope } : {}),
    ...(filter.metricType !== null ? { metricType: filter.metricType } : {}),
  };
}

export const LIST_ORDER: Prisma.MetricOrderByWithRelationInput[] = [{ name: 'asc' }, { id: 'asc' }];

/** The filter as SQL over `metric m`; enum values are cast to the column types, so the indexes apply. */
export function filterSql(filter: EffectiveFilter): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  if (filter.lifecycle) {
    parts.push(
      filter.lifecycle.length
        ? Prisma.sql`AND m.lifecycle_status = ANY(${filter.lifecycle}::text[]::"LifecycleStatus"[])`
        : Prisma.sql`AND FALSE`,
    );
  }
  if (filter.policyTier !== null) parts.push(Prisma.sql`AND m.policy_tier = ${filter.policyTier}`);
  if (filter.scope !== null) parts.push(Prisma.sql`AND m.scope = ${filter.scope}::"MetricScope"`);
  if (filter.metricType !== null) parts.push(Prisma.sql`AND m.metric_type = ${filter.metricType}`);
  return parts.length ? Prisma.join(parts, ' ') : Prisma.empty;
}

/**
 * Contract 4.1: only a string of digits with value >= 1 is valid; anything
 * else is the fallback. Values above `max` become `max`.
 */
export function pageParameter(value: unknown, fallback: number, max: number): number {
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return fallback;
  const parsed = Number(value);
  return parsed < 1 ? fallback : Math.min(parsed, max);
}
