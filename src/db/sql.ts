/**
 * Reads of the paths that run on every request, on the connections Prisma
 * itself uses (the same pg pool or PGlite instance), counted by
 * src/db/query-stats.ts.
 *
 * On PostgreSQL every statement is a named prepared statement
 * ({@link preparedReader}): the server parses and plans it once per pooled
 * connection, not on every request. The detail statement took 2.2 to 4.6 ms
 * to plan on each request before (bind in the server's log); prepared, a warm
 * connection skips that. PGlite runs the statements through the driver
 * adapter ({@link sqlReader}).
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
import type { Statement } from './kysely.js';
import { countStatement } from './query-stats.js';

export interface SqlReader {
  /** Runs a compiled statement (src/db/kysely.ts); rows are objects keyed by column name. */
  query<R>(statement: Statement<R>): Promise<R[]>;
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

/** Runs statements through a Prisma driver adapter (PGlite): unnamed, planned every time. */
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

/**
 * Runs statements on the pool as named prepared statements: one name per
 * distinct text (up to {@link MAX_PREPARED_STATEMENTS}), which node-postgres
 * prepares on a connection the first time that connection runs it.
 */
export function preparedReader(pool: pg.Pool): SqlReader {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_PREPARED_STATEMENTS) {
      name = `read_${names.size}`;
      names.set(text, name);
    }
    return name;
  };
  return {
    async query<R>(statement: Statement<R>): Promise<R[]> {
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
      const result = await countStatement(query, () =>
        pool.query({ name: nameOf(text), text, values, types: prismaTypes }),
      );
      return result.rows as R[];
    },
  };
}
