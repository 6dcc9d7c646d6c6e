/**
 * An isolated, migrated database for one test file: a clone of the migrated
 * template on PostgreSQL (TEST_DATABASE_URL), else an in-memory PGlite loaded
 * from the migrated copy of the global setup.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { inject } from 'vitest';
import type { DatabaseTarget, PoolMode } from '../../src/db/adapter.js';
import { type Database, openDatabase } from '../../src/db/client.js';
import { databaseUrlFor } from '../global-setup.js';

export const usingPostgres = Boolean(process.env.TEST_DATABASE_URL);

export interface TestDatabase extends Database {
  /** drops the database (PostgreSQL) after closing it */
  drop(): Promise<void>;
}

async function adminQuery(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/** A fresh empty database target (PostgreSQL: created from the template). */
export async function createTestTarget(): Promise<{ target: DatabaseTarget; drop(): Promise<void> }> {
  const base = process.env.TEST_DATABASE_URL;
  const template = inject('templateDatabase');
  if (!base || !template) return { target: { kind: 'embedded', dataDir: null }, drop: async () => {} };
  const name = `mg_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  return {
    target: { kind: 'postgres', url: databaseUrlFor(base, name) },
    drop: () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** `target` through the PgBouncer of the global setup (TEST_PGBOUNCER=1), if there is one. */
function pooled(target: DatabaseTarget): { target: DatabaseTarget; poolMode?: PoolMode } {
  const port = inject('pgbouncerPort');
  if (!port || target.kind !== 'postgres') return { target };
  const url = new URL(target.url);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { target: { kind: 'postgres', url: url.toString() }, poolMode: 'transaction' };
}

/** Client connections of a test app's pool through the test PgBouncer. */
const POOLED_CLIENTS = 20;

export async function createTestDatabase(options: { poolSize?: number } = {}): Promise<TestDatabase> {
  const created = await createTestTarget();
  const { target, poolMode } = pooled(created.target);
  const { drop } = created;
  const pgliteTemplate = inject('pgliteTemplate');
  // Both templates are migrated already.
  const database = await openDatabase(target, {
    loadDataDir: target.kind === 'embedded' && pgliteTemplate ? new Blob([readFileSync(pgliteTemplate)]) : undefined,
    // Through PgBouncer (TEST_PGBOUNCER=1): 20 client connections over its 2 server connections.
    poolSize: poolMode ? POOLED_CLIENTS : (options.poolSize ?? 4),
    poolMode,
  });
  return {
    ...database,
    drop: async () => {
      await database.close();
      await drop();
    },
  };
}
