/**
 * Migrations on a fresh database of each kind, through the commands a user
 * runs: `npm run db:migrate` (embedded, persisted under DATA_DIR; PostgreSQL)
 * and `prisma migrate deploy` (PostgreSQL), which must agree on what is
 * applied.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openPGlite } from '../../src/db/adapter.js';
import { MIGRATION_LOCK_KEY, migratePostgres, migratePostgresInProcess, readMigrations } from '../../src/db/migrate.js';
import { databaseUrlFor } from '../global-setup.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';

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

  it.skipIf(lacks(POSTGRES))(
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

  it.skipIf(lacks(POSTGRES))(
    'the in-process migrator finds nothing pending on the CLI-migrated template, without taking the lock',
    async () => {
      const { target, drop } = await createTestTarget();
      const holder = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await holder.connect();
      try {
        if (target.kind !== 'postgres') throw new Error('expected PostgreSQL');
        // Another session holds the migration lock: a migrator that needed it would wait here forever.
        await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
        expect(await migratePostgresInProcess(target.url)).toEqual({ applied: [], locked: false });
      } finally {
        await holder.end();
        await drop();
      }
    },
  );

  it.skipIf(lacks(POSTGRES))(
    'npm run db:migrate on a new PostgreSQL database applies everything, and prisma migrate deploy agrees',
    async () => {
      const base = process.env.TEST_DATABASE_URL as string;
      const name = `mg_migrate_${Date.now().toString(36)}`;
      const admin = new pg.Client({ connectionString: base });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`);
      const url = databaseUrlFor(base, name);
      try {
        const first = await migrateCommand({ DATABASE_URL: url });
        expect(first.stdout).toContain(
          `applied ${readMigrations()
            .map((m) => m.name)
            .join(', ')}`,
        );
        expect((await migrateCommand({ DATABASE_URL: url })).stdout).toContain('no pending migrations');
        // Same bookkeeping and checksums as the CLI's own.
        expect(await migratePostgres(url)).toContain('No pending migrations');
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      }
    },
    180_000,
  );
});
