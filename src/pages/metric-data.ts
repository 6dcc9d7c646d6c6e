/**
 * What a metric's page is made of (read by src/http/pages/metric-reads.ts)
 * and the paths of the metric's pages.
 */
import type { CloudEvent } from '../changes/event.js';
import type { ThreadRow } from '../discussions/read.js';
import type { ValidationTimeline } from '../metric/validation-timeline.js';
import type { MetricContractQuery, MetricDetailQuery, MetricLineageQuery } from '../rest/operations.generated.js';
import { orgPath, type Viewer } from './layout.js';

export type MetricDetail = NonNullable<MetricDetailQuery['metric']>;
export type MetricContract = NonNullable<MetricContractQuery['metric']>;
export type LineageNode = NonNullable<MetricLineageQuery['metric']>['lineage']['nodes'][number];

export interface MetricPageData {
  detail: MetricDetail;
  contract: MetricContract;
  /** direct dependents (the first ones by id) and how many there are */
  dependents: { nodes: LineageNode[]; total: number };
  /** the newest threads and how many there are */
  threads: { items: ThreadRow[]; total: number };
  validations: ValidationTimeline;
  /** the metric's newest change events, newest first */
  history: CloudEvent[];
}

/** `/{org}/metrics/{id}` and the paths under it. */
export const metricPath = (viewer: Pick<Viewer, 'org'>, id: string, ...rest: string[]) =>
  orgPath(viewer, 'metrics', id, ...rest);
