/**
 * A write whose transaction runs out of its time is rolled back, and its
 * caller is told so: 503 with Retry-After, never a 500 (the write routes map
 * what they catch through busyResponse). The errors are the real ones: a
 * statement past its statement_timeout (SQLSTATE 57014, PostgreSQL) and an
 * interactive transaction past its timeout (Prisma's P2028), as the database
 * client wraps them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase } from '../../src/db/client.js';
import { errors, HttpError } from '../../src/errors.js';
import { busyResponse } from '../../src/http/write-requests.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';

let database: Database;
let drop: () => Promise<void>;
beforeAll(async () => {
  const created = await createTestTarget();
  drop = created.drop;
  database = await openDatabase(created.target, { poolSize: 2 });
});
afterAll(async () => {
  await database?.close();
  await drop?.();
});

const failure = (work: Promise<unknown>) =>
  work.then(
    () => {
      throw new Error('the write was expected to fail');
    },
    (error: unknown) => error,
  );

const expectOutOfTime = (error: unknown) => {
  const response = busyResponse(error);
  expect(response).toBeInstanceOf(HttpError);
  expect((response as HttpError).response).toEqual(errors.writeOutOfTime);
  expect(errors.writeOutOfTime.status).toBe(503);
  expect(errors.writeOutOfTime.retryAfter).toBeGreaterThan(0);
};

describe('a write out of its time', () => {
  it('a transaction past its timeout (P2028) is 503, nothing written', async () => {
    await database.prisma.$executeRawUnsafe('CREATE TABLE IF NOT EXISTS out_of_time (id int PRIMARY KEY)');
    const error = await failure(
      database.prisma.$transaction(
        async (tx) => {
          await tx.$executeRawUnsafe('INSERT INTO out_of_time VALUES (1)');
          await sleep(400);
          await tx.$executeRawUnsafe('INSERT INTO out_of_time VALUES (2)');
        },
        { timeout: 100 },
      ),
    );
    expectOutOfTime(error);
    const rows = await database.prisma.$queryRawUnsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM out_of_time');
    expect(rows[0]?.n).toBe(0);
  });

  it.skipIf(lacks(POSTGRES))('a statement past its statement_timeout (57014) is 503', async () => {
    const error = await failure(
      database.prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe('SET LOCAL statement_timeout = 50');
        await tx.$queryRawUnsafe('SELECT pg_sleep(2)');
      }),
    );
    expectOutOfTime(error);
  });

  it('other failures are left to the error handler as they are', async () => {
    const error = await failure(database.prisma.$queryRawUnsafe('SELECT * FROM no_such_table'));
    expect(busyResponse(error)).toBe(error);
    const plain = new Error('something else');
    expect(busyResponse(plain)).toBe(plain);
  });
});
