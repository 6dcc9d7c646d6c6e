/**
 * Listing and searching the metrics of one organization (contract 4.1 and
 * the ordering rules of the service interface).
 *
 * Plain listing: `name` ascending (code-point order, the column is
 * COLLATE "C"), then `id`. Search: relevance, then `name`, then `id`
 * (src/metric/list-page.ts and search-page.ts read the pages; the full-text vector weighs name and
 * key more than concept and tags, which weigh more than the description).
 */
import { type RawBuilder, sql } from 'kysely';
import { type LifecycleStatus, MetricScope } from '../generated/prisma/enums.js';
import { isLegacyStatus, LEGACY_STATUS_MATCHES, LIFECYCLE_STATUSES } from './lifecycle.js';
import { TRUST_VERDICTS, type TrustVerdictValue } from './trust.js';

/** The schema's enum, in its order. */
export const METRIC_SCOPES: readonly MetricScope[] = Object.values(MetricScope);

/** Filters as consumers send them; see {@link effectiveFilter} for their meaning. */
export interface MetricFilterInput {
  lifecycleStatus?: string | null;
  status?: string | null;
  policyTier?: string | null;
  scope?: string | null;
  type?: string | null;
  /** the announced trust verdict (one of {@link TRUST_VERDICTS}; the caller refuses any other value first) */
  trust?: string | null;
  /** a domain's id (the caller refuses a value that is no UUID first); the catalog's facet */
  domainId?: string | null;
  /** the owner team, exactly; the catalog's facet */
  ownerTeam?: string | null;
}

export interface EffectiveFilter {
  /** null: no lifecycle filter; []: a filter nothing matches */
  lifecycle: LifecycleStatus[] | null;
  policyTier: string | null;
  scope: MetricScope | null;
  metricType: string | null;
  /** the verdict announced in metric_trust_state; null: no trust filter */
  trust: TrustVerdictValue | null;
  domainId: string | null;
  ownerTeam: string | null;
}

/** Whether `value` is a verdict the `trust` filter takes. */
export const isTrustVerdict = (value: string): value is TrustVerdictValue =>
  (TRUST_VERDICTS as readonly string[]).includes(value);

/**
 * `lifecycleStatus` is passed through (a value that is no lifecycle status
 * matches nothing); legacy `status` applies only without it, through the
 * mapping table (an unknown legacy value is ignored); an invalid `scope` is
 * ignored. `trust` keeps the metrics whose announced verdict (metric_trust_state)
 * it is; a metric with none announced yet matches no verdict.
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
  const trust = input.trust ?? null;
  // Refused with a 400 before this (checkTrustFilter; GraphQL's enum): reaching here is a caller's bug.
  if (trust !== null && !isTrustVerdict(trust)) throw new Error(`unknown trust verdict ${JSON.stringify(trust)}`);
  return {
    lifecycle,
    policyTier: input.policyTier ?? null,
    scope,
    metricType: input.type ?? null,
    trust,
    domainId: input.domainId ?? null,
    ownerTeam: input.ownerTeam ?? null,
  };
}

/**
 * The filter over the metrics `m` of a statement, the one implementation
 * every reader uses (list pages, search, metricsConnection): conditions to
 * AND with the organization's. What is filtered comes from `filter`, the
 * values from `values` (the same filter, or placeholders when a statement is
 * compiled once per shape: see {@link filterKey}). Enum values are cast to
 * the column types, so the indexes apply.
 */
export function filterConditions(filter: EffectiveFilter, values: EffectiveFilter = filter): RawBuilder<unknown>[] {
  const conditions: RawBuilder<unknown>[] = [];
  if (filter.lifecycle) {
    // The statuses are written into the text (they are the schema's enum values, never the client's
    // text), so that a generic plan knows them as a custom plan does. With `= ANY($n)` the generic
    // plan of a list page read every metric of the statuses and sorted them to cut the page (25,000
    // rows for `status=review` at 100,000 metrics, 30 to 80 ms), where reading the name index and
    // skipping the other statuses reads about a page (test/db/query-plans.test.ts bounds it).
    conditions.push(
      filter.lifecycle.length
        ? sql`m.lifecycle_status IN (${sql.join(filter.lifecycle.map((status) => sql.lit(status)))})`
        : sql`FALSE`,
    );
  }
  if (filter.policyTier !== null) conditions.push(sql`m.policy_tier = ${values.policyTier}`);
  if (filter.scope !== null) conditions.push(sql`m.scope = ${values.scope}::"MetricScope"`);
  if (filter.metricType !== null) conditions.push(sql`m.metric_type = ${values.metricType}`);
  if (filter.domainId !== null) conditions.push(sql`m.domain_id = ${values.domainId}::uuid`);
  if (filter.ownerTeam !== null) conditions.push(sql`m.owner_team = ${values.ownerTeam}`);
  if (filter.trust !== null) {
    // The verdict as last announced (src/changes/trust-transitions.ts: every write, and the sweep for what
    // time moves), not one computed per row: a look-up by the state's primary key per metric of the page
    // (test/db/trust-filter-plans.test.ts), and a total counted once per metrics_version, which every
    // announced verdict moves. The verdict is written into the text, as the statuses are (one of three
    // values, never the client's text), so that a generic plan knows how common it is.
    conditions.push(
      sql`EXISTS (SELECT 1 FROM metric_trust_state ts WHERE ts.verdict = ${sql.lit(filter.trust)} AND ts.metric_id = m.id)`,
    );
  }
  return conditions;
}

/** The filter and the organization as one condition over `m`. */
export function orgFilter(orgId: unknown, filter: EffectiveFilter, values: EffectiveFilter = filter) {
  return sql<boolean>`${sql.join([sql`m.org_id = ${orgId}::uuid`, ...filterConditions(filter, values)], sql` AND `)}`;
}

/** What of the filter changes a statement's text: which filters are present, the lifecycle statuses and the verdict. */
export function filterKey(filter: EffectiveFilter): string {
  const lifecycle = filter.lifecycle === null ? '-' : `l(${filter.lifecycle.join()})`;
  const trust = filter.trust === null ? '-' : `v(${filter.trust})`;
  return `${lifecycle}${filter.policyTier === null ? '-' : 'p'}${filter.scope === null ? '-' : 's'}${filter.metricType === null ? '-' : 't'}${trust}${filter.domainId === null ? '-' : 'd'}${filter.ownerTeam === null ? '-' : 'o'}`;
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
