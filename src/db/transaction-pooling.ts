/**
 * What the service does differently behind a transaction pooler
 * (DATABASE_POOL_MODE=transaction: PgBouncer, PgCat, Supavisor, RDS Proxy),
 * where consecutive statements of one client connection may run on different
 * server connections: nothing may rely on a server session. Settings sent in
 * the startup packet reach no particular server connection, so the service
 * sets `statement_timeout` in each transaction it opens, and checks at start
 * that the role's own setting covers the statements outside one
 * (docs/connection-poolers.md).
 */
import type {
  SqlDriverAdapter,
  SqlMigrationAwareDriverAdapterFactory,
  Transaction,
} from '@prisma/driver-adapter-utils';
import type pg from 'pg';

/** Every transaction Prisma opens through `factory` starts with `SET LOCAL statement_timeout`. */
export function withTransactionTimeout(
  factory: SqlMigrationAwareDriverAdapterFactory,
  statementTimeoutMs: number,
): SqlMigrationAwareDriverAdapterFactory {
  const setTimeout = { sql: `SET LOCAL statement_timeout = ${Math.trunc(statementTimeoutMs)}`, args: [], argTypes: [] };
  const connect = async (): Promise<SqlDriverAdapter> => {
    const adapter = await factory.connect();
    const startTransaction = adapter.startTransaction.bind(adapter);
    return Object.assign(adapter, {
      startTransaction: async (...args: Parameters<SqlDriverAdapter['startTransaction']>): Promise<Transaction> => {
        const transaction = await startTransaction(...args);
        try {
          await transaction.executeRaw(setTimeout);
        } catch (error) {
          // The adapter's rollback() only gives the connection back; the engine would have sent ROLLBACK.
          await transaction.executeRaw({ sql: 'ROLLBACK', args: [], argTypes: [] }).catch(() => {});
          await transaction.rollback();
          throw error;
        }
        return transaction;
      },
    });
  };
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    connect,
    connectToShadowDb: () => factory.connectToShadowDb(),
  };
}

/**
 * A line to print at start when the statements outside a transaction would
 * run without the timeout DB_STATEMENT_TIMEOUT_MS asks for: behind a
 * transaction pooler only the server's own setting (the role's, or the
 * pooler's connect query) applies to them. Null when it does.
 */
export async function statementTimeoutNotice(pool: pg.Pool, statementTimeoutMs: number): Promise<string | null> {
  if (!statementTimeoutMs) return null;
  const { rows } = await pool.query<{ ms: number }>(
    `SELECT setting::int AS ms FROM pg_settings WHERE name = 'statement_timeout'`,
  );
  const ms = rows[0]?.ms ?? 0;
  if (ms > 0 && ms <= statementTimeoutMs) return null;
  return (
    `DATABASE_POOL_MODE=transaction: statements outside a transaction run with the server's statement_timeout ` +
    `(${ms ? `${ms} ms` : 'none'}), not DB_STATEMENT_TIMEOUT_MS (${statementTimeoutMs} ms); set it for the role: ` +
    `ALTER ROLE <role> SET statement_timeout = ${statementTimeoutMs} (see docs/connection-poolers.md)`
  );
}
