/**
 * The apply scenario: registry documents sent to a running service over HTTP
 * (PUT /api/registry with a service token), as CI sends them. Measures a
 * first apply of `n` metrics, a no-op apply, an apply that changes 100
 * metrics, an import of a dbt semantic manifest of `n` metrics, and the detail
 * route's throughput while applies of `n` changes run beside it, against its
 * throughput without.
 *
 * Statements are counted by the service itself (it runs with SERVER_TIMING=1,
 * whose Server-Timing header says how many a request sent).
 */
import { createOrganization } from '../src/admin/organization.js';
import { createServiceToken } from '../src/admin/service-tokens.js';
import { openDatabase } from '../src/db/client.js';
import { benchRegistryDocument } from './apply-doc.js';
import { syntheticDbtManifest } from './dbt-manifest.js';
import { type LoadResult, type RouteRequest, runLoad } from './load.js';
import { memoryMb, type Started, withPeakRss } from './processes.js';

export interface ApplyStep {
  seconds: number;
  statements: number | null;
  peakRssMb: number;
  totals: Record<string, number>;
}

export interface ApplyScenario {
  metrics: number;
  first: ApplyStep;
  /** change-feed events the first apply recorded, and how many a second of the apply that makes */
  firstEvents: { events: number; perSecond: number };
  noop: ApplyStep;
  changed100: ApplyStep;
  dbtImport: ApplyStep;
  detail: { alone: LoadResult; duringApply: LoadResult; appliesDuring: number; ratio: number };
}

/** A new organization and a service token of it that writes its registry. */
export async function organizationWithToken(databaseUrl: string, slug: string): Promise<string> {
  const database = await openDatabase({ kind: 'postgres', url: databaseUrl }, { poolSize: 1 });
  try {
    await createOrganization(database.prisma, { slug, name: slug });
    const token = await createServiceToken(database.prisma, { org: slug, name: 'bench', scopes: ['registry:write'] });
    return token.secret;
  } finally {
    await database.close();
  }
}

async function eventsOf(databaseUrl: string, slug: string): Promise<number> {
  const database = await openDatabase({ kind: 'postgres', url: databaseUrl }, { poolSize: 1 });
  try {
    return await database.prisma.changeEvent.count({ where: { organization: { slug } } });
  } finally {
    await database.close();
  }
}

/** One PUT /api/registry of `body`, timed, with its statements (Server-Timing) and the service's peak RSS. */
export async function put(service: Started, token: string, body: string, query = ''): Promise<ApplyStep> {
  const started = performance.now();
  const { result, peakMb } = await withPeakRss(service.pid, async () => {
    const response = await fetch(`${service.base}/api/registry${query}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`apply answered ${response.status}: ${text.slice(0, 500)}`);
    const statements = /desc="(\d+) queries"/.exec(response.headers.get('server-timing') ?? '')?.[1];
    const { data } = JSON.parse(text) as { data: { totals: Record<string, number> } };
    return { statements: statements === undefined ? null : Number(statements), totals: data.totals };
  });
  return { seconds: (performance.now() - started) / 1000, peakRssMb: peakMb, ...result };
}

/** What a scenario of applies beside reads is given: applies of `metrics` metrics, reads of `detail` with `apiKey`. */
export interface ApplyScenarioOptions {
  metrics: number;
  apiKey: string;
  detail: RouteRequest;
  connections: number;
  duration: number;
  log: (line: string) => void;
}

export async function runApplyScenario(
  service: Started,
  databaseUrl: string,
  options: ApplyScenarioOptions,
): Promise<ApplyScenario> {
  const { metrics: n, log } = options;
  const token = await organizationWithToken(databaseUrl, 'bench-apply');
  const document = (changed = 0, revision = 0) =>
    JSON.stringify(benchRegistryDocument('bench-apply', n, { changed, revision }));

  const first = await put(service, token, document());
  log(
    `apply: first of ${n} in ${first.seconds.toFixed(1)} s, ${first.statements} statements, peak RSS ${first.peakRssMb} MB`,
  );
  const events = await eventsOf(databaseUrl, 'bench-apply');
  const firstEvents = { events, perSecond: Math.round(events / first.seconds) };
  log(`apply: the first recorded ${events} change-feed events (${firstEvents.perSecond} a second of the apply)`);
  const noop = await put(service, token, document());
  log(`apply: no-op in ${noop.seconds.toFixed(2)} s, ${noop.statements} statements`);
  const changed100 = await put(service, token, document(100, 1));
  log(`apply: 100 changed in ${changed100.seconds.toFixed(2)} s, ${changed100.statements} statements`);

  const dbtToken = await organizationWithToken(databaseUrl, 'bench-dbt');
  const dbtImport = await put(service, dbtToken, JSON.stringify(syntheticDbtManifest(n)), '?format=dbt');
  log(`apply: dbt manifest of ${n} imported in ${dbtImport.seconds.toFixed(1)} s, ${dbtImport.statements} statements`);

  // Detail alone, then detail with applies that each change every metric running back to back beside it.
  const load = () => runLoad(service.base, options.detail, options.apiKey, options);
  const alone = await load();
  let running = true;
  let appliesDuring = 0;
  const applies = (async () => {
    for (let revision = 2; running; revision++) {
      await put(service, token, document(n, revision));
      appliesDuring++;
    }
  })();
  const duringApply = await load();
  running = false;
  await applies;
  const ratio = duringApply.rps / alone.rps;
  log(
    `apply: detail ${alone.rps.toFixed(0)} rps alone, ${duringApply.rps.toFixed(0)} rps beside ${appliesDuring} applies of ${n} changes (${ratio.toFixed(2)}x); RSS now ${memoryMb(service.pid).rss.toFixed(0)} MB`,
  );
  return {
    metrics: n,
    first,
    firstEvents,
    noop,
    changed100,
    dbtImport,
    detail: { alone, duringApply, appliesDuring, ratio },
  };
}
