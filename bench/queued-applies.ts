/**
 * The queued-applies scenario: another organization's read latency alone,
 * then while rounds of 10 concurrent applies of one organization (one CI
 * token, `n` metrics each, every metric changed) run beside it. The applies
 * queue (src/registry/write-queue.ts): each answers 200 or 409 with
 * Retry-After, never a 5xx, and their waiting holds no pooled connection, so
 * the reads keep their latency (the goal: within 2x of alone).
 *
 * The reads run on a few connections: their latency is the service's, not
 * that of a queue in front of it.
 */
import { type ApplyScenarioOptions, organizationWithToken } from './apply.js';
import { benchRegistryDocument } from './apply-doc.js';
import { type LoadResult, runLoad } from './load.js';
import type { Started } from './processes.js';

export interface QueuedAppliesScenario {
  metrics: number;
  concurrent: number;
  alone: LoadResult;
  during: LoadResult;
  /** rounds of concurrent applies that ran while the reads did */
  rounds: number;
  /** the applies' answers by status */
  statuses: Record<string, number>;
  p50Ratio: number;
  p99Ratio: number;
}

const CONCURRENT = 10;
const READ_CONNECTIONS = 4;

export async function runQueuedAppliesScenario(
  service: Started,
  databaseUrl: string,
  options: ApplyScenarioOptions,
): Promise<QueuedAppliesScenario> {
  const { metrics: n, log } = options;
  const slug = 'bench-queue';
  const token = await organizationWithToken(databaseUrl, slug);
  const statuses: Record<string, number> = {};
  /** An apply's status; a 409 without Retry-After is counted apart, as the mistake it would be. */
  const apply = async (revision: number): Promise<string> => {
    const response = await fetch(`${service.base}/api/registry`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(benchRegistryDocument(slug, n, { changed: n, revision })),
    });
    await response.arrayBuffer();
    return response.status === 409 && !response.headers.has('retry-after')
      ? '409 without Retry-After'
      : String(response.status);
  };
  const first = await apply(0);
  if (first !== '200') throw new Error(`the first apply answered ${first}`);

  const load = () =>
    runLoad(service.base, options.detail, options.apiKey, { ...options, connections: READ_CONNECTIONS });
  const alone = await load();
  let running = true;
  let rounds = 0;
  const applying = (async () => {
    for (let round = 1; running; round++) {
      const answers = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) => apply(round * CONCURRENT + i)));
      for (const status of answers) statuses[status] = (statuses[status] ?? 0) + 1;
      rounds++;
    }
  })();
  const during = await load();
  running = false;
  await applying;
  const p50Ratio = during.p50 / Math.max(alone.p50, 1);
  const p99Ratio = during.p99 / Math.max(alone.p99, 1);
  log(
    `queued applies: another organization's reads p50 ${alone.p50} ms / p99 ${alone.p99} ms alone, ` +
      `${during.p50} / ${during.p99} ms beside ${rounds} rounds of ${CONCURRENT} applies of ${n} changes ` +
      `(${p50Ratio.toFixed(2)}x, ${p99Ratio.toFixed(2)}x); applies answered ${JSON.stringify(statuses)}`,
  );
  return { metrics: n, concurrent: CONCURRENT, alone, during, rounds, statuses, p50Ratio, p99Ratio };
}
