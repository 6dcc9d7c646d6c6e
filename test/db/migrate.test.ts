/**
 * Migrations on a fresh database of each kind, through the commands a user
 * runs: `npm run db:migrate` (embedded, persisted under DATA_DIR) and
 * `prisma migrate deploy` (PostgreSQL).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openPGlite } from '../../src/db/adapter.js';
import { migratePostgres, readMigrations } from '../../src/db/migrate.js';
import { createTestTarget, usingPostgres } from '../helpers/database.js';

const run = promisify(execFile);
const dataDir = mkdtempSync(join(tmpdir(), 'mg-migrate-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function migrateCommand(env: Record<string, string>) {
  const { DATABASE_URL: _unset, ...rest } = process.env;
  return run('npx', ['tsx', 'scripts/migrate.ts'], { env: { ...rest, ...env }, timeout: 120_000 });
}

describe('migrations', () => {
  it('npm run db:migrate applies every migration to a new embedded database, then finds none pending', async () => {
    const first = await migrateCommand({ DATA_DIR: dataDir });
    expect(first.stdout).toContain(
      `applied ${readMigrations()
        .map((m) => m.name)
        .join(', ')}`,
    );
    const second = await migrateCommand({ DATA_DIR: dataDir });
    expect(second.stdout).toContain('no pending migrations');

    const pglite = await openPGlite(join(dataDir, 'pglite'));
    try {
      const applied = await pglite.query<{ migration_name: string }>('SELECT migration_name FROM _prisma_migrations');
      expect(applied.rows.map((row) => row.migration_name)).toEqual(readMigrations().map((m) => m.name));
      const trgm = await pglite.query("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'");
      expect(trgm.rows).toHaveLength(1);
    } finally {
      await pglite.close();
    }
  }, 180_000);

  it.skipIf(!usingPostgres)(
    'prisma migrate deploy finds nothing pending on a clone of the template it migrated',
    async () => {
      // test/global-setup.ts migrated a fresh template database with the CLI; a clone of it is up to date.
      const { target, drop } = await createTestTarget();
      try {
        if (target.kind !== 'postgres') throw new Error('expected PostgreSQL');
        expect(await migratePostgres(target.url)).toContain('No pending migrations');
      } finally {
        await drop();
      }
    },
    120_000,
  );
});
