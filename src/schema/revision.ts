/** `Metric.revision`: an opaque version of what the metric's detail and contract show. */
import { builder } from '../builder.js';
import { MetricRef } from './metric.js';

builder.objectField(MetricRef, 'revision', (t) =>
  t.string({
    nullable: true,
    description:
      "An opaque version of the metric's governed state: it changes whenever its detail or contract may " +
      '(the metric, its versions, approvals, validations, challenges, relationships and their targets, threads and ' +
      'messages). Equal revisions mean equal state; compare, never order them.',
    resolve: (metric, _args, ctx) => ctx.loaders.revision.load(metric.id),
  }),
);
