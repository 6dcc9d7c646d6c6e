/**
 * Bulk writes of many rows in few statements, for the registry's applies
 * (src/registry/apply.ts) and the fixture loader (src/fixtures/load.ts):
 * rows go to the database as one JSON parameter per chunk, which
 * jsonb_populate_recordset reads as the table's records. Far less memory
 * and time than Prisma's createMany, whose query engine turns each value
 * into a bound parameter of its own (50 a metric row) before the first
 * statement leaves.
 */
import { Prisma } from '../generated/prisma/client.js';
import { withLargeParameter } from './large-parameters.js';

/** Rows a statement carries at most: one JSON parameter of about a megabyte. */
export const BULK_CHUNK = 1000;

type Tx = Prisma.TransactionClient;
export type BulkRow = Record<string, unknown>;

/** Runs one statement of a bulk write: the apply paces them, the loader runs them as they come. */
export type StatementRunner = <T>(statement: () => Promise<T>) => Promise<T>;

const unpaced: StatementRunner = (statement) => statement();

export function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += BULK_CHUNK) out.push(rows.slice(i, i + BULK_CHUNK));
  return out;
}

/** The table's column of a model field (the schema maps each field to its snake_case). */
export const column = (field: string) => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/**
 * Rows as JSON the database reads into its table's record type: members
 * named as the columns, SQL NULL for Prisma's null markers.
 */
export function rowJson(rows: readonly BulkRow[]): string {
  return JSON.stringify(
    rows.map((row) => Object.fromEntries(Object.entries(row).map(([field, value]) => [column(field), value]))),
    (_key, value: unknown) => (value === Prisma.DbNull || value === Prisma.JsonNull ? null : value),
  );
}

/**
 * Runs `sql`, whose `$1` is `json` (rows of {@link rowJson}): the value goes
 * to the driver past Prisma's client (src/db/large-parameters.ts).
 */
export function bulkStatement(tx: Tx, sql: string, json: string): Promise<number> {
  return withLargeParameter(json, (parameter) => tx.$executeRawUnsafe(sql, parameter));
}

/**
 * Inserts rows (Prisma create inputs of the table's model, all with the
 * fields of the first) in one statement per chunk, and says how many.
 * Columns the rows leave out take their database default; a field Prisma
 * fills in itself (an `@default(uuid())` id) must be given. `rows` is read
 * a chunk at a time: a generator's rows are made just before their
 * statement (the fixture loader's), not all held at once.
 */
export async function insertRows(
  tx: Tx,
  table: string,
  rows: Iterable<BulkRow>,
  run: StatementRunner = unpaced,
): Promise<number> {
  let columns = '';
  let chunk: BulkRow[] = [];
  let count = 0;
  const flush = async () => {
    const json = rowJson(chunk);
    count += chunk.length;
    chunk = [];
    await run(() =>
      bulkStatement(
        tx,
        `INSERT INTO "${table}" (${columns}) SELECT ${columns} FROM jsonb_populate_recordset(NULL::"${table}", $1::jsonb)`,
        json,
      ),
    );
  };
  for (const row of rows) {
    if (!columns) {
      columns = Object.keys(row)
        .map((field) => `"${column(field)}"`)
        .join(', ');
    }
    chunk.push(row);
    if (chunk.length === BULK_CHUNK) await flush();
  }
  if (chunk.length > 0) await flush();
  return count;
}
