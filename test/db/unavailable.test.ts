/**
 * A statement the database did not end within the statement timeout is the database not answering
 * in time (src/db/unavailable.ts): 503 with Retry-After, never a 500. PostgreSQL only: the
 * embedded database has no statement timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { isDatabaseUnavailable } from '../../src/db/unavailable.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';

describe.skipIf(lacks(POSTGRES))('a statement past the statement timeout (PostgreSQL)', () => {
  let database: Awaited<ReturnType<typeof openDatabase>>;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const created = await createTestTarget();
    drop = created.drop;
    database = await openDatabase(created.target, { poolSize: 1, statementTimeoutMs: 50 });
  });
  afterAll(async () => {
    await database?.close();
    await drop?.();
  });

  it('is the database not answering, through the SQL reader and through Prisma', async () => {
    const read = await database.sql.query({ sql: 'SELECT pg_sleep(2)', parameters: [] }).catch((e: unknown) => e);
    expect(read).toMatchObject({ code: '57014' });
    expect(isDatabaseUnavailable(read)).toBe(true);
    const raw = await database.prisma.$queryRawUnsafe('SELECT pg_sleep(2)').catch((e: unknown) => e);
    expect(isDatabaseUnavailable(raw), String(raw)).toBe(true);
    // A statement's own fault stays one.
    const wrong = await database.sql.query({ sql: 'SELECT 1/0', parameters: [] }).catch((e: unknown) => e);
    expect(isDatabaseUnavailable(wrong)).toBe(false);
  });
});
