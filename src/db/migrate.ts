/**
 * Applies prisma/migrations to the configured database.
 *
 * PostgreSQL: `prisma migrate deploy`, the Prisma CLI through its WASM schema
 * engine. Embedded: applied in process with the same bookkeeping table
 * (`_prisma_migrations`, same checksums), because the Prisma CLI on PGlite
 * applies the migrations and then never exits (PGlite's timers stay armed).
 * Either way the other tool sees the migrations as applied.
 */
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';
import type { DatabaseTarget } from './adapter.js';

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const migrationsDir = join(projectRoot, 'prisma', 'migrations');

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(): Migration[] {
  return readdirSync(migrationsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(join(migrationsDir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/** Applies pending migrations to an open PGlite; returns the names applied. */
export async function migratePGlite(pglite: PGlite): Promise<string[]> {
  await pglite.exec(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id" VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum" VARCHAR(64) NOT NULL,
    "finished_at" TIMESTAMPTZ,
    "migration_name" VARCHAR(255) NOT NULL,
    "logs" TEXT,
    "rolled_back_at" TIMESTAMPTZ,
    "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count" INTEGER NOT NULL DEFAULT 0
  )`);
  const done = await pglite.query<{ migration_name: string; checksum: string }>(
    'SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
  );
  const applied = new Map(done.rows.map((row) => [row.migration_name, row.checksum]));
  const names: string[] = [];
  for (const migration of readMigrations()) {
    const checksum = applied.get(migration.name);
    if (checksum !== undefined) {
      if (checksum !== migration.checksum) {
        throw new Error(`migration ${migration.name} was changed after it was applied`);
      }
      continue;
    }
    await pglite.transaction(async (tx) => {
      await tx.exec(migration.sql);
      await tx.query(
        `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
         VALUES ($1, $2, now(), $3, 1)`,
        [randomUUID(), migration.checksum, migration.name],
      );
    });
    names.push(migration.name);
  }
  return names;
}

/** Runs `prisma migrate deploy` against a PostgreSQL URL; rejects with its output on failure. */
export function migratePostgres(url: string): Promise<string> {
  const prismaCli = join(projectRoot, 'node_modules', 'prisma', 'build', 'index.js');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [prismaCli, 'migrate', 'deploy'], {
      cwd: projectRoot,
      env: { ...process.env, DATABASE_URL: url, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`prisma migrate deploy failed (exit ${code}):\n${output}`));
    });
  });
}

export async function migrate(target: DatabaseTarget, pglite?: PGlite): Promise<string> {
  if (target.kind === 'postgres') return migratePostgres(target.url);
  if (!pglite) throw new Error('migrate: an embedded target needs its open PGlite');
  const names = await migratePGlite(pglite);
  return names.length ? `applied ${names.join(', ')}` : 'no pending migrations';
}
