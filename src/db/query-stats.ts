/**
 * Counts the SQL statements and database time of one unit of work (an HTTP
 * request), for `SERVER_TIMING=1` and for the tests that prove batching.
 * The count is taken at the driver adapter, so it sees every statement
 * Prisma sends, raw SQL and transactions included.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type {
  SqlDriverAdapter,
  SqlMigrationAwareDriverAdapterFactory,
  SqlQueryable,
  Transaction,
} from '@prisma/driver-adapter-utils';

export interface QueryStats {
  queries: number;
  durationMs: number;
}

const storage = new AsyncLocalStorage<QueryStats>();

/** Runs `work` with a fresh statement counter and returns both. */
export async function withQueryStats<T>(work: () => Promise<T>): Promise<{ result: T; stats: QueryStats }> {
  const stats: QueryStats = { queries: 0, durationMs: 0 };
  const result = await storage.run(stats, work);
  return { result, stats };
}

/** Runs background work (not part of the request) without counting it against the request. */
export function outsideQueryStats<T>(work: () => T): T {
  return storage.exit(work);
}

export function currentQueryStats(): QueryStats | undefined {
  return storage.getStore();
}

function counted<Q extends SqlQueryable>(queryable: Q): Q {
  const time = async <R>(run: () => Promise<R>): Promise<R> => {
    const stats = storage.getStore();
    if (!stats) return run();
    const start = performance.now();
    try {
      return await run();
    } finally {
      stats.queries += 1;
      stats.durationMs += performance.now() - start;
    }
  };
  const queryRaw = queryable.queryRaw.bind(queryable);
  const executeRaw = queryable.executeRaw.bind(queryable);
  return Object.assign(queryable, {
    queryRaw: (query: Parameters<SqlQueryable['queryRaw']>[0]) => time(() => queryRaw(query)),
    executeRaw: (query: Parameters<SqlQueryable['executeRaw']>[0]) => time(() => executeRaw(query)),
  });
}

function countedAdapter(adapter: SqlDriverAdapter): SqlDriverAdapter {
  const startTransaction = adapter.startTransaction.bind(adapter);
  Object.assign(adapter, {
    startTransaction: async (...args: Parameters<SqlDriverAdapter['startTransaction']>): Promise<Transaction> =>
      counted(await startTransaction(...args)),
  });
  return counted(adapter);
}

/** Wraps an adapter factory so that every connection it makes is counted. */
export function countingFactory(factory: SqlMigrationAwareDriverAdapterFactory): SqlMigrationAwareDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect: async () => countedAdapter(await factory.connect()),
    connectToShadowDb: () => factory.connectToShadowDb(),
  };
}
