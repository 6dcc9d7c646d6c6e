/**
 * Opens the configured database: the Prisma client over the right driver
 * adapter, migrations applied, statements counted (src/db/query-stats.ts).
 */
import { PrismaClient } from '../generated/prisma/client.js';
import { type DatabaseTarget, describeTarget, openAdapter } from './adapter.js';
import { migrate } from './migrate.js';
import { countingFactory } from './query-stats.js';

export type { DatabaseTarget } from './adapter.js';
export type Prisma = PrismaClient;

export interface Database {
  prisma: PrismaClient;
  target: DatabaseTarget;
  description: string;
  close(): Promise<void>;
}

export async function openDatabase(
  target: DatabaseTarget,
  options: { migrate?: boolean; poolSize?: number } = {},
): Promise<Database & { migrationLog: string }> {
  const adapter = await openAdapter(target, { poolSize: options.poolSize });
  let migrationLog = '';
  try {
    if (options.migrate) migrationLog = await migrate(target, adapter.pglite);
  } catch (error) {
    await adapter.close();
    throw error;
  }
  const prisma = new PrismaClient({ adapter: countingFactory(adapter.factory) });
  return {
    prisma,
    target,
    description: describeTarget(target),
    migrationLog,
    close: async () => {
      await prisma.$disconnect();
      await adapter.close();
    },
  };
}
