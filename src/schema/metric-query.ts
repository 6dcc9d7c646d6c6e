/** Root fields that read metrics: one by id, offset pages (REST), Relay connections (dashboards). */
import { builder } from '../builder.js';
import type { Context } from '../context.js';
import {
  effectiveFilter,
  LIST_ORDER,
  type MetricFilterInput,
  metricWhere,
  type SearchPage,
  searchMetricIds,
} from '../metric/list.js';
import { isUuid } from '../uuid.js';

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

const MetricFilter = builder.inputType('MetricFilter', {
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
  }),
});

interface PageSource {
  orgId: string;
  page: number;
  pageSize: number;
  filter: ReturnType<typeof effectiveFilter>;
  search: string | null;
  /** the search hits of this page, computed once for items and pagination */
  searchPage?: Promise<SearchPage>;
}

function searchPageOf(source: PageSource, ctx: Context): Promise<SearchPage> {
  source.searchPage ??= searchMetricIds(ctx.prisma, source.orgId, source.search ?? '', source.filter, {
    skip: (source.page - 1) * source.pageSize,
    take: source.pageSize,
  });
  return source.searchPage;
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
    items: t.prismaField({
      type: ['Metric'],
      resolve: async (query, source, _args, ctx) => {
        const where = metricWhere(source.orgId, source.filter);
        if (source.search === null) {
          return ctx.prisma.metric.findMany({
            ...query,
            where,
            orderBy: LIST_ORDER,
            skip: (source.page - 1) * source.pageSize,
            take: source.pageSize,
          });
        }
        const { ids } = await searchPageOf(source, ctx);
        if (!ids.length) return [];
        const rows = await ctx.prisma.metric.findMany({ ...query, where: { ...where, id: { in: ids } } });
        const rank = new Map(ids.map((id, index) => [id, index]));
        return rows.sort((a, b) => (rank.get(a.id) ?? 0) - (rank.get(b.id) ?? 0));
      },
    }),
    pagination: t.field({
      type: PaginationRef,
      resolve: async (source, _args, ctx) => {
        const total =
          source.search === null
            ? await ctx.prisma.metric.count({ where: metricWhere(source.orgId, source.filter) })
            : (await searchPageOf(source, ctx)).total;
        return { page: source.page, pageSize: source.pageSize, total };
      },
    }),
  }),
});

builder.queryFields((t) => ({
  metric: t.prismaField({
    type: 'Metric',
    nullable: true,
    description: "A metric of the caller's organization; null when there is none with this id.",
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, { id }, ctx) =>
      isUuid(String(id))
        ? ctx.prisma.metric.findFirst({ ...query, where: { id: String(id), orgId: ctx.principal.org.id } })
        : null,
  }),
  metrics: t.field({
    type: MetricPageRef,
    description: `Offset pages. pageSize defaults to ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}. A non-blank search orders by relevance.`,
    args: {
      page: t.arg.int({ defaultValue: 1 }),
      pageSize: t.arg.int({ defaultValue: DEFAULT_PAGE_SIZE }),
      filter: t.arg({ type: MetricFilter }),
      search: t.arg.string(),
    },
    resolve: (_root, args, ctx) => ({
      orgId: ctx.principal.org.id,
      page: Math.max(1, args.page ?? 1),
      pageSize: Math.min(MAX_PAGE_SIZE, Math.max(1, args.pageSize ?? DEFAULT_PAGE_SIZE)),
      filter: effectiveFilter((args.filter ?? {}) as MetricFilterInput),
      search: args.search?.trim() ? args.search : null,
    }),
  }),
  metricsConnection: t.prismaConnection({
    type: 'Metric',
    cursor: 'id',
    defaultSize: DEFAULT_PAGE_SIZE,
    maxSize: MAX_PAGE_SIZE,
    description: 'Metrics by name as a Relay connection, for dashboards that scroll deep.',
    args: { filter: t.arg({ type: MetricFilter }) },
    resolve: (query, _root, args, ctx) =>
      ctx.prisma.metric.findMany({
        ...query,
        where: metricWhere(ctx.principal.org.id, effectiveFilter((args.filter ?? {}) as MetricFilterInput)),
        orderBy: LIST_ORDER,
      }),
  }),
}));
