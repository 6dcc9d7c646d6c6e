/**
 * Opens the configured database: the Prisma client over the right driver
 * adapter, migrations applied, statements counted (src/db/query-stats.ts).
 */
import { PrismaClient } from '../generated/prisma/client.js';
import { type AdapterOptions, type DatabaseTarget, describeTarget, openAdapter } from './adapter.js';
import { migrate } from './migrate.js';
import { countingFactory } from './query-stats.js';
import { preparedReader, type SqlReader, sqlReader } from './sql.js';
import { statementTimeoutNotice } from './transaction-pooling.js';

export type { DatabaseTarget } from './adapter.js';
export type Prisma = PrismaClient;

export interface Database {
  prisma: PrismaClient;
  /** raw reads on the same connections as `prisma`, prepared on PostgreSQL (src/db/sql.ts) */
  sql: SqlReader;
  target: DatabaseTarget;
  description: string;
  close(): Promise<void>;
}

export async function openDatabase(
  target: DatabaseTarget,
  options: { migrate?: boolean } & AdapterOptions = {},
): Promise<Database & { migrationLog: string; settingsNotice: string | null }> {
  const adapter = await openAdapter(target, {
    poolSize: options.poolSize,
    poolMode: options.poolMode,
    statementTimeoutMs: options.statementTimeoutMs,
    owner: options.owner,
  });
  let migrationLog = '';
  let settingsNotice: string | null = null;
  try {
    if (options.migrate) migrationLog = await migrate(target, { pglite: adapter.pglite, poolMode: options.poolMode });
    if (adapter.pool && options.poolMode === 'transaction')
      settingsNotice = await statementTimeoutNotice(adapter.pool, options.statementTimeoutMs ?? 0);
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
    target,
    description: describeTarget(target),
    migrationLog,
    settingsNotice,
    close: async () => {
      await prisma.$disconnect();
      await adapter.close();
    },
  };
}
