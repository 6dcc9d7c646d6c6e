/**
 * Reads of the paths that run on every request, on the connections Prisma
 * itself uses (the same pg pool or PGlite instance), counted by
 * src/db/query-stats.ts.
 *
 * On PostgreSQL every statement is a named prepared statement
 * ({@link preparedReader}): the server parses and plans it once per pooled
 * connection, not on every request. The detail statement took 2.2 to 4.6 ms
 * to plan on each request before (bind in the server's log); prepared, a warm
 * connection skips that, and asks for the rows' description once per
 * connection too (src/db/described-query.ts). PGlite runs the statements through the driver
 * adapter ({@link sqlReader}). Behind a transaction pooler
 * (DATABASE_POOL_MODE=transaction) a connection's next statement may run on
 * another server connection, which never saw the prepared one: there the
 * statements are unnamed, parsed and planned on every run.
 *
 * Prisma's `$queryRaw` sends the same SQL through the same adapter, then
 * re-encodes and decodes every value for its engine: measured here, about
 * 0.2 ms of CPU more per statement and 2 µs more per value (a page of 20
 * metrics: 1.1 ms against 0.45 ms). Values are decoded as `$queryRaw` would
 * decode them (timestamps as Dates, JSON parsed, 64-bit and numeric values as
 * numbers); test/db/metric-rows.test.ts holds the rows equal to Prisma's own.
 */
import {
  type ArgScalarType,
  type ArgType,
  ColumnTypeEnum,
  type SqlQueryable,
  type SqlResultSet,
} from '@prisma/driver-adapter-utils';
import pg from 'pg';
import { prepareValue, queryDescribedOnce } from './described-query.js';
import type { Statement } from './kysely.js';
import { countStatement } from './query-stats.js';

export interface ReadOptions {
  /**
   * The statement finds its rows by key or id through an index, so it is
   * cheap whatever the registry's size: it may share a batch with others of
   * its text ({@link preparedReader}). Any other statement is sent alone.
   */
  pointRead?: boolean;
}

/** The options of a point read. */
export const POINT_READ: ReadOptions = { pointRead: true };

export interface SqlReader {
  /** Runs a compiled statement (src/db/kysely.ts); rows are objects keyed by column name. */
  query<R>(statement: Statement<R>, options?: ReadOptions): Promise<R[]>;
}

function scalarType(value: unknown): ArgScalarType {
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  if (typeof value === 'boolean') return 'boolean';
  if (value instanceof Date) return 'datetime';
  return 'unknown';
}

function argType(value: unknown): ArgType {
  if (Array.isArray(value)) return { scalarType: scalarType(value[0]), arity: 'list' };
  return { scalarType: scalarType(value), arity: 'scalar' };
}

type Decode = (value: unknown) => unknown;

const asDate: Decode = (value) => (value === null ? null : new Date(value as string));
const asJson: Decode = (value) => (typeof value === 'string' ? JSON.parse(value) : value);
const asNumber: Decode = (value) => (value === null ? null : Number(value));

function decoder(type: SqlResultSet['columnTypes'][number]): Decode | null {
  switch (type) {
    case ColumnTypeEnum.DateTime:
    case ColumnTypeEnum.Date:
      return asDate;
    case ColumnTypeEnum.Json:
      return asJson;
    case ColumnTypeEnum.Int64:
    case ColumnTypeEnum.Numeric:
      return asNumber;
    default:
      return null;
  }
}

/** Runs statements through a Prisma driver adapter (PGlite): unnamed, planned every time, one at a time. */
export function sqlReader(driver: SqlQueryable): SqlReader {
  return {
    async query<R>(statement: Statement<R>): Promise<R[]> {
      const args = [...statement.parameters];
      const result = await driver.queryRaw({ sql: statement.sql, args, argTypes: args.map(argType) });
      const { columnNames } = result;
      const decoders = result.columnTypes.map(decoder);
      return result.rows.map((values) => {
        const row: Record<string, unknown> = {};
        for (let i = 0; i < columnNames.length; i++) {
          const decode = decoders[i];
          row[columnNames[i] as string] = decode ? decode(values[i]) : values[i];
        }
        return row as R;
      });
    },
  };
}

/**
 * Distinct statements one pool prepares, at most. The texts are built from a
 * few fixed pieces (filters, the parts a selection asks for, the columns of a
 * GraphQL selection), but a client choosing its own GraphQL selections could
 * make many; past this many, a new text runs unnamed (planned every time, as
 * before), so no client makes a connection hold more than this many plans.
 */
export const MAX_PREPARED_STATEMENTS = 256;

/** pg's text parsers, except those that differ from the values `$queryRaw` gives. */
const PRISMA_PARSERS: Partial<Record<number, (value: string) => unknown>> = {
  [pg.types.builtins.INT8]: Number,
  [pg.types.builtins.NUMERIC]: Number,
};
const prismaTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    PRISMA_PARSERS[oid] ?? pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** A statement waiting for the next batch. */
interface Waiting {
  name: string | undefined;
  /** may share a batch with others of its text */
  batched: boolean;
  text: string;
  values: unknown[];
  resolve(result: pg.QueryResult): void;
  reject(error: unknown): void;
}

/**
 * Statements one batch sends at most. A batch runs in order on one
 * connection, so its last statement waits for the others; past this, a
 * turn's point reads of one text go out as several batches, on as many
 * connections.
 */
export const MAX_BATCH = 16;

/**
 * The socket under a pooled client: node-postgres gives no public handle
 * to it, but a batch corks it so that its statements leave in one write.
 */
function socketOf(client: pg.PoolClient): { cork(): void; uncork(): void } {
  return (client as unknown as { connection: { stream: { cork(): void; uncork(): void } } }).connection.stream;
}

/**
 * Runs statements on the pool as named prepared statements: one name per
 * distinct text (up to {@link MAX_PREPARED_STATEMENTS}), which node-postgres
 * prepares on a connection the first time that connection runs it.
 *
 * The point reads of one event-loop turn (those of every request that
 * reached the database in it: key lookups, metrics by id) travel together, a
 * batch per statement text: one pooled connection in node-postgres's
 * pipeline mode (the pool opens its connections with it) and one write for
 * the batch. Each statement keeps its own Sync, so each runs and fails on its
 * own, as it would alone. A write to the database costs the process (and
 * PostgreSQL, reading it) more CPU than anything else a point read does;
 * under load, many requests share each one. A batch runs in order, so it
 * holds one text only, and point reads only: a statement whose time grows
 * with the data (a search, a page) is sent alone, as is a text past
 * {@link MAX_PREPARED_STATEMENTS}, so none waits behind another. A statement
 * waits only for the end of the turn it was sent in (setImmediate).
 *
 * `unnamed`: no statement is prepared (behind a transaction pooler); point
 * reads are batched all the same, each with its own Sync, which PgBouncer
 * 1.18 in transaction mode passes through (test/scale-out/pgbouncer.test.ts).
 */
export function preparedReader(pool: pg.Pool, options: { unnamed?: boolean } = {}): SqlReader {
  const unnamed = options.unnamed === true;
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    if (unnamed) return undefined;
    let name = names.get(text);
    if (name === undefined && names.size < MAX_PREPARED_STATEMENTS) {
      name = `read_${names.size}`;
      names.set(text, name);
    }
    return name;
  };
  let waiting: Waiting[] = [];
  const send = async (batch: Waiting[]) => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      for (const statement of batch) statement.reject(error);
      return;
    }
    let failure: unknown;
    // A connection lost mid-batch fails its statements (node-postgres does that) and is closed.
    const lost = (error: Error) => {
      failure ??= error;
    };
    client.on('error', lost);
    const socket = socketOf(client);
    socket.cork();
    const runs = batch.map(({ name, text, values, resolve, reject }) =>
      queryDescribedOnce(client, { name, text, values, types: prismaTypes }).then(resolve, (error: unknown) => {
        failure ??= error;
        reject(error);
      }),
    );
    socket.uncork();
    await Promise.all(runs);
    client.off('error', lost);
    // As pg-pool's own query() does: a connection whose statement failed is closed, not reused.
    client.release(failure instanceof Error ? failure : undefined);
  };
  const flush = () => {
    const byText = new Map<string, Waiting[]>();
    for (const statement of waiting) {
      if (!statement.batched) {
        void send([statement]);
        continue;
      }
      const same = byText.get(statement.text);
      if (same) same.push(statement);
      else byText.set(statement.text, [statement]);
    }
    waiting = [];
    for (const statements of byText.values()) {
      for (let start = 0; start < statements.length; start += MAX_BATCH) {
        void send(statements.slice(start, start + MAX_BATCH));
      }
    }
  };
  return {
    async query<R>(statement: Statement<R>, readOptions: ReadOptions = {}): Promise<R[]> {
      const { sql: text, parameters } = statement;
      const values = [...parameters];
      // As recorded for tests (src/db/query-stats.ts); the types are worked out only when read.
      const query = {
        sql: text,
        args: values,
        get argTypes() {
          return values.map(argType);
        },
      };
      const result = await countStatement(
        query,
        () =>
          new Promise<pg.QueryResult>((resolve, reject) => {
            // A batch encodes each statement's parameters (as node-postgres would) before it sends
            // any: a value that cannot be encoded would fail at Bind, after its Parse went out, and
            // the Close then sent would drop the prepared statement under the rest of the batch.
            // This throws instead, and so fails this statement alone.
            const encoded = values.map((value) => prepareValue(value));
            if (waiting.length === 0) setImmediate(flush);
            const name = nameOf(text);
            waiting.push({
              name,
              batched: readOptions.pointRead === true && (name !== undefined || unnamed),
              text,
              values: encoded,
              resolve,
              reject,
            });
          }),
      );
      return result.rows as R[];
    },
  };
}
