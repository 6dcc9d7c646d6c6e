/**
 * What a suite needs beyond Node and this repository. A suite whose needs are not met is skipped
 * with one line saying what it needs, so that `npm test` with nothing configured says what it did
 * not run.
 */
import { usingPostgres } from './database.js';

export type Need = readonly [met: boolean, what: string];

export const POSTGRES: Need = [usingPostgres, 'PostgreSQL (set TEST_DATABASE_URL)'];
export const REDIS: Need = [Boolean(process.env.REDIS_URL), 'Redis (set REDIS_URL)'];
/** the peers that take minutes to start (a streaming replica, a Redis Cluster, PgBouncer) */
export const SLOW_PEERS: Need = [process.env.SKIP_SLOW_PEERS !== '1', 'its slow peers (SKIP_SLOW_PEERS=1 is set)'];

const said = new Set<string>();

/**
 * For `describe.skipIf` and `it.skipIf`: true (skip) when a need is not met, after printing once
 * per file (the runner names the file beside the line) what the skipped tests need.
 */
export function lacks(...needs: Need[]): boolean {
  const unmet = needs.filter(([met]) => !met).map(([, what]) => what);
  const line = `[test] skipped here: needs ${unmet.join(' and ')}`;
  if (unmet.length && !said.has(line)) {
    said.add(line);
    console.log(line);
  }
  return unmet.length > 0;
}
