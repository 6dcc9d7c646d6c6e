/**
 * Once per `npm test`: with TEST_DATABASE_URL, migrates a template database
 * through `prisma migrate deploy` (so every run exercises the real CLI on
 * PostgreSQL); each test file then clones it (test/helpers/database.ts).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migratePostgres } from '../src/db/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string | null;
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
  if (!base) {
    project.provide('templateDatabase', null);
    return;
  }
  const template = `mg_template_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${template}`);
  await migratePostgres(databaseUrlFor(base, template));
  // Clones need no connection to the template while they are made.
  await admin.end();
  project.provide('templateDatabase', template);
  return async () => {
    const cleanup = new pg.Client({ connectionString: base });
    await cleanup.connect();
    await cleanup.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await cleanup.end();
  };
}
