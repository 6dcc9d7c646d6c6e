/**
 * Listing and searching the metrics of one organization (contract 4.1 and
 * the ordering rules of the service interface).
 *
 * Plain listing: `name` ascending (code-point order, the column is
 * COLLATE "C"), then `id`. Search: relevance, then `name`, then `id`.
 * Relevance puts an exact name match first, then a name prefix, then the
 * full-text rank (name and key weigh more than concept and tags, which weigh
 * more than the description) plus trigram word similarity, which is what
 * lets a typo such as "revnue" still find "Net Revenue".
 */
import { Prisma, type PrismaClient } from '../generated/prisma/client.js';
import type { LifecycleStatus, MetricScope } from '../generated/prisma/enums.js';
import { isLegacyStatus, LEGACY_STATUS_MATCHES, LIFECYCLE_STATUSES } from './lifecycle.js';

export const METRIC_SCOPES = ['enterprise_canonical', 'domain_canonical', 'exploratory'] as const;

/** Filters as consumers send them; see {@link effectiveFilter} for their meaning. */
export interface MetricFilterInput {
  lifecycleStatus?: string | null;
  status?: string | null;
  policyTier?: string | null;
  scope?: string | null;
  type?: string | null;
}

interface EffectiveFilter {
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

export interface SearchPage {
  /** ids of the page, in relevance order */
  ids: string[];
  total: number;
}

function filterSql(filter: EffectiveFilter): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  if (filter.lifecycle) {
    parts.push(
      filter.lifecycle.length
        ? Prisma.sql`AND m.lifecycle_status::text = ANY(${filter.lifecycle}::text[])`
        : Prisma.sql`AND FALSE`,
    );
  }
  if (filter.policyTier !== null) parts.push(Prisma.sql`AND m.policy_tier = ${filter.policyTier}`);
  if (filter.scope !== null) parts.push(Prisma.sql`AND m.scope::text = ${filter.scope}`);
  if (filter.metricType !== null) parts.push(Prisma.sql`AND m.metric_type = ${filter.metricType}`);
  return parts.length ? Prisma.join(parts, ' ') : Prisma.empty;
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * One statement: the ids of one page of search results with the total of all
 * matches (a window count). Only a page past the end needs a second, counting
 * statement.
 */
export async function searchMetricIds(
  prisma: PrismaClient,
  orgId: string,
  query: string,
  filter: EffectiveFilter,
  page: { skip: number; take: number },
): Promise<SearchPage> {
  const text = query.trim().toLowerCase();
  const contains = `%${escapeLike(text)}%`;
  const prefix = `${escapeLike(text)}%`;
  const matches = Prisma.sql`
    FROM metric m, websearch_to_tsquery('english', ${text}) AS tsq
    WHERE m.org_id = ${orgId}::uuid ${filterSql(filter)}
      AND (m.search_vector @@ tsq OR ${text} <% m.search_text OR m.search_text LIKE ${contains})`;
  const rows = await prisma.$queryRaw<{ id: string; total: number }[]>`
    SELECT m.id::text AS id, count(*) OVER ()::int AS total
    ${matches}
    ORDER BY (CASE WHEN lower(m.name) = ${text} THEN 2 WHEN lower(m.name) LIKE ${prefix} THEN 1 ELSE 0 END) DESC,
             ts_rank(m.search_vector, tsq) + word_similarity(${text}, m.search_text) DESC,
             m.name, m.id
    OFFSET ${page.skip} LIMIT ${page.take}`;
  if (rows.length > 0) return { ids: rows.map((row) => row.id), total: rows[0]?.total ?? 0 };
  if (page.skip === 0) return { ids: [], total: 0 };
  const [count] = await prisma.$queryRaw<{ total: number }[]>`SELECT count(*)::int AS total ${matches}`;
  return { ids: [], total: count?.total ?? 0 };
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
