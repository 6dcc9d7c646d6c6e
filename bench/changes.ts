/**
 * The change-feed scenario: with three instances of the service over one
 * database, the time from an apply's answer (its commit is just before it)
 * to the answer of a long-poll waiting on another instance, over `rounds`
 * applies (p50, p99); and the detail route's throughput on one instance with
 * 200 long-polls open on it, against its throughput without them. The
 * events written per second by a large apply come from the apply scenario.
 */
import { createApiKey } from '../src/admin/api-keys.js';
import { createOrganization } from '../src/admin/organization.js';
import { createServiceToken } from '../src/admin/service-tokens.js';
import { openDatabase } from '../src/db/client.js';
import { type LoadResult, type RouteRequest, runLoad } from './load.js';
import type { Started } from './processes.js';

export interface ChangesScenario {
  instances: number;
  longPollLatencyMs: { p50: number; p99: number; max: number; samples: number };
  detail: { alone: LoadResult; besideLongPolls: LoadResult; longPolls: number; ratio: number };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;

async function feedOrganization(databaseUrl: string): Promise<{ slug: string; token: string; key: string }> {
  const database = await openDatabase({ kind: 'postgres', url: databaseUrl }, { poolSize: 1 });
  try {
    const slug = 'bench-feed';
    await createOrganization(database.prisma, { slug, name: slug });
    const token = await createServiceToken(database.prisma, { org: slug, name: 'bench', scopes: ['registry:write'] });
    const key = await createApiKey(database.prisma, { org: slug, name: 'bench', rateLimitPerMinute: 1_000_000_000 });
    return { slug, token: token.secret, key: key.secret };
  } finally {
    await database.close();
  }
}

function feedDocument(slug: string, revision: number): string {
  return JSON.stringify({
    organization: slug,
    defaults: { project: 'Bench', owner_team: 'Bench' },
    metrics: [{ key: 'watched', name: 'Watched', description: `Revision ${revision}.`, sql_expression: 'SUM(x)' }],
  });
}

async function changes(base: string, key: string, query: string) {
  const response = await fetch(`${base}/api/v1/changes${query}`, { headers: { authorization: `Bearer ${key}` } });
  if (response.status !== 200) throw new Error(`changes answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as { data: unknown[]; next_cursor: string };
}

export async function runChangesScenario(
  instances: Started[],
  databaseUrl: string,
  options: {
    rounds: number;
    apiKey: string;
    detail: RouteRequest;
    connections: number;
    duration: number;
    log: (line: string) => void;
  },
): Promise<ChangesScenario> {
  const { log } = options;
  const feed = await feedOrganization(databaseUrl);
  const apply = async (via: Started, revision: number) => {
    const response = await fetch(`${via.base}/api/registry`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${feed.token}`, 'content-type': 'application/json' },
      body: feedDocument(feed.slug, revision),
    });
    if (response.status !== 200) throw new Error(`apply answered ${response.status}: ${await response.text()}`);
    await response.arrayBuffer();
  };
  await apply(instances[0] as Started, 0);
  let cursor = (await changes(instances[0]?.base ?? '', feed.key, '?limit=500')).next_cursor;

  const latencies: number[] = [];
  for (let round = 1; round <= options.rounds; round++) {
    const writer = instances[round % instances.length] as Started;
    const reader = instances[(round + 1) % instances.length] as Started;
    let answered = 0;
    const poll = changes(reader.base, feed.key, `?after=${cursor}&wait=30`).then((page) => {
      answered = performance.now();
      return page;
    });
    // The poll is waiting before the apply starts.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await apply(writer, round);
    const committed = performance.now();
    const page = await poll;
    if (!page.data.length) throw new Error('the long-poll answered without the event');
    latencies.push(Math.max(0, answered - committed));
    cursor = page.next_cursor;
  }
  latencies.sort((a, b) => a - b);
  const longPollLatencyMs = {
    p50: Number(percentile(latencies, 50).toFixed(1)),
    p99: Number(percentile(latencies, 99).toFixed(1)),
    max: Number((latencies.at(-1) ?? 0).toFixed(1)),
    samples: latencies.length,
  };
  log(
    `changes: apply answered → long-poll on another instance answered: p50 ${longPollLatencyMs.p50} ms, p99 ${longPollLatencyMs.p99} ms (${latencies.length} applies, ${instances.length} instances)`,
  );

  // Detail on one instance alone, then with 200 long-polls open on it (each re-polls when it answers).
  const target = instances[0] as Started;
  const load = () => runLoad(target.base, options.detail, options.apiKey, options);
  const alone = await load();
  const longPolls = 200;
  let open = true;
  const latest = (await changes(target.base, feed.key, '?limit=500')).next_cursor;
  const waiting = Array.from({ length: longPolls }, async () => {
    while (open) await changes(target.base, feed.key, `?after=${latest}&wait=30`);
  });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const besideLongPolls = await load();
  open = false;
  // The open polls answer when their wait runs out; an apply wakes them now.
  await apply(instances[1] as Started, options.rounds + 1);
  await Promise.all(waiting);
  const ratio = besideLongPolls.rps / alone.rps;
  log(
    `changes: detail ${alone.rps.toFixed(0)} rps alone, ${besideLongPolls.rps.toFixed(0)} rps beside ${longPolls} open long-polls (${ratio.toFixed(2)}x)`,
  );
  return {
    instances: instances.length,
    longPollLatencyMs,
    detail: { alone, besideLongPolls, longPolls, ratio: Number(ratio.toFixed(3)) },
  };
}
