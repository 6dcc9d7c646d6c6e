/**
 * A metric's lineage (docs/lineage.md): `Metric.inputs` and
 * `Metric.dependentsCount`, parts of the metric's own read
 * (src/metric/lineage-parts.ts); `Metric.dependents`, a Relay connection
 * whose pages of every metric of a list are one statement
 * (src/metric/dependents.ts); `Metric.lineage`, the walk to a depth
 * (src/metric/lineage.ts), on a single metric only.
 *
 * The verdicts of other metrics they show are the announced ones
 * (metric_trust_state), shown as the contract shows verdicts: to a key that
 * may read the contract; null to any other.
 */
import { resolveCursorConnection } from '@pothos/plugin-relay';
import { GraphQLError } from 'graphql';
import { builder } from '../builder.js';
import type { Context } from '../context.js';
import { type ErrorResponse, HttpError } from '../errors.js';
import type { SelectedMetric } from '../metric/columns.js';
import {
  DEFAULT_LINEAGE_DEPTH,
  DEFAULT_LINEAGE_LIMIT,
  encodeLineageCursor,
  LINEAGE_DIRECTIONS,
  type LineageDirection,
  type LineageEdge,
  type LineageNode,
  lineageRequest,
  MAX_LINEAGE_DEPTH,
  MAX_LINEAGE_LIMIT,
  MAX_LINEAGE_STEPS,
  readLineage,
} from '../metric/lineage.js';
import { type InputMetricRow, MAX_SERVED_INPUTS } from '../metric/lineage-parts.js';
import type { TrustVerdictValue } from '../metric/trust.js';
import { LifecycleStatusEnum } from './enums.js';
import { insideList, MetricRef } from './metric.js';
import { cursorMetricId, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, metricCursor } from './metric-query.js';
import { planMetricRead } from './metric-selection.js';
import { TrustVerdictEnum } from './trust.js';

const VERDICT_NOTE =
  'The announced verdict (as the change feed last reported it); null while the metric has not been evaluated ' +
  'yet, and for a key that may not read the contract (definition:read alone).';

/** A verdict as the caller may see it: verdicts are the contract's, like `Metric.trust`. */
const shownVerdict = (verdict: TrustVerdictValue | null, ctx: Context) => (ctx.contractFields ? verdict : null);

const LineageDirectionEnum = builder.enumType('LineageDirection', {
  description: 'upstream: the metrics a metric is built from (its inputs, theirs...); downstream: those built on it.',
  values: LINEAGE_DIRECTIONS,
});

const InputMetricRef = builder.objectRef<InputMetricRow>('InputMetric').implement({
  description: 'A metric another one is built from (one of its inputs).',
  fields: (t) => ({
    id: t.exposeID('id'),
    key: t.exposeString('key'),
    name: t.exposeString('name'),
    lifecycleStatus: t.expose('lifecycleStatus', { type: LifecycleStatusEnum }),
    position: t.exposeInt('position', { description: "The input's place in the metric's list of inputs, from 0." }),
    verdict: t.field({
      type: TrustVerdictEnum,
      nullable: true,
      description: VERDICT_NOTE,
      resolve: (input, _args, ctx) => shownVerdict(input.verdict, ctx),
    }),
  }),
});

const LineageEdgeRef = builder.objectRef<LineageEdge>('LineageEdge').implement({
  description: 'An edge of the lineage: metricId has inputMetricId as its input at position.',
  fields: (t) => ({
    metricId: t.exposeID('metricId'),
    inputMetricId: t.exposeID('inputMetricId'),
    position: t.exposeInt('position'),
  }),
});

const LineageNodeRef = builder.objectRef<LineageNode>('LineageNode').implement({
  description: 'A metric of a lineage, at the least depth it is found, with the edge it was reached by there.',
  fields: (t) => ({
    id: t.exposeID('id'),
    key: t.exposeString('key'),
    name: t.exposeString('name'),
    lifecycleStatus: t.expose('lifecycleStatus', { type: LifecycleStatusEnum }),
    verdict: t.field({
      type: TrustVerdictEnum,
      nullable: true,
      description: VERDICT_NOTE,
      resolve: (node, _args, ctx) => shownVerdict(node.verdict, ctx),
    }),
    depth: t.exposeInt('depth', {
      description: 'Edges from the metric walked from: 1 for a direct input or dependent.',
    }),
    via: t.expose('via', {
      type: LineageEdgeRef,
      description: 'The edge the node was reached by (of several at that depth, the one from the smallest id).',
    }),
  }),
});

interface LineageResult {
  direction: LineageDirection;
  depth: number;
  nodes: LineageNode[];
  total: number;
  truncated: boolean;
  nextCursor: string | null;
}

const MetricLineageRef = builder.objectRef<LineageResult>('MetricLineage').implement({
  description: `A page of a metric's lineage, by depth, then id. The walk follows at most ${MAX_LINEAGE_STEPS} edges.`,
  fields: (t) => ({
    direction: t.expose('direction', { type: LineageDirectionEnum }),
    depth: t.exposeInt('depth', { description: 'The depth walked to.' }),
    nodes: t.expose('nodes', { type: [LineageNodeRef] }),
    total: t.exposeInt('total', { description: 'Metrics found within the depth (at least that many when truncated).' }),
    truncated: t.exposeBoolean('truncated', {
      description: `The walk stopped after ${MAX_LINEAGE_STEPS} edges: metrics further away may be missing.`,
    }),
    nextCursor: t.exposeString('nextCursor', {
      nullable: true,
      description: '`after` of the next page; null on the last one.',
    }),
  }),
});

/** A GraphQL error of the caller's input, with the message REST answers in its 400. */
const badInput = (response: ErrorResponse) =>
  new GraphQLError(new HttpError(response).message, { extensions: { code: 'BAD_USER_INPUT' } });

builder.objectFields(MetricRef, (t) => ({
  inputs: t.field({
    type: [InputMetricRef],
    nullable: true,
    description:
      `The metrics this one is built from, in their order (at most ${MAX_SERVED_INPUTS}). ` +
      'null means the read failed, not "none".',
    resolve: (metric, _args, ctx) => ctx.loaders.inputs.load(metric.id),
  }),
  dependentsCount: t.int({
    nullable: true,
    description: 'How many metrics have this one as an input (direct dependents). null means the read failed.',
    resolve: (metric, _args, ctx) => ctx.loaders.dependentsCount.load(metric.id),
  }),
  dependents: t.connection({
    type: MetricRef,
    description:
      `The metrics that have this one as an input (direct dependents), by id; first defaults to ${DEFAULT_PAGE_SIZE}, ` +
      `at most ${MAX_PAGE_SIZE}. The pages of every metric of a list are read together.`,
    resolve: (metric, args, ctx, info) => {
      const { fields } = planMetricRead(info, ['edges', 'node']);
      return resolveCursorConnection<Promise<SelectedMetric[]>>(
        { args, defaultSize: DEFAULT_PAGE_SIZE, maxSize: MAX_PAGE_SIZE, toCursor: metricCursor },
        async ({ after, before, limit, inverted }) => {
          const ids = await ctx.loaders
            .dependents({ after: cursorMetricId(after), before: cursorMetricId(before), limit, inverted })
            .load(metric.id);
          const found = await ctx.loaders.metrics(fields).loadMany(ids);
          return found.filter((row): row is SelectedMetric => {
            if (row instanceof Error) throw row;
            return row !== null;
          });
        },
      );
    },
  }),
  lineage: t.field({
    type: MetricLineageRef,
    description:
      `The metrics this one is built from (upstream) or that are built on it (downstream), to \`depth\` ` +
      `(default ${DEFAULT_LINEAGE_DEPTH}, at most ${MAX_LINEAGE_DEPTH}), a page of \`first\` nodes (default ` +
      `${DEFAULT_LINEAGE_LIMIT}, at most ${MAX_LINEAGE_LIMIT}) after the cursor \`after\`. Only on a single metric ` +
      '(metric, metricByKey, metricByName): on a list it would walk once per metric. Each lineage costs one unit ' +
      'of the rate limit.',
    args: {
      direction: t.arg({ type: LineageDirectionEnum, defaultValue: 'upstream' }),
      depth: t.arg.int({ defaultValue: DEFAULT_LINEAGE_DEPTH }),
      first: t.arg.int({ defaultValue: DEFAULT_LINEAGE_LIMIT }),
      after: t.arg.string(),
    },
    resolve: async (metric, args, ctx, info) => {
      if (insideList(info.path)) {
        throw new GraphQLError('lineage is only available on a single metric (metric, metricByKey, metricByName)', {
          extensions: { code: 'BAD_USER_INPUT' },
        });
      }
      const checked = lineageRequest(
        { direction: args.direction, depth: args.depth, limit: args.first, after: args.after },
        { limit: 'first', after: 'after' },
      );
      if ('error' in checked) throw badInput(checked.error);
      const { request } = checked;
      const page = await readLineage(ctx.sql, ctx.principal.org.id, metric.id, request);
      return {
        direction: request.direction,
        depth: request.depth,
        nodes: page.nodes,
        total: page.total,
        truncated: page.truncated,
        nextCursor: page.next ? encodeLineageCursor(page.next) : null,
      };
    },
  }),
}));
