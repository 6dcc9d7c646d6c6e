import { builder } from '../builder.js';
import type { RelationshipRow } from '../metric/parts.js';

/** Over the rows the relations part reads; `target` is added beside the Metric type (src/schema/metric.ts). */
export const MetricRelationshipRef = builder.objectRef<RelationshipRow>('MetricRelationship').implement({
  description: 'A registry relationship from this metric to another of the same organization.',
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'variant_of, supersedes, related_to or conflicts_with' }),
    targetMetricId: t.exposeID('targetMetricId'),
  }),
});
