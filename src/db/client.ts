/**
 * Opens the configured database: the Prisma client over the right driver
 * adapter, migrations applied, statements counted (src/db/query-stats.ts).
 */
import { PrismaClient } from '../generated/prisma/client.js';
import { type AdapterOptions, type DatabaseTarget, describeTarget, openAdapter } from './adapter.js';
import { migrate } from './migrate.js';
import { countingFactory } from './query-stats.js';
import { openReplicaSet, type ReplicaSet, type ReplicaSetOptions } from './replicas.js';
import { preparedReader, type SqlReader, sqlReader } from './sql.js';
import { statementTimeoutNotice } from './transaction-pooling.js';

export type { DatabaseTarget } from './adapter.js';
export type Prisma = PrismaClient;

export interface Database {
  prisma: PrismaClient;
  /** raw reads on the same connections as `prisma`, prepared on PostgreSQL (src/db/sql.ts) */
  sql: SqlReader;
  /** the read replicas (DATABASE_REPLICA_URLS, PostgreSQL only); null: none */
  replicas: ReplicaSet | null;
  target: DatabaseTarget;
  /** connections of the primary's pool (the embedded database: its one) */
  connections: number;
  description: string;
  close(): Promise<void>;
}

export async function openDatabase(
  target: DatabaseTarget,
  options: {
    migrate?: boolean;
    /** opened with the primary's pool size, pool mode and statement timeout */
    replicas?: { urls: readonly string[] } & Omit<ReplicaSetOptions, 'poolSize' | 'poolMode' | 'statementTimeoutMs'>;
  } & AdapterOptions = {},
): Promise<Database & { migrationLog: string; settingsNotice: string | null }> {
  const adapter = await openAdapter(target, {
    poolSize: options.poolSize,
    poolMode: options.poolMode,
    statementTimeoutMs: options.statementTimeoutMs,
    owner: options.owner,
    loadDataDir: options.loadDataDir,
  });
  let migrationLog = '';
  let settingsNotice: string | null = null;
  let replicas: ReplicaSet | null = null;
  try {
    if (options.migrate) migrationLog = await migrate(target, { pglite: adapter.pglite, poolMode: options.poolMode });
    if (adapter.pool && options.poolMode === 'transaction')
      settingsNotice = await statementTimeoutNotice(adapter.pool, options.statementTimeoutMs ?? 0);
    if (options.replicas?.urls.length) {
      if (!adapter.pool) throw new Error('read replicas need a PostgreSQL primary (DATABASE_URL)');
      replicas = await openReplicaSet(adapter.pool, options.replicas.urls, {
        ...options.replicas,
        poolSize: options.poolSize,
        poolMode: options.poolMode,
        statementTimeoutMs: options.statementTimeoutMs,
      });
    }
  } catch (error) {
    await adapter.close();
    throw error;
  }
  const counting = countingFactory(adapter.factory);
  const driver = await counting.connect();
  // Prisma and the SQL reader share one adapter, so one pool (or one PGlite).
  const prisma = new PrismaClient({ adapter: { ...counting, connect: async () => driver } });
  return {
    prisma,
    sql: adapter.pool
      ? preparedReader(adapter.pool, { unnamed: options.poolMode === 'transaction' })
      : sqlReader(driver),
    replicas,
    target,
    connections: adapter.pool?.options.max ?? 1,
    description: describeTarget(target),
    migrationLog,
    settingsNotice,
    close: async () => {
      await replicas?.close();
      await prisma.$disconnect();
      await adapter.close();
    },
  };
}
