/**
 * A server process as `npm start` runs it (a 256 MB heap), over its own
 * PostgreSQL database with one organization, for bodies sent as an attacker
 * with a CI service token would send them: through a real socket, each
 * answer awaited within a bound, and the server asked whether it still
 * answers.
 */
import { openDatabase } from '../../src/db/client.js';
import { createTestTarget } from '../helpers/database.js';
import { type ServerProcess, startServerProcess } from '../helpers/server-process.js';
import { newTeamOrg, type TeamOrg } from './support.js';

export interface HostileServer {
  server: ServerProcess;
  org: TeamOrg;
  /** PUT /api/registry or POST /api/validations with the organization's service token */
  send(
    path: string,
    body: string | Uint8Array<ArrayBuffer>,
    contentType?: string,
  ): Promise<{ status: number; body: string }>;
  /** /healthz's status, or 0 when it did not answer within 5 s */
  health(): Promise<number>;
  /** metrics, versions and validations of the organization (a refused request writes none) */
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
  const server = await startServerProcess({ ...env, DATABASE_URL: created.target.url }, { nodeOptions });
  return {
    server,
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
      ]);
    },
    async stop() {
      await server.stop('SIGKILL');
      await database.close();
      await created.drop();
    },
  };
}
