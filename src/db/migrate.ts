/**
 * Applies prisma/migrations to the configured database, in process, on
 * PostgreSQL and embedded alike, with Prisma's own bookkeeping table
 * (`_prisma_migrations`, same checksums), so that `prisma migrate deploy`
 * and this code each see what the other applied.
 *
 * Why not the Prisma CLI at start-up: `prisma migrate deploy` takes about 12 s
 * even with nothing to apply, and waits at most 10 s for its advisory lock, so
 * replicas started together fail (P1002). Here a start first reads
 * `_prisma_migrations` without any lock; only when something is pending does
 * it take the session advisory lock `pg_advisory_lock(72707369)` (the one the
 * Prisma CLI takes, so the two never migrate at once), waiting as long as
 * needed, read again, and apply what is still pending, each migration in a
 * transaction with its bookkeeping row. Replicas started together: one
 * applies, the others wait for the lock and then find nothing pending.
 *
 * On PGlite the Prisma CLI applies the migrations and then never exits
 * (PGlite's timers stay armed); one process owns an embedded database, so no
 * lock is needed there. Behind a transaction pooler the lock is taken in each
 * migration's transaction instead (applyPendingEachLocked). `migratePostgres` (the real CLI) is kept for the test
 * setup, which migrates its template database with it.
 */
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { DatabaseTarget, PoolMode } from './adapter.js';

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const migrationsDir = join(projectRoot, 'prisma', 'migrations');

/** The advisory lock key of Prisma's schema engine: holding it keeps `prisma migrate deploy` out too. */
export const MIGRATION_LOCK_KEY = 72707369;

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

/** One database session: PGlite itself, or one pg client (never a pool: the advisory lock is per session). */
export interface MigrationSession {
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /** runs a script of several statements */
  exec(sql: string): Promise<void>;
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished: boolean;
  rolled_back: boolean;
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id" VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum" VARCHAR(64) NOT NULL,
    "finished_at" TIMESTAMPTZ,
    "migration_name" VARCHAR(255) NOT NULL,
    "logs" TEXT,
    "rolled_back_at" TIMESTAMPTZ,
    "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count" INTEGER NOT NULL DEFAULT 0
  )`;

async function appliedRows(session: MigrationSession): Promise<AppliedRow[]> {
  const [exists] = await session.query<{ table: string | null }>(
    `SELECT to_regclass('"_prisma_migrations"')::text AS "table"`,
  );
  if (!exists?.table) return [];
  return session.query<AppliedRow>(
    `SELECT migration_name, checksum, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS rolled_back
       FROM "_prisma_migrations"`,
  );
}

/**
 * The migrations of prisma/migrations not applied yet, in order. Throws when
 * an applied migration was changed since, or a failed one was never resolved
 * (as `prisma migrate deploy` refuses to go on, P3009).
 */
export function pendingMigrations(rows: AppliedRow[], migrations: Migration[] = readMigrations()): Migration[] {
  const failed = rows.filter((row) => !row.finished && !row.rolled_back);
  if (failed.length > 0) {
    throw new Error(
      `migration ${failed.map((row) => row.migration_name).join(', ')} failed earlier and was not resolved; ` +
        'see `prisma migrate resolve`',
    );
  }
  const applied = new Map(rows.filter((row) => row.finished).map((row) => [row.migration_name, row.checksum]));
  return migrations.filter((migration) => {
    const checksum = applied.get(migration.name);
    if (checksum === undefined) return true;
    if (checksum !== migration.checksum)
      throw new Error(`migration ${migration.name} was changed after it was applied`);
    return false;
  });
}

async function inTransaction<T>(session: MigrationSession, work: () => Promise<T>): Promise<T> {
  await session.exec('BEGIN');
  try {
    const result = await work();
    await session.exec('COMMIT');
    return result;
  } catch (error) {
    await session.exec('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** A migration and its bookkeeping row; run inside a transaction, so that it is all or nothing. */
async function applyMigration(session: MigrationSession, migration: Migration): Promise<void> {
  try {
    await session.exec(migration.sql);
    await session.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, started_at, finished_at, migration_name, applied_steps_count)
       VALUES ($1, $2, now(), now(), $3, 1)`,
      [randomUUID(), migration.checksum, migration.name],
    );
  } catch (error) {
    throw new Error(`migration ${migration.name} failed, nothing of it was applied: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

async function applyPending(session: MigrationSession): Promise<string[]> {
  await session.exec(CREATE_TABLE);
  const names: string[] = [];
  for (const migration of pendingMigrations(await appliedRows(session))) {
    await inTransaction(session, () => applyMigration(session, migration));
    names.push(migration.name);
  }
  return names;
}

/**
 * Behind a transaction pooler a session's advisory lock would stay on
 * whichever server connection took it (and its unlock run on another), so
 * each migration takes the lock in its own transaction, then reads again
 * what is pending. The session lock of `prisma migrate deploy` excludes it
 * all the same.
 */
async function applyPendingEachLocked(session: MigrationSession): Promise<string[]> {
  const names: string[] = [];
  for (;;) {
    const applied = await inTransaction(session, async () => {
      await session.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      await session.exec(CREATE_TABLE);
      const [next] = pendingMigrations(await appliedRows(session));
      if (next) await applyMigration(session, next);
      return next;
    });
    if (!applied) return names;
    names.push(applied.name);
  }
}

export interface MigrationResult {
  /** the migrations this call applied */
  applied: string[];
  /** whether the call took the migration lock (false: nothing was pending, no lock, no wait) */
  locked: boolean;
}

/**
 * Applies pending migrations over one session. `lock` (PostgreSQL), once
 * something is pending: `session` holds the migration advisory lock for the
 * whole run, `transaction` takes it in each migration's transaction (behind a
 * transaction pooler); false: none.
 */
export async function migrateSession(
  session: MigrationSession,
  options: { lock: 'session' | 'transaction' | false },
): Promise<MigrationResult> {
  if (pendingMigrations(await appliedRows(session)).length === 0) return { applied: [], locked: false };
  if (!options.lock) return { applied: await applyPending(session), locked: false };
  if (options.lock === 'transaction') return { applied: await applyPendingEachLocked(session), locked: true };
  // Waits as long as another instance (or `prisma migrate deploy`) applies; then most often finds nothing left.
  await session.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    return { applied: await applyPending(session), locked: true };
  } finally {
    await session.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
  }
}

function pgliteSession(pglite: PGlite): MigrationSession {
  return {
    query: async <T>(sql: string, params?: unknown[]) => (await pglite.query<T>(sql, params)).rows,
    exec: async (sql) => {
      await pglite.exec(sql);
    },
  };
}

/** Applies pending migrations to an open PGlite; returns the names applied. */
export async function migratePGlite(pglite: PGlite): Promise<string[]> {
  return (await migrateSession(pgliteSession(pglite), { lock: false })).applied;
}

/** Applies pending migrations to a PostgreSQL database over a connection of its own. */
export async function migratePostgresInProcess(url: string, poolMode: PoolMode = 'session'): Promise<MigrationResult> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await migrateSession(
      {
        query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[],
        // No parameters: the simple query protocol, which takes a script of several statements.
        exec: async (sql) => {
          await client.query(sql);
        },
      },
      { lock: poolMode },
    );
  } finally {
    await client.end();
  }
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

/** Applies pending migrations to the target; resolves to one line saying what was done. */
export async function migrate(
  target: DatabaseTarget,
  { pglite, poolMode }: { pglite?: PGlite; poolMode?: PoolMode } = {},
): Promise<string> {
  let applied: string[];
  if (target.kind === 'postgres') applied = (await migratePostgresInProcess(target.url, poolMode)).applied;
  else if (pglite) applied = await migratePGlite(pglite);
  else throw new Error('migrate: an embedded target needs its open PGlite');
  return applied.length ? `applied ${applied.join(', ')}` : 'no pending migrations';
}
