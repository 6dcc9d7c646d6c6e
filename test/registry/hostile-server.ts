/**
 * A server process as `npm start` runs it (a 256 MB heap), over its own
 * PostgreSQL database with one organization, for requests sent as an attacker
 * with a CI service token or an admin session would send them: through a
 * real socket, each answer awaited within a bound, and the server asked
 * whether it still answers. The rate limits are lifted: what is tested is
 * what a request does once admitted, not how many are.
 */
import { openDatabase } from '../../src/db/client.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { createTestTarget } from '../helpers/database.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { newTeamOrg, type TeamOrg } from './support.js';

export interface HostileServer {
  server: ServerProcess;
  /** the server's database */
  prisma: PrismaClient;
  org: TeamOrg;
  /** PUT /api/registry or POST /api/validations with the organization's service token */
  send(
    path: string,
    body: string | Uint8Array<ArrayBuffer>,
    contentType?: string,
  ): Promise<{ status: number; body: string }>;
  /** A request of the organization's owner (session cookie) to an administration route; a body is sent as JSON. */
  admin(
    method: 'POST' | 'DELETE',
    path: string,
    body?: string | Uint8Array<ArrayBuffer>,
  ): Promise<{ status: number; body: string }>;
  /** /healthz's status, or 0 when it did not answer within 5 s */
  health(): Promise<number>;
  /** metrics, versions, validations, live API keys and service tokens, webhooks of the organization (a refused request writes none) */
  written(): Promise<number[]>;
  stop(): Promise<void>;
}

/** Generous for a slow, shared 2-core machine; a request that kills or hangs the server never answers. */
export const ANSWER_WITHIN_MS = 60_000;

/** As `npm start` runs the server. */
const START_OPTIONS = ['--max-semi-space-size=16', '--max-old-space-size=256'];

/** `env`: settings of the server beside its database (e.g. DOCUMENT_READ_TIMEOUT_MS); `nodeOptions`: node's own */
export async function startHostileServer(
  env: Record<string, string> = {},
  nodeOptions: readonly string[] = START_OPTIONS,
): Promise<HostileServer> {
  const created = await createTestTarget();
  if (created.target.kind !== 'postgres') throw new Error('PostgreSQL expected');
  const database = await openDatabase(created.target);
  const org = await newTeamOrg(database.prisma, 'hostile');
  const server = await startServerProcess(
    {
      RATE_LIMIT_PER_MINUTE: '1000000',
      SERVICE_TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
      THROTTLE_PER_MINUTE: '1000000',
      ...env,
      DATABASE_URL: created.target.url,
    },
    { nodeOptions },
  );
  return {
    server,
    prisma: database.prisma,
    org,
    async send(path, body, contentType = 'application/json') {
      const res = await fetch(`${server.base}${path}`, {
        method: path.startsWith('/api/registry') ? 'PUT' : 'POST',
        headers: { authorization: `Bearer ${org.token}`, 'content-type': contentType },
        body,
        signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
      });
      return { status: res.status, body: await res.text() };
    },
    async admin(method, path, body) {
      const res = await fetch(`${server.base}${path}`, {
        method,
        headers: {
          cookie: `session=${org.ownerSession}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body,
        signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
      });
      return { status: res.status, body: await res.text() };
    },
    async health() {
      return fetch(`${server.base}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
        (res) => res.status,
        () => 0,
      );
    },
    async written() {
      const where = { orgId: org.id };
      return Promise.all([
        database.prisma.metric.count({ where }),
        database.prisma.metricVersion.count({ where: { metric: where } }),
        database.prisma.validation.count({ where: { metric: where } }),
        database.prisma.apiKey.count({ where: { ...where, revokedAt: null } }),
        database.prisma.serviceToken.count({ where: { ...where, revokedAt: null } }),
        database.prisma.webhook.count({ where }),
      ]);
    },
    async stop() {
      await server.stop('SIGKILL');
      await database.close();
      await created.drop();
    },
  };
}

/** The one semantic model of the dbt manifests sent: `orders`, with a measure `total` and a time dimension. */
const ORDERS_MODEL = {
  name: 'orders',
  defaults: { agg_time_dimension: 'ordered_at' },
  node_relation: { alias: 'orders', schema_name: 'm', database: 'a', relation_name: 'a.m.orders' },
  entities: [],
  measures: [{ name: 'total', agg: 'sum', expr: 'amount' }],
  dimensions: [{ name: 'ordered_at', type: 'time', type_params: { time_granularity: 'day' } }],
};

/** A dbt semantic manifest of the `orders` model, the metrics given and any other top-level members. */
export function ordersManifest(metrics: Record<string, unknown>[], extra: Record<string, unknown> = {}) {
  return { semantic_models: [ORDERS_MODEL], metrics, ...extra };
}

/** A simple dbt metric `revenue` over the measure `total`, with the fields given. */
export function revenueMetric(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'revenue', label: 'Revenue', type: 'simple', type_params: { measure: { name: 'total' } }, ...fields };
}
