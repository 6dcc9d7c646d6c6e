/**
 * Once per `npm test`: with TEST_DATABASE_URL, migrates a template database
 * through `prisma migrate deploy` (so every run exercises the real CLI on
 * PostgreSQL); each test file then clones it (test/helpers/database.ts).
 * Without it, migrates an embedded PGlite once and leaves a copy of its data
 * directory in a temporary file, which each test file loads: initdb and the
 * migrations cost an embedded database about ten seconds of CPU, per file.
 * With TEST_PGBOUNCER=1 as well, a PgBouncer in transaction mode stands in
 * front of the test databases and the apps under test connect through it
 * with DATABASE_POOL_MODE=transaction (docs/connection-poolers.md).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openPGlite } from '../src/db/adapter.js';
import { migratePGlite, migratePostgres } from '../src/db/migrate.js';
import { startPgBouncer } from './helpers/pgbouncer.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string | null;
    /** the file holding the migrated embedded database that each test file loads (no TEST_DATABASE_URL) */
    pgliteTemplate: string | null;
    /** the port of a PgBouncer in transaction mode in front of the test databases (TEST_PGBOUNCER=1) */
    pgbouncerPort: number | null;
  }
}

export function databaseUrlFor(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

export default async function setup(project: TestProject) {
  const base = process.env.TEST_DATABASE_URL;
  const redis = process.env.REDIS_URL;
  console.log(
    `[test] database: ${base ? `PostgreSQL (${new URL(base).host})` : 'embedded PGlite, in memory'}; ` +
      `Redis: ${redis ? new URL(redis).host : 'not configured, Redis tests are skipped'}`,
  );
  project.provide('pgbouncerPort', null);
  project.provide('pgliteTemplate', null);
  if (!base) {
    project.provide('templateDatabase', null);
    const dir = mkdtempSync(join(tmpdir(), 'mg-pglite-template-'));
    const pglite = await openPGlite(null);
    try {
      await migratePGlite(pglite);
      // Uncompressed: each file loads it, and inflating costs more than reading.
      const dump = await pglite.dumpDataDir('none');
      writeFileSync(join(dir, 'pgdata.tar'), new Uint8Array(await dump.arrayBuffer()));
    } finally {
      await pglite.close();
    }
    project.provide('pgliteTemplate', join(dir, 'pgdata.tar'));
    return () => rmSync(dir, { recursive: true, force: true });
  }
  // Two server connections per test database, whatever the size of its pool. Started first: a
  // PgBouncer that cannot start leaves no template behind.
  const bouncer =
    process.env.TEST_PGBOUNCER === '1'
      ? await startPgBouncer({ upstream: base, poolMode: 'transaction', defaultPoolSize: 2, maxClientConn: 500 })
      : null;
  const template = `mg_template_${randomBytes(4).toString('hex')}`;
  try {
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${template}`);
    await migratePostgres(databaseUrlFor(base, template));
    // Clones need no connection to the template while they are made.
    await admin.end();
  } catch (error) {
    await bouncer?.stop();
    throw error;
  }
  project.provide('templateDatabase', template);
  if (bouncer) {
    console.log(`[test] the apps connect through PgBouncer in transaction mode (127.0.0.1:${bouncer.port})`);
    project.provide('pgbouncerPort', bouncer.port);
  }
  return async () => {
    await bouncer?.stop();
    const cleanup = new pg.Client({ connectionString: base });
    await cleanup.connect();
    await cleanup.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await cleanup.end();
  };
}
