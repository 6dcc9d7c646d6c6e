/**
 * A named prepared statement that asks PostgreSQL to describe its rows once
 * per connection, not on every run.
 *
 * node-postgres sends Bind, Describe (portal), Execute and Sync for every run
 * of a prepared statement, so the server sends a RowDescription each time
 * (a name and six numbers per column) and the client parses it and builds the
 * row parsers again. For a point read that is most of what the client does
 * besides the row itself: measured under the contract route, the
 * description's parse and the parsers it builds were 15% of everything the
 * service allocated. A named statement's rows cannot change shape while it
 * stays prepared (PostgreSQL refuses to run it then: "cached plan must not
 * change result type"), so the first run's description is kept for the
 * connection, and later runs send Bind, Execute and Sync only and read their
 * rows with it. The description is kept by connection, so a connection that
 * is closed takes it along.
 *
 * This rests on node-postgres's Query internals (`prepare`, `_result`,
 * `_getRows`), which its typings do not declare; test/db/described-query.test.ts
 * checks the messages sent and the rows read against a real PostgreSQL.
 */
import pg from 'pg';

/** The rows of one statement on one connection, as its RowDescription gave them. */
interface RowShape {
  fields: unknown[];
  parsers: unknown[];
  empty: object;
}

/** node-postgres's wire connection, as far as a query uses it. */
interface Connection {
  parsedStatements: Record<string, string>;
  bind(config: object): void;
  close(config: { type: 'S'; name: string }): void;
  sync(): void;
}

/** The parts of node-postgres's Query (lib/query.js) this relies on. */
interface QueryInternals {
  name?: string;
  portal: string;
  values?: unknown[];
  binary?: boolean;
  rows?: number;
  _result: { fields: unknown[]; _parsers?: unknown[]; _prebuiltEmptyResultObject: object | null };
  _accumulateRows: boolean;
  _getRows(connection: Connection, rows: number | undefined): void;
  handleError(error: unknown, connection: Connection): void;
}

const QueryBase = pg.Query as unknown as new (
  config: pg.QueryConfig,
  callback: (error: Error | undefined, result: pg.QueryResult) => void,
) => pg.Query & { prepare(connection: Connection): void; handleRowDescription(message: object): void };

/** node-postgres's own encoding of a parameter (`utils.prepareValue`, which its types do not declare). */
export const prepareValue = (pg as unknown as { utils: { prepareValue(value: unknown): unknown } }).utils.prepareValue;

const shapes = new WeakMap<Connection, Map<string, RowShape>>();

class DescribedQuery extends QueryBase {
  private connection: Connection | undefined;

  override prepare(connection: Connection): void {
    const query = this as unknown as QueryInternals;
    const { name } = query;
    const shape =
      name && connection.parsedStatements[name] !== undefined ? shapes.get(connection)?.get(name) : undefined;
    if (!name || !shape) {
      // Its first run on this connection: Parse (if needed), Bind, Describe, Execute, Sync.
      this.connection = connection;
      super.prepare(connection);
      return;
    }
    try {
      connection.bind({
        portal: query.portal,
        statement: name,
        values: query.values,
        binary: query.binary,
        valueMapper: prepareValue,
      });
    } catch (error) {
      // As node-postgres does: a value it cannot encode fails this statement, which is closed.
      connection.close({ type: 'S', name });
      connection.sync();
      query.handleError(error, connection);
      return;
    }
    const result = query._result;
    result.fields = shape.fields;
    result._parsers = shape.parsers;
    result._prebuiltEmptyResultObject = shape.empty;
    query._accumulateRows = true;
    query._getRows(connection, query.rows);
  }

  override handleRowDescription(message: object): void {
    super.handleRowDescription(message);
    const { name, _result: result } = this as unknown as QueryInternals;
    const connection = this.connection;
    if (!name || !connection || !result._parsers || !result._prebuiltEmptyResultObject) return;
    let byName = shapes.get(connection);
    if (!byName) {
      byName = new Map();
      shapes.set(connection, byName);
    }
    byName.set(name, { fields: result.fields, parsers: result._parsers, empty: result._prebuiltEmptyResultObject });
  }
}

/**
 * Runs `config` on `client`; a named statement is described on its first run
 * on the client's connection only. Settles as `client.query(config)` does.
 */
export function queryDescribedOnce(client: pg.ClientBase, config: pg.QueryConfig): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    client.query(
      new DescribedQuery(config, (error, result) => {
        if (error) reject(error);
        else resolve(result);
      }),
    );
  });
}
