/**
 * A statement that runs past DB_STATEMENT_TIMEOUT_MS fails its request with
 * the documented 500 and frees its connection; a request past
 * REQUEST_DEADLINE_MS is answered 500 even while its statement still waits.
 * Nothing hangs, and the next request is served. The test holds an ACCESS
 * EXCLUSIVE lock on `metric` from a connection of its own, so every read of
 * a metric waits. PostgreSQL only: PGlite does not apply statement_timeout.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/client.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance } from '../helpers/app.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';

const r = registry();
const org = r.org();
const key = org.key();
org.metric({ name: 'Revenue' });

const POOL_SIZE = 2;

describe.skipIf(lacks(POSTGRES))('statement_timeout and the request deadline (PostgreSQL)', () => {
  let url: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const created = await createTestTarget();
    if (created.target.kind !== 'postgres') throw new Error('PostgreSQL expected');
    url = created.target.url;
    drop = created.drop;
    const database = await openDatabase(created.target, { poolSize: 1 });
    await loadFixture(database.prisma, r.build());
    await database.close();
  });
  afterAll(() => drop());

  /** Runs `body` while another session holds an ACCESS EXCLUSIVE lock on `metric`. */
  async function withMetricLocked(body: () => Promise<void>) {
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE metric IN ACCESS EXCLUSIVE MODE');
      await body();
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  }

  async function serve(options: { statementTimeoutMs: number; requestDeadlineMs: number }) {
    const database: Database = await openDatabase(
      { kind: 'postgres', url },
      { poolSize: POOL_SIZE, statementTimeoutMs: options.statementTimeoutMs },
    );
    const app = await buildTestInstance(database, { requestDeadlineMs: options.requestDeadlineMs });
    const list = () =>
      app.inject({ method: 'GET', url: '/api/v1/metrics', headers: { authorization: `Bearer ${key.secret}` } });
    return {
      list,
      close: async () => {
        await app.close();
        await database.close();
      },
    };
  }

  it('a statement past statement_timeout is 500 Failed to fetch metric, and frees its connection', async () => {
    const service = await serve({ statementTimeoutMs: 300, requestDeadlineMs: 60_000 });
    try {
      await withMetricLocked(async () => {
        // More requests than the pool has connections: each waits its turn, is cancelled, frees its connection.
        const started = Date.now();
        const responses = await Promise.all(Array.from({ length: POOL_SIZE * 3 }, () => service.list()));
        for (const res of responses) {
          expect(res.statusCode).toBe(500);
          expect(res.json()).toEqual({ error: 'Failed to fetch metric' });
        }
        // Not a speed assertion: only that they were cut off rather than waiting for the lock to go.
        expect(Date.now() - started).toBeLessThan(30_000);
      });
      const next = await service.list();
      expect(next.statusCode).toBe(200);
      expect(next.json().data.map((m: { name: string }) => m.name)).toEqual(['Revenue']);
    } finally {
      await service.close();
    }
  });

  it('a request past its deadline is 500 while its statement still waits; the next is served', async () => {
    const service = await serve({ statementTimeoutMs: 0, requestDeadlineMs: 300 });
    try {
      await withMetricLocked(async () => {
        const res = await service.list();
        expect(res.statusCode).toBe(500);
        expect(res.json()).toEqual({ error: 'Failed to fetch metric' });
      });
      // The lock is gone: the waiting statement finishes, the connection returns to the pool.
      const next = await service.list();
      expect(next.statusCode).toBe(200);
    } finally {
      await service.close();
    }
  });
});
