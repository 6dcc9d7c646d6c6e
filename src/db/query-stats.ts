/**
 * Counts the SQL statements and database time of one unit of work (an HTTP
 * request), for `SERVER_TIMING=1` and for the tests that prove batching.
 * The count is taken at the driver adapter, so it sees every statement
 * Prisma sends, raw SQL and transactions included. On request, the
 * statements themselves are recorded too (test/db/query-plans.test.ts
 * explains them).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type {
  SqlDriverAdapter,
  SqlMigrationAwareDriverAdapterFactory,
  SqlQuery,
  SqlQueryable,
  Transaction,
} from '@prisma/driver-adapter-utils';
import { sendingLargeParameters } from './large-parameters.js';

export interface QueryStats {
  queries: number;
  durationMs: number;
  /** the statements as sent (sql, args, arg types); only when recording */
  statements?: SqlQuery[];
}

const storage = new AsyncLocalStorage<QueryStats>();

/**
 * Runs `work` with a fresh statement counter and returns both. With
 * `record`, the statements are kept as well. A counter started inside a
 * recording one (the app's per-request counter inside a test's) records into
 * the same list, so a caller sees the statements of the requests it makes.
 */
export async function withQueryStats<T>(
  work: () => Promise<T>,
  options: { record?: boolean } = {},
): Promise<{ result: T; stats: QueryStats }> {
  const statements = options.record ? [] : storage.getStore()?.statements;
  const stats: QueryStats = { queries: 0, durationMs: 0, ...(statements && { statements }) };
  // Awaited inside: a lazy thenable (a Prisma query, `app.inject()`) starts when awaited.
  const result = await storage.run(stats, async () => await work());
  return { result, stats };
}

/** Runs `work` and returns the statements it sent, in order. */
export async function recordStatements<T>(work: () => Promise<T>): Promise<{ result: T; statements: SqlQuery[] }> {
  const { result, stats } = await withQueryStats(work, { record: true });
  return { result, statements: stats.statements ?? [] };
}

/** Runs background work (not part of the request) without counting it against the request. */
export function outsideQueryStats<T>(work: () => T): T {
  return storage.exit(work);
}

export function currentQueryStats(): QueryStats | undefined {
  return storage.getStore();
}

/** Runs one statement, counted (and recorded) against the current unit of work, if any. */
export async function countStatement<R>(query: SqlQuery, run: () => Promise<R>): Promise<R> {
  const stats = storage.getStore();
  if (!stats) return run();
  stats.statements?.push(query);
  const start = performance.now();
  try {
    return await run();
  } finally {
    stats.queries += 1;
    stats.durationMs += performance.now() - start;
  }
}

function counted<Q extends SqlQueryable>(queryable: Q): Q {
  const queryRaw = queryable.queryRaw.bind(queryable);
  const executeRaw = queryable.executeRaw.bind(queryable);
  return Object.assign(queryable, {
    queryRaw: (query: SqlQuery) => countStatement(query, () => sendingLargeParameters(query, queryRaw)),
    executeRaw: (query: SqlQuery) => countStatement(query, () => sendingLargeParameters(query, executeRaw)),
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
