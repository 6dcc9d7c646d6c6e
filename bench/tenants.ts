/**
 * The tenants scenario (`--tenants N`, 1,000 unless said; `--tenants 0` leaves it out): N more
 * organizations of 100 metrics each (names, descriptions and columns as the bench organization's,
 * announced verdicts, no discussions or inputs), each with a key of its own, seeded into the bench
 * database after the main rounds. Then the detail and list routes are read by every organization's
 * key in turn (request k: organization k mod N, its metric k / N mod 100), on the service and on the
 * floor, alternating, as the main rounds are: the key lookups, the rate limits (a window per key in
 * Redis) and what the service keeps per organization (list totals, search pages, facets) are
 * exercised by N organizations at once, not by one.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { generateApiKey, hashSecret, keyPrefix } from '../src/auth/secrets.js';
import type { LoadResult, RouteRequest } from './load.js';
import { type Started, withPeakRss } from './processes.js';
import { ratios, summary, type TargetFigures } from './report.js';
import { announceVerdicts, insertMetrics } from './seed.js';

export const TENANT_METRICS = 100;

export interface Tenant {
  apiKey: string;
  metricIds: string[];
}

/** PostgreSQL's `md5(text)::uuid`, as the seed writes ids. */
function md5Uuid(text: string): string {
  const hex = createHash('md5').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Seeds `count` organizations of {@link TENANT_METRICS} metrics with a key each; their keys and metric ids. */
export async function seedTenants(databaseUrl: string, count: number): Promise<Tenant[]> {
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  try {
    const tenants = Array.from({ length: count }, (_, t) => ({
      seed: `tenant${t}`,
      orgId: md5Uuid(`tenant${t}-org`),
      apiKey: generateApiKey(),
    }));
    const orgIds = tenants.map((t) => t.orgId);
    await db.query(
      `INSERT INTO organization (id, name, slug, plan)
       SELECT id, 'Tenant ' || t, 'tenant-' || t, 'team' FROM unnest($1::uuid[]) WITH ORDINALITY AS o(id, t)`,
      [orgIds],
    );
    // The projects and domains insertMetrics refers to: md5('<seed>-project-<p>'), md5('<seed>-domain-<d>').
    await db.query(
      `INSERT INTO project (id, org_id, name)
       SELECT md5('tenant' || (t - 1) || '-project-' || p)::uuid, id, 'Project ' || p
       FROM unnest($1::uuid[]) WITH ORDINALITY AS o(id, t), generate_series(0, 4) p`,
      [orgIds],
    );
    await db.query(
      `INSERT INTO domain (id, org_id, name)
       SELECT md5('tenant' || (t - 1) || '-domain-' || d)::uuid, id, 'Domain ' || d
       FROM unnest($1::uuid[]) WITH ORDINALITY AS o(id, t), generate_series(0, 7) d`,
      [orgIds],
    );
    for (const tenant of tenants) await insertMetrics(db, tenant.seed, tenant.orgId, TENANT_METRICS);
    await db.query(
      `INSERT INTO api_key (id, org_id, name, key_hash, key_prefix, scopes, rate_limit_per_minute)
       SELECT gen_random_uuid(), org, 'tenant', hash, prefix, ARRAY['canonical-metric-api:read','definition:read'], 1000000000
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS k(org, hash, prefix)`,
      [orgIds, tenants.map((t) => hashSecret(t.apiKey)), tenants.map((t) => keyPrefix(t.apiKey))],
    );
    await db.query('ANALYZE');
    await announceVerdicts(databaseUrl, orgIds);
    return tenants.map((t) => ({
      apiKey: t.apiKey,
      metricIds: Array.from({ length: TENANT_METRICS }, (_, i) => md5Uuid(`${t.seed}-metric-${i + 1}`)),
    }));
  } finally {
    await db.end();
  }
}

/** Request k of a tenants route: organization k mod N with its own key; detail reads its metric k / N mod 100. */
export function tenantsRequest(tenants: readonly Tenant[], route: 'detail' | 'list'): RouteRequest {
  const tenant = (k: number) => tenants[k % tenants.length] as Tenant;
  const turn = (k: number) => Math.floor(k / tenants.length);
  return {
    method: 'GET',
    path: (k) =>
      route === 'detail'
        ? `/api/v1/metrics/${tenant(k).metricIds[turn(k) % TENANT_METRICS]}`
        : `/api/v1/metrics?page=${1 + (turn(k) % 2)}`,
    headers: (k) => ({ authorization: `Bearer ${tenant(k).apiKey}` }),
  };
}

type Loaded = LoadResult & { cpuMsPerRequest: number | null };

export interface TenantsOptions {
  count: number;
  databaseUrl: string;
  rounds: number;
  warmup: number;
  duration: number;
  /** one run of a request against a target, as the main rounds load (bench/run.ts) */
  load(target: Started, request: RouteRequest, seconds: number): Promise<Loaded>;
  log(message: string): void;
}

/** A route's medians on each side, and the service's over the floor's. */
type TenantsRoute = { service: TargetFigures; floor: TargetFigures } & ReturnType<typeof ratios>;

/** Seeds the tenants and loads the service and the floor with them, alternating; the medians over rounds. */
export async function runTenantsScenario(service: Started, floor: Started, options: TenantsOptions) {
  const started = Date.now();
  const tenants = await seedTenants(options.databaseUrl, options.count);
  const seedSeconds = (Date.now() - started) / 1000;
  options.log(
    `tenants: ${options.count} organizations of ${TENANT_METRICS} metrics seeded in ${seedSeconds.toFixed(1)} s`,
  );
  const routes: Record<string, TenantsRoute> = {};
  let peakRssMb = 0;
  for (const route of ['detail', 'list'] as const) {
    const request = tenantsRequest(tenants, route);
    await options.load(service, request, options.warmup);
    await options.load(floor, request, options.warmup);
    const runs: { service: Loaded[]; floor: Loaded[] } = { service: [], floor: [] };
    for (let r = 0; r < options.rounds; r++) {
      const { result, peakMb } = await withPeakRss(service.pid, () => options.load(service, request, options.duration));
      peakRssMb = Math.max(peakRssMb, peakMb);
      runs.service.push(result);
      runs.floor.push(await options.load(floor, request, options.duration));
    }
    const figures = { service: summary(runs.service), floor: summary(runs.floor), ...ratios(runs.service, runs.floor) };
    routes[route] = figures;
    options.log(
      `tenants ${route}: service ${figures.service.rps} rps p99 ${figures.service.p99} ms (CPU ${figures.service.cpuMsPerRequest} ms) | ` +
        `floor ${figures.floor.rps} rps p99 ${figures.floor.p99} ms (CPU ${figures.floor.cpuMsPerRequest} ms): ` +
        `${figures.throughputRatio}x, p99 ${figures.p99Ratio}x` +
        [figures.service, figures.floor]
          .map((side, i) => (side.errors ? ` (${i ? 'floor' : 'service'}: ${side.errors} non-2xx or errors)` : ''))
          .join(''),
    );
  }
  return { organizations: options.count, metricsEach: TENANT_METRICS, seedSeconds, routes, peakRssMb };
}
