/** PostgreSQL plans as `EXPLAIN (FORMAT JSON)` gives them, for tests of what a statement reads and how. */
import type { ArgType, SqlQuery } from '@prisma/driver-adapter-utils';
import pg from 'pg';

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Strategy?: string;
  Filter?: string;
  /** VERBOSE: what the node returns */
  Output?: string[];
  /** ANALYZE: rows returned a loop (on average), and the loops run (0: never executed) */
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  /** ANALYZE: rows read and dropped a loop (on average) */
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  /** BUFFERS: blocks of the node and all below it */
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

export type ExplainRow = { 'QUERY PLAN': [{ Plan: PlanNode }] };

/** The node and every node below it. */
export function* planNodes(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* planNodes(child);
}

/** What the pg adapter does to an argument before pg sees it (its `mapArg`), as far as pg cannot take it as is. */
export function pgValue(arg: unknown, type: ArgType | undefined): unknown {
  if (Array.isArray(arg)) return arg.map((value) => pgValue(value, type));
  if (typeof arg === 'string' && type?.scalarType === 'bytes') return Buffer.from(arg, 'base64');
  return arg;
}

/** A parameter as a SQL literal (strings, numbers and arrays of them: what the read statements take). */
export function sqlLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Array.isArray(value)) {
    return pg.escapeLiteral(`{${value.map((item) => `"${String(item).replace(/["\\]/g, '\\$&')}"`).join(',')}}`);
  }
  return pg.escapeLiteral(String(value));
}

/**
 * The plans of a recorded statement (a query): for its values, and the
 * generic plan a prepared statement runs. The client must have
 * `plan_cache_mode = force_generic_plan` for the second to be generic.
 */
export async function explainBoth(
  client: pg.Client,
  statement: SqlQuery,
): Promise<{ custom: PlanNode; generic: PlanNode }> {
  const values = statement.args.map((arg, i) => pgValue(arg, statement.argTypes[i]));
  const custom = await client.query<ExplainRow>(`EXPLAIN (FORMAT JSON) ${statement.sql}`, values);
  await client.query(`PREPARE explained AS ${statement.sql}`);
  try {
    const literals = values.map(sqlLiteral).join(', ');
    const generic = await client.query<ExplainRow>(
      `EXPLAIN (FORMAT JSON) EXECUTE explained${values.length ? `(${literals})` : ''}`,
    );
    const plan = (result: pg.QueryResult<ExplainRow>) => (result.rows[0] as ExplainRow)['QUERY PLAN'][0].Plan;
    return { custom: plan(custom), generic: plan(generic) };
  } finally {
    await client.query('DEALLOCATE explained');
  }
}
