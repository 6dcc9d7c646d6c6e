/**
 * The SQL reader's batches (src/db/sql.ts): the point reads of one
 * event-loop turn go out a batch per statement text, each batch on one
 * pooled connection in pipeline mode; any other statement goes alone. Each statement still gets its own rows and
 * fails alone; a statement never waits behind one of another text; a batch
 * whose connection is lost fails and frees everything; and the pool-wide
 * pipeline mode leaves Prisma's interactive transactions as they were.
 * PostgreSQL only: PGlite has no pool and no batches.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openAdapter } from '../../src/db/adapter.js';
import { openDatabase } from '../../src/db/client.js';
import type { Statement } from '../../src/db/kysely.js';
import { MAX_BATCH, POINT_READ, preparedReader, type SqlReader } from '../../src/db/sql.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';

const POOL_SIZE = 4;

function statement<R>(sql: string, ...parameters: unknown[]): Statement<R> {
  return { sql, parameters };
}

type Numbered = { pid: number; n: number };
const numbered = (n: number) => statement<Numbered>('SELECT pg_backend_pid() AS pid, $1::int AS n', n);
const pidOf = (rows: { pid: number }[]) => (rows[0] as { pid: number }).pid;

/** `promise`, or a rejection once `ms` have passed: a hang fails the test instead of timing it out. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe.skipIf(lacks(POSTGRES))('batched reads (PostgreSQL)', () => {
  let url: string;
  let drop: () => Promise<void>;
  let pool: pg.Pool;
  let reader: SqlReader;
  let closePool: () => Promise<void>;
  let admin: pg.Client;

  beforeAll(async () => {
    const created = await createTestTarget();
    if (created.target.kind !== 'postgres') throw new Error('PostgreSQL expected');
    url = created.target.url;
    drop = created.drop;
    const adapter = await openAdapter(created.target, { poolSize: POOL_SIZE });
    pool = adapter.pool as pg.Pool;
    closePool = adapter.close;
    reader = preparedReader(pool);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    await closePool?.();
    await drop?.();
  });

  /** Reads as the service's point reads (key lookups, metrics by id): the statements that share batches. */
  const pointRead = <R>(read: Statement<R>) => reader.query(read, POINT_READ);

  /** The backends of this test's database running a statement whose text contains `marker` (not the asking one). */
  async function backendsRunning(marker: string): Promise<number[]> {
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
          AND position($1 in query) > 0`,
      [marker],
    );
    return rows.map((row) => row.pid);
  }

  /** Whether backend `pid` is still connected. */
  async function backendAlive(pid: number): Promise<boolean> {
    const { rows } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
    return rows.length > 0;
  }

  /** Polls `check` until it holds, for at most `ms` (a condition another process brings about). */
  async function eventually(check: () => Promise<boolean>, ms = 5000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (await check()) return true;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return check();
  }

  describe('statements of one text', () => {
    it('issued in the same turn each get their own rows, all from one backend', async () => {
      // Open every connection of the pool first, so that unbatched statements would spread over them.
      await Promise.all(
        Array.from({ length: POOL_SIZE }, (_, i) =>
          reader.query(statement(`SELECT pg_sleep(0.05), ${i} AS warm_${i}`)),
        ),
      );
      expect(pool.totalCount).toBe(POOL_SIZE);

      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => pointRead(numbered(i))));
      expect(results.map((rows) => rows.map((row) => row.n))).toEqual(Array.from({ length: 10 }, (_, i) => [i]));
      expect(new Set(results.map(pidOf)).size).toBe(1);
    });

    it('that are not point reads go out alone, each on a connection of its own', async () => {
      const results = await Promise.all(
        Array.from({ length: POOL_SIZE }, (_, i) =>
          reader.query(statement<Numbered>('SELECT pg_backend_pid() AS pid, $1::int AS n, pg_sleep(0.05)', i)),
        ),
      );
      expect(results.map((rows) => rows.map((row) => row.n))).toEqual(Array.from({ length: POOL_SIZE }, (_, i) => [i]));
      expect(new Set(results.map(pidOf)).size).toBe(POOL_SIZE);
    });

    it('issued in separate turns are still each answered with their own rows', async () => {
      const pids = new Set<number>();
      for (let i = 0; i < 10; i++) {
        const rows = await pointRead(numbered(100 + i));
        expect(rows).toEqual([{ pid: expect.any(Number), n: 100 + i }]);
        pids.add(pidOf(rows));
      }
      // The other connections exist meanwhile; the statements run on the pool's own backends.
      const { rows: backends } = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      for (const pid of pids) expect(backends.map((row) => row.pid)).toContain(pid);
    });

    it(`past MAX_BATCH (${MAX_BATCH}) go out as several batches, each on a connection of its own`, async () => {
      const count = 2 * MAX_BATCH + Math.floor(MAX_BATCH / 2);
      const results = await Promise.all(Array.from({ length: count }, (_, i) => pointRead(numbered(1000 + i))));
      expect(results.map((rows) => rows.map((row) => row.n))).toEqual(
        Array.from({ length: count }, (_, i) => [1000 + i]),
      );
      // The batches are taken in order, MAX_BATCH at a time, and are all out at once (the pool has room).
      const batches = [
        results.slice(0, MAX_BATCH),
        results.slice(MAX_BATCH, 2 * MAX_BATCH),
        results.slice(2 * MAX_BATCH),
      ];
      const batchPids = batches.map((batch) => new Set(batch.map(pidOf)));
      for (const pids of batchPids) expect(pids.size).toBe(1);
      expect(new Set(batchPids.flatMap((pids) => [...pids])).size).toBe(Math.ceil(count / MAX_BATCH));
    });
  });

  describe('statements of different texts', () => {
    it('issued in the same turn do not share a connection', async () => {
      const [slow, quick] = await Promise.all([
        pointRead(statement<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.2) AS slept')),
        pointRead(statement<{ pid: number }>('SELECT pg_backend_pid() AS pid, $1::int AS quick', 1)),
      ]);
      expect(pidOf(slow)).not.toBe(pidOf(quick));
    });

    it('a cheap statement is not held back behind a slow one of another text issued before it', async () => {
      const finished: string[] = [];
      const slow = pointRead(statement('SELECT pg_sleep(0.3) AS slow_read')).then(() => finished.push('slow'));
      const cheap = pointRead(statement('SELECT $1::int AS cheap_read', 7)).then((rows) => {
        finished.push('cheap');
        return rows;
      });
      expect(await cheap).toEqual([{ cheap_read: 7 }]);
      await slow;
      expect(finished).toEqual(['cheap', 'slow']);
    });
  });

  describe('a failing statement', () => {
    it('fails alone: the others of its batch get their rows, its connection is closed, the reader goes on', async () => {
      const divisors = [1, 2, 0, 4, 5];
      const settled = await Promise.allSettled(
        divisors.map((d) =>
          pointRead(statement<{ pid: number; v: number }>('SELECT pg_backend_pid() AS pid, 100 / $1::int AS v', d)),
        ),
      );
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      const failed = settled[2] as PromiseRejectedResult;
      expect(failed.reason).toMatchObject({ code: '22012' /* division_by_zero */ });
      const answered = settled.filter((s) => s.status === 'fulfilled').map((s) => s.value);
      expect(answered.map((rows) => rows.map((row) => row.v))).toEqual([[100], [50], [25], [20]]);
      // They were one batch: the failure was in the middle of it, on the same backend.
      const pids = new Set(answered.map(pidOf));
      expect(pids.size).toBe(1);
      const [batchPid] = pids as Set<number>;

      const next = await pointRead(numbered(42));
      expect(next.map((row) => row.n)).toEqual([42]);
      // As pg-pool's query() does, the connection that failed a statement is not reused but closed.
      expect(pidOf(next)).not.toBe(batchPid);
      expect(await eventually(async () => !(await backendAlive(batchPid as number)))).toBe(true);
    });

    // A value node-postgres cannot encode would fail at Bind, after its Parse was written; the Close
    // node-postgres then sends would drop the named statement under the rest of the batch. The reader
    // encodes every statement's values before the batch goes out, so only this statement fails.
    it('whose parameter cannot be encoded fails alone too', async () => {
      const unencodable = {
        toPostgres() {
          throw new Error('cannot encode');
        },
      };
      const settled = await Promise.allSettled(
        ['first', unencodable, 'third'].map((value) =>
          pointRead(statement<{ v: string }>('SELECT $1::text AS encoded_v', value)),
        ),
      );
      expect(settled[1]).toMatchObject({ status: 'rejected', reason: { message: 'cannot encode' } });
      expect(settled[0]).toEqual({ status: 'fulfilled', value: [{ encoded_v: 'first' }] });
      expect(settled[2]).toEqual({ status: 'fulfilled', value: [{ encoded_v: 'third' }] });
    });
  });

  describe('a connection lost mid-batch', () => {
    const unhandled: unknown[] = [];
    const record = (error: unknown) => unhandled.push(error);
    beforeAll(() => {
      process.on('unhandledRejection', record);
      process.on('uncaughtException', record);
    });
    afterEach(() => {
      process.off('unhandledRejection', record);
      process.off('uncaughtException', record);
    });

    it('fails every statement of the batch, without hanging or an unhandled error, and the next read is served', async () => {
      const marker = 'lost_batch_marker';
      const batch = Array.from({ length: 4 }, (_, i) =>
        pointRead(
          statement<{ pid: number; i: number }>(
            `SELECT pg_backend_pid() AS pid, $1::int AS i, pg_sleep(2) AS ${marker}`,
            i,
          ),
        ),
      );
      const settling = Promise.allSettled(batch);
      let running: number[] = [];
      const found = await eventually(async () => {
        running = await backendsRunning(marker);
        return running.length > 0;
      });
      expect(found).toBe(true);
      // One backend runs the whole batch, one statement after another.
      expect(running).toHaveLength(1);
      const victim = running[0] as number;
      await admin.query('SELECT pg_terminate_backend($1)', [victim]);

      const settled = await within(settling, 10_000, 'the batch of the terminated backend');
      expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
      for (const s of settled) expect((s as PromiseRejectedResult).reason).toBeInstanceOf(Error);

      const next = await within(pointRead(numbered(7)), 10_000, 'the read after the loss');
      expect(next.map((row) => row.n)).toEqual([7]);
      expect(pidOf(next)).not.toBe(victim);
      // Whatever the lost connection still had to say (its 'error', its 'end') has been said by now.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    });
  });
});

describe.skipIf(lacks(POSTGRES))('Prisma on the pipelined pool (PostgreSQL)', () => {
  it('runs an interactive transaction in order, and rolls it back when it throws', async () => {
    const { target, drop } = await createTestTarget();
    const database = await openDatabase(target, { poolSize: 2 });
    try {
      const org = (slug: string) => ({ id: randomUUID(), name: slug, slug, plan: 'team' as const });
      const failure = new Error('abandoned');
      await expect(
        database.prisma.$transaction(async (tx) => {
          await tx.organization.create({ data: org('tx-first') });
          await tx.organization.create({ data: org('tx-second') });
          // The transaction's own statements see its writes, on one backend.
          expect(await tx.organization.count()).toBe(2);
          const pids = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
          const again = await tx.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
          expect(again).toEqual(pids);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await database.prisma.organization.count()).toBe(0);

      // A transaction whose statement fails in the database is rolled back too, and the pool serves on.
      const taken = org('tx-taken');
      await database.prisma.organization.create({ data: taken });
      await expect(
        database.prisma.$transaction(async (tx) => {
          await tx.organization.create({ data: org('tx-third') });
          await tx.organization.create({ data: { ...org('tx-fourth'), slug: taken.slug } });
        }),
      ).rejects.toMatchObject({ code: 'P2002' });
      expect((await database.prisma.organization.findMany({ select: { slug: true } })).map((o) => o.slug)).toEqual([
        'tx-taken',
      ]);
      expect(await database.sql.query(statement<{ n: number }>('SELECT count(*)::int AS n FROM organization'))).toEqual(
        [{ n: 1 }],
      );
    } finally {
      await database.close();
      await drop();
    }
  });
});
