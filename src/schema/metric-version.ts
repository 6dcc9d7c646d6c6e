import { builder } from '../builder.js';

export const MetricVersionRef = builder.prismaObject('MetricVersion', {
  description: 'A released or proposed definition of a metric.',
  fields: (t) => ({
    id: t.exposeID('id'),
    definitionVersion: t.exposeString('definitionVersion'),
    status: t.exposeString('status', { description: 'draft, approved, released or superseded' }),
    releasedAt: t.expose('releasedAt', { type: 'DateTime', nullable: true }),
    changeSummary: t.exposeString('changeSummary'),
  }),
});
