/**
 * A transaction whose end fails still gives its connection back to the pool.
 *
 * Prisma ends a transaction of a driver adapter by sending COMMIT or ROLLBACK
 * itself and then calling the adapter's commit() or rollback(), which only
 * release the connection (@prisma/adapter-pg). When that COMMIT or ROLLBACK
 * fails (the server went away mid-transaction) Prisma never calls them: the
 * connection stays checked out of the pool for good, and every outage during
 * a write leaves the pool one connection smaller until no request is served.
 * Releasing it here lets the pool drop it (a connection that failed is no
 * longer queryable, and node-postgres's pool removes such a client) and open
 * a new one once the server is back. After a failed COMMIT or ROLLBACK the
 * server has ended the transaction either way.
 */
import type {
  SqlDriverAdapter,
  SqlMigrationAwareDriverAdapterFactory,
  SqlQuery,
  Transaction,
} from '@prisma/driver-adapter-utils';

const ENDS = new Set(['COMMIT', 'ROLLBACK']);

function releasedOnFailedEnd(transaction: Transaction): Transaction {
  const executeRaw = transaction.executeRaw.bind(transaction);
  return Object.assign(transaction, {
    executeRaw: async (query: SqlQuery) => {
      try {
        return await executeRaw(query);
      } catch (error) {
        if (ENDS.has(query.sql.trim().toUpperCase())) await transaction.rollback().catch(() => {});
        throw error;
      }
    },
  });
}

export function releasingFailedTransactions(
  factory: SqlMigrationAwareDriverAdapterFactory,
): SqlMigrationAwareDriverAdapterFactory {
  const connect = async (): Promise<SqlDriverAdapter> => {
    const adapter = await factory.connect();
    const startTransaction = adapter.startTransaction.bind(adapter);
    return Object.assign(adapter, {
      startTransaction: async (...args: Parameters<SqlDriverAdapter['startTransaction']>): Promise<Transaction> =>
        releasedOnFailedEnd(await startTransaction(...args)),
    });
  };
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect,
    connectToShadowDb: () => factory.connectToShadowDb(),
  };
}
