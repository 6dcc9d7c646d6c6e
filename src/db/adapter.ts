/**
 * Which database the service talks to, and the Prisma driver adapter for it.
 * Used by the running service and by prisma.config.ts (so that the Prisma
 * CLI migrates exactly the database the service would open).
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { PrismaPg } from '@prisma/adapter-pg';
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { claimEmbeddedDatabase } from './owner-lock.js';
import { releasingFailedTransactions } from './transaction-end.js';
import { withTransactionTimeout } from './transaction-pooling.js';

/**
 * The Prisma CLI reads `url = env("DATABASE_URL")` and falls back to
 * downloading engine binaries when it is not a valid postgresql:// URL, so in
 * embedded mode DATABASE_URL holds this placeholder. It never names a server.
 */
export const EMBEDDED_DATABASE_URL = 'postgresql://embedded@localhost/pglite';

export type DatabaseTarget =
  | { kind: 'postgres'; url: string }
  | { kind: 'embedded'; dataDir: string | null /* null: in memory */ };

export function databaseTarget(databaseUrl: string | undefined, dataDir: string): DatabaseTarget {
  if (databaseUrl && databaseUrl !== EMBEDDED_DATABASE_URL) return { kind: 'postgres', url: databaseUrl };
  return { kind: 'embedded', dataDir: resolve(dataDir, 'pglite') };
}

export function describeTarget(target: DatabaseTarget): string {
  if (target.kind === 'embedded') return `embedded PostgreSQL (PGlite) at ${target.dataDir ?? 'memory'}`;
  const url = new URL(target.url);
  return `PostgreSQL at ${url.host}${url.pathname}`;
}

/** Opens an embedded database; pg_trgm is loaded for search. */
export async function openPGlite(dataDir: string | null, loadDataDir?: Blob): Promise<PGlite> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  return PGlite.create({
    ...(dataDir ? { dataDir } : {}),
    ...(loadDataDir ? { loadDataDir } : {}),
    extensions: { pg_trgm },
  });
}

export interface OpenAdapter {
  factory: SqlMigrationAwareDriverAdapterFactory;
  close(): Promise<void>;
  /** the embedded database itself, for migrations */
  pglite?: PGlite;
  /** the server's connection pool, shared by Prisma and the prepared reads (src/db/sql.ts) */
  pool?: pg.Pool;
}

/**
 * How the server end of DATABASE_URL hands out sessions: `session` (PostgreSQL itself, or a pooler
 * that gives a client one server connection for as long as it stays connected) or `transaction` (a
 * pooler such as PgBouncer in transaction mode, which gives one for a transaction or a statement
 * only). docs/connection-poolers.md says what changes.
 */
export type PoolMode = 'session' | 'transaction';

export interface AdapterOptions {
  poolSize?: number;
  /** default: session */
  poolMode?: PoolMode;
  /**
   * PostgreSQL `statement_timeout` of every session of the pool (0 or unset: none): a statement
   * running longer is cancelled by the server, which fails it and frees its connection. Set by the
   * service (DB_STATEMENT_TIMEOUT_MS), not by migrations. PGlite runs statements on the calling
   * thread and does not apply it. Behind a transaction pooler it is set in each transaction the
   * service opens (`SET LOCAL`), and statements outside one have the role's (src/db/transaction-pooling.ts).
   */
  statementTimeoutMs?: number;
  /** who opens an embedded database, named to a second opener that is refused (src/db/owner-lock.ts) */
  owner?: string;
  /**
   * An embedded database starts as this copy of another's data directory (PGlite `dumpDataDir`)
   * instead of an empty one: the tests' migrated template, which spares each test file initdb.
   */
  loadDataDir?: Blob;
}

/** Settings sent in the startup packet, so they hold for every statement of every pooled connection. */
function sessionSettings(options: AdapterOptions): pg.PoolConfig {
  return {
    ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    // A prepared statement is planned once per connection, for any values (src/db/sql.ts): left to
    // choose, PostgreSQL re-plans a statement whose generic plan it estimates dearer on every
    // execution (list pages: OFFSET and LIMIT). test/db/query-plans.test.ts explains the generic
    // plans of every route at 100,000 metrics. No parallel workers: a generic plan for an unknown
    // LIMIT chose them for a page of 100, and starting one cost 30 ms of a 58 ms statement; a
    // request's statements are small, and the other requests need the cores. No JIT compilation:
    // over 100,000 metrics PostgreSQL estimates a page of 1,000 verdicts (the sweep) dear enough to
    // compile, inline and optimise it, 500 ms of a 700 ms statement, never won back by statements
    // that read a page.
    options: '-c plan_cache_mode=force_generic_plan -c max_parallel_workers_per_gather=0 -c jit=off',
  };
}

/**
 * A pool of connections to a PostgreSQL server, as the service opens every one of its servers
 * (the primary, and each read replica: src/db/replicas.ts).
 */
export function openPool(
  url: string,
  options: Omit<AdapterOptions, 'owner'> & {
    /** the client gives up on a statement after this long (a server that stopped answering); default never */
    queryTimeoutMs?: number;
  } = {},
): pg.Pool {
  const transactionPooled = options.poolMode === 'transaction';
  return new pg.Pool({
    ...(options.queryTimeoutMs ? { query_timeout: options.queryTimeoutMs } : {}),
    connectionString: url,
    max: options.poolSize ?? 10,
    // waiting for a pooled connection fails after this long rather than queueing forever
    connectionTimeoutMillis: 5000,
    // A connection takes several statements at once (the SQL reader's batches, src/db/sql.ts). Each
    // keeps its own Sync, so a transaction pooler (PgBouncer 1.18 tested) may hand each to another
    // server connection: test/scale-out/pgbouncer.test.ts runs the batches through one.
    pipeline: true,
    // Behind a transaction pooler the startup packet reaches no particular server connection (and
    // PgBouncer refuses `options`): the settings are the role's there (docs/connection-poolers.md).
    ...(transactionPooled ? {} : sessionSettings(options)),
  });
}

export async function openAdapter(target: DatabaseTarget, options: AdapterOptions = {}): Promise<OpenAdapter> {
  if (target.kind === 'postgres') {
    const transactionPooled = options.poolMode === 'transaction';
    const pool = openPool(target.url, options);
    // Prisma's $disconnect() ends the pool (and the Prisma CLI's, so that it exits).
    const factory = new PrismaPg(pool, { disposeExternalPool: true });
    return {
      factory: releasingFailedTransactions(
        transactionPooled && options.statementTimeoutMs
          ? withTransactionTimeout(factory, options.statementTimeoutMs)
          : factory,
      ),
      pool,
      close: async () => (pool.ended ? undefined : pool.end()),
    };
  }
  const release = target.dataDir ? claimEmbeddedDatabase(target.dataDir, options.owner ?? 'another process') : () => {};
  let pglite: PGlite;
  try {
    pglite = await openPGlite(target.dataDir, options.loadDataDir);
  } catch (error) {
    release();
    throw error;
  }
  // pglite-prisma-adapter is built against driver-adapter-utils 6.10, whose
  // types differ only nominally from the 6.19 ones the client uses.
  const factory = new PrismaPGlite(pglite) as unknown as SqlMigrationAwareDriverAdapterFactory;
  return {
    factory,
    pglite,
    close: async () => {
      if (!pglite.closed) await pglite.close();
      release();
    },
  };
}
