/**
 * Large statement parameters (src/db/large-parameters.ts): a bulk write's
 * value reaches the database whole past Prisma's client, and no large
 * parameter stays in memory once its statement has run (Prisma keeps the
 * arguments of its last 100 debug calls, plans with their parameters among
 * them). On PostgreSQL, or on the embedded database when none is configured.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulkStatement } from '../../src/db/bulk-write.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** The heap in use once collected, in MB. */
function heapMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1e6;
}

/** A JSON array of about `mb` megabytes, different for each `seed` (so that no two share a string). */
function largeJson(seed: number, mb = 1): string {
  const rows = Array.from({ length: Math.round((mb * 1e6) / 40) }, (_, i) => ({
    n: `${seed}-${i}`,
    pad: 'x'.repeat(16),
  }));
  return JSON.stringify(rows);
}

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

describe('large statement parameters', () => {
  it('a bulk statement’s value reaches the database whole, through a transaction', async () => {
    const json = largeJson(1);
    const count = JSON.parse(json).length as number;
    const [row] = await db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('CREATE TEMP TABLE bulk_probe (n text) ON COMMIT DROP');
      await bulkStatement(tx, `INSERT INTO bulk_probe SELECT r->>'n' FROM jsonb_array_elements($1::jsonb) r`, json);
      return tx.$queryRawUnsafe<{ rows: number; last: string }[]>(
        `SELECT count(*)::int AS rows, max(n) FILTER (WHERE n = '1-${count - 1}') AS last FROM bulk_probe`,
      );
    });
    expect(row).toEqual({ rows: count, last: `1-${count - 1}` });
  });

  it('a bulk statement that fails rejects with the database’s error, and the next one runs', async () => {
    await expect(
      db.prisma.$transaction((tx) => bulkStatement(tx, 'SELECT jsonb_array_length($1::jsonb)', '[not json')),
      // PostgreSQL's message names the type; the embedded database's adapter passes no message on.
    ).rejects.toThrow(process.env.TEST_DATABASE_URL ? /invalid input syntax for type json/ : /Raw query failed/);
    const affected = await db.prisma.$transaction((tx) =>
      bulkStatement(tx, 'SELECT jsonb_array_length($1::jsonb)', largeJson(2)),
    );
    expect(affected).toBeGreaterThanOrEqual(0);
  });

  it('keeps none of 40 statements’ megabyte parameters once they have run (bulk or not)', async () => {
    // Warm up: the first statements load code and fill Prisma's history with small entries.
    await db.prisma.$executeRawUnsafe('SELECT length($1::text)', 'warm');
    const before = heapMb();
    await db.prisma.$transaction(
      async (tx) => {
        for (let i = 0; i < 20; i++) await tx.$executeRawUnsafe('SELECT length($1::text)', largeJson(100 + i));
        for (let i = 0; i < 20; i++)
          await bulkStatement(tx, 'SELECT jsonb_array_length($1::jsonb)', largeJson(200 + i));
      },
      { timeout: 120_000 },
    );
    const grown = heapMb() - before;
    // 40 MB of parameters went out; kept, the last 33 of them would be over 30 MB (twice that as plans).
    expect(grown).toBeLessThan(12);
  }, 180_000);
});
