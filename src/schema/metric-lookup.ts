/**
 * Root fields that find metrics by key, by name, or several by id (the MCP tools use them). A metric
 * found by key or name is a read of it (src/metric/usage.ts); several by id are not.
 */
import { GraphQLError } from 'graphql';
import { builder } from '../builder.js';
import { loadMetricWithParts } from '../metric/loaders.js';
import { findMetricIdByKey, findMetricIdByName } from '../metric/lookup.js';
import { countFound } from '../metric/usage.js';
import { isUuid } from '../uuid.js';
import { MetricRef } from './metric.js';
import { MAX_PAGE_SIZE } from './metric-query.js';
import { planMetricRead } from './metric-selection.js';

builder.queryFields((t) => ({
  metricByKey: t.field({
    type: MetricRef,
    nullable: true,
    description: "The caller's organization's metric with this key; null when there is none.",
    args: { key: t.arg.string({ required: true }) },
    resolve: async (_root, { key }, ctx, info) => {
      const id = await findMetricIdByKey(ctx.sql, ctx.principal.org.id, key);
      return id
        ? countFound(
            ctx.usage,
            id,
            loadMetricWithParts(ctx.sql, ctx.loaders, ctx.principal.org.id, id, planMetricRead(info)),
          )
        : null;
    },
  }),
  metricByName: t.field({
    type: MetricRef,
    nullable: true,
    description:
      "The caller's organization's metric whose name equals this one regardless of case (the first by name, " +
      'then id, when several do); null when there is none.',
    args: { name: t.arg.string({ required: true }) },
    resolve: async (_root, { name }, ctx, info) => {
      const id = await findMetricIdByName(ctx.sql, ctx.principal.org.id, name);
      return id
        ? countFound(
            ctx.usage,
            id,
            loadMetricWithParts(ctx.sql, ctx.loaders, ctx.principal.org.id, id, planMetricRead(info)),
          )
        : null;
    },
  }),
  metricsByIds: t.field({
    type: [MetricRef],
    nullable: { list: false, items: true },
    description: `Metrics of the caller's organization by id, in the order given (at most ${MAX_PAGE_SIZE}); null where there is none.`,
    args: { ids: t.arg.idList({ required: true }) },
    resolve: async (_root, { ids }, ctx, info) => {
      if (ids.length > MAX_PAGE_SIZE) throw new GraphQLError(`metricsByIds takes at most ${MAX_PAGE_SIZE} ids`);
      const loader = ctx.loaders.metrics(planMetricRead(info).fields);
      return Promise.all(ids.map((id) => (isUuid(String(id)) ? loader.load(String(id)) : null)));
    },
  }),
}));
