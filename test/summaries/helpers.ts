/** Reading `summary=true` contracts and the summary tables in the summary tests. */
import { expect } from 'vitest';
import type { Database } from '../../src/db/client.js';
import { expectOk } from '../rest/expectations.js';

interface Getter {
  get(
    url: string,
    key?: string | null,
    headers?: Record<string, string>,
  ): Promise<{ headers: Record<string, unknown>; json(): unknown; statusCode: number }>;
}

export interface SummaryResponse {
  data: Record<string, unknown> & {
    discussion_summary: string | null;
    discussion_summary_meta: { cache_hit: boolean; charged: boolean };
  };
  charged: string | undefined;
  reason: string | undefined;
}

/** GET the contract with `summary=true`; checks the header agrees with `charged`. */
export async function summaryOf(app: Getter, metricId: string, secret: string): Promise<SummaryResponse> {
  const res = await app.get(`/api/v1/metrics/${metricId}/contract?summary=true`, secret);
  const data = expectOk(res as never).data;
  const charged = res.headers['x-discussion-summary-charged'] as string | undefined;
  expect(['0', '1']).toContain(charged);
  expect(data.discussion_summary_meta.charged).toBe(charged === '1');
  return { data, charged, reason: res.headers['x-discussion-summary'] as string | undefined };
}

export function meta(response: SummaryResponse) {
  return response.data.discussion_summary_meta;
}

export async function rowCounts(database: Pick<Database, 'prisma'>, metricId: string) {
  const [summaries, meterEvents] = await Promise.all([
    database.prisma.discussionSummary.count({ where: { metricId } }),
    database.prisma.meterEvent.count({ where: { metricId } }),
  ]);
  return { summaries, meterEvents };
}
