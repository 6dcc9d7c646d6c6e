/** Root fields that read metrics: one by id, offset pages (REST), Relay connections (dashboards). */
import { decodeBase64, decodeCursorChunk, encodeBase64, encodeCursorChunk } from '@pothos/core';
import { resolveCursorConnection } from '@pothos/plugin-relay';
import { GraphQLError } from 'graphql';
import { builder } from '../builder.js';
import type { Context } from '../context.js';
import type { MetricFields, SelectedMetric } from '../metric/columns.js';
import { keysetMetricPage } from '../metric/connection-page.js';
import {
  checkFilterValues,
  checkSearchText,
  MAX_FILTER_CHARACTERS,
  MAX_SEARCH_CHARACTERS,
  MAX_SEARCH_WORDS,
} from '../metric/input.js';
import { effectiveFilter, type MetricFilterInput } from '../metric/list.js';
import type { MetricPage } from '../metric/list-page.js';
import {
  loadListPageWithParts,
  loadMetricWithParts,
  loadSearchPageWithParts,
  type PartName,
} from '../metric/loaders.js';
import { countFound } from '../metric/usage.js';
import { isUuid } from '../uuid.js';
import { CONTRACT_SCOPE_NOTE, requireContractScope } from './contract-scope.js';
import { MetricRef } from './metric.js';
import { planMetricRead } from './metric-selection.js';
import { SearchHintsRef } from './search-hints.js';
import { TrustVerdictEnum } from './trust.js';

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

const MetricFilter = builder.inputType('MetricFilter', {
  description: `Each value at most ${MAX_FILTER_CHARACTERS} characters; a longer one is an error.`,
  fields: (t) => ({
    lifecycleStatus: t.string({
      description: 'Canonical lifecycle value, passed through: a value that is no lifecycle status matches nothing.',
    }),
    status: t.string({
      description: 'Legacy status (draft, review, approved, deprecated); used only without lifecycleStatus.',
    }),
    policyTier: t.string(),
    scope: t.string({
      description: 'enterprise_canonical, domain_canonical or exploratory; other values are ignored.',
    }),
    type: t.string({ description: 'Metric type, for example base or derived.' }),
    trust: t.field({
      type: TrustVerdictEnum,
      description:
        'The trust verdict as last announced: every write that moves a verdict announces it in its transaction, ' +
        'and the trust sweep (every TRUST_SWEEP_INTERVAL_S, 60 s) those that time alone moves (stale validation ' +
        'evidence), so such a metric matches its new verdict from the next sweep. `Metric.trust` is computed ' +
        `when read. ${CONTRACT_SCOPE_NOTE}`,
    }),
  }),
});

/**
 * Bounded input, the rule REST applies too (src/metric/input.ts): past a bound the field is an
 * error naming the argument, never a truncated read.
 */
function checkListArgs(
  ctx: Context,
  search: string | null | undefined,
  filter: MetricFilterInput | null | undefined,
): void {
  // Filtering by verdict would tell a caller the verdicts it may not read.
  if (filter?.trust != null) requireContractScope(ctx);
  const invalid =
    checkSearchText('search', search) ??
    checkFilterValues(
      Object.fromEntries(Object.entries(filter ?? {}).map(([name, value]) => [`filter.${name}`, value])),
    );
  if (invalid) {
    const message = typeof invalid.body.error === 'string' ? invalid.body.error : invalid.body.error.message;
    throw new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });
  }
}

interface PageSource {
  orgId: string;
  page: number;
  pageSize: number;
  filter: ReturnType<typeof effectiveFilter>;
  search: string | null;
  /** the metric fields `items` selects (null: all) */
  fields: MetricFields;
  /** the parts `items` selects: read in the page's statement (a list page, or a search page ranked or kept) */
  parts: ReadonlySet<PartName>;
  /** read once, for items and pagination */
  rows?: Promise<MetricPage>;
}

function pageOf(source: PageSource, ctx: Context): Promise<MetricPage> {
  if (!source.rows) {
    const page = { skip: (source.page - 1) * source.pageSize, take: source.pageSize };
    const kept = { cache: ctx.reads, version: ctx.principal.org.metricsVersion };
    source.rows =
      source.search === null
        ? loadListPageWithParts(ctx.sql, ctx.loaders, source.orgId, source.filter, page, source, kept)
        : loadSearchPageWithParts(ctx.sql, ctx.loaders, source.orgId, source.search, source.filter, page, source, kept);
  }
  return source.rows;
}

/**
 * A metricsConnection cursor: the metric's id, encoded as the Pothos prisma plugin encoded it
 * (`GPC:` and a tagged string, base64) when the connection was read through it, so cursors that
 * clients hold from then stay valid.
 */
export const metricCursor = (metric: SelectedMetric) => encodeBase64(`GPC:${encodeCursorChunk(metric.id)}`);

export function cursorMetricId(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  let id: unknown;
  try {
    const decoded = decodeBase64(cursor);
    id = decoded.startsWith('GPC:') ? decodeCursorChunk(decoded.slice(4)) : undefined;
  } catch {
    id = undefined;
  }
  if (typeof id !== 'string' || !isUuid(id)) {
    throw new GraphQLError(`Invalid cursor: ${cursor}`, { extensions: { code: 'BAD_USER_INPUT' } });
  }
  return id;
}

const PaginationRef = builder.objectRef<{ page: number; pageSize: number; total: number }>('Pagination').implement({
  fields: (t) => ({
    page: t.exposeInt('page'),
    pageSize: t.exposeInt('pageSize'),
    total: t.exposeInt('total'),
    totalPages: t.int({ resolve: ({ total, pageSize }) => Math.ceil(total / pageSize) }),
  }),
});

const MetricPageRef = builder.objectRef<PageSource>('MetricPage').implement({
  description: 'One offset page of metrics: plain listing by name, or search results by relevance.',
  fields: (t) => ({
    items: t.field({
      type: [MetricRef],
      resolve: async (source, _args, ctx) => (await pageOf(source, ctx)).rows,
    }),
    pagination: t.field({
      type: PaginationRef,
      resolve: async (source, _args, ctx) => ({
        page: source.page,
        pageSize: source.pageSize,
        total: (await pageOf(source, ctx)).total,
      }),
    }),
    searchHints: t.field({
      type: SearchHintsRef,
      nullable: true,
      description:
        'For a search: the words it corrected and, when it found nothing, suggestions. Null on plain listing.',
      resolve: async (source, _args, ctx) =>
        source.search === null ? null : ((await pageOf(source, ctx)).hints ?? { corrected: [], didYouMean: [] }),
    }),
  }),
});

builder.queryFields((t) => ({
  metric: t.field({
    type: MetricRef,
    nullable: true,
    description: "A metric of the caller's organization; null when there is none with this id.",
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx, info) =>
      isUuid(String(id))
        ? countFound(
            ctx.usage,
            String(id),
            loadMetricWithParts(ctx.sql, ctx.loaders, ctx.principal.org.id, String(id), planMetricRead(info)),
          )
        : null,
  }),
  metrics: t.field({
    type: MetricPageRef,
    description: `Offset pages. pageSize defaults to ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}. A non-blank search orders by relevance; it is at most ${MAX_SEARCH_CHARACTERS} characters and ${MAX_SEARCH_WORDS} words (trimmed), a longer one is an error.`,
    args: {
      page: t.arg.int({ defaultValue: 1 }),
      pageSize: t.arg.int({ defaultValue: DEFAULT_PAGE_SIZE }),
      filter: t.arg({ type: MetricFilter }),
      search: t.arg.string(),
    },
    resolve: (_root, args, ctx, info) => {
      checkListArgs(ctx, args.search, args.filter as MetricFilterInput | null);
      return {
        orgId: ctx.principal.org.id,
        page: Math.max(1, args.page ?? 1),
        pageSize: Math.min(MAX_PAGE_SIZE, Math.max(1, args.pageSize ?? DEFAULT_PAGE_SIZE)),
        filter: effectiveFilter((args.filter ?? {}) as MetricFilterInput),
        search: args.search?.trim() ? args.search : null,
        ...planMetricRead(info, ['items']),
      };
    },
  }),
  metricsConnection: t.connection({
    type: MetricRef,
    description: 'Metrics by name as a Relay connection, for dashboards that scroll deep.',
    args: { filter: t.arg({ type: MetricFilter }) },
    resolve: (_root, args, ctx, info) => {
      checkListArgs(ctx, null, args.filter as MetricFilterInput | null);
      const filter = effectiveFilter((args.filter ?? {}) as MetricFilterInput);
      const { fields } = planMetricRead(info, ['edges', 'node']);
      return resolveCursorConnection<Promise<SelectedMetric[]>>(
        { args, defaultSize: DEFAULT_PAGE_SIZE, maxSize: MAX_PAGE_SIZE, toCursor: metricCursor },
        ({ after, before, limit, inverted }) =>
          keysetMetricPage(
            ctx.sql,
            ctx.principal.org.id,
            filter,
            { after: cursorMetricId(after), before: cursorMetricId(before), limit, inverted },
            fields,
          ),
      );
    },
  }),
}));
