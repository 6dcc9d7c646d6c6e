/**
 * Which server a request's reads go to when read replicas are configured
 * (src/db/replicas.ts): a replica of the read set, chosen once per request,
 * else the primary. Writes, and everything in a transaction, use Prisma on
 * the primary and never come here.
 *
 * A request's route moves to the primary, for the rest of the request, when:
 * - its replica fails a read: that read is run once more on the primary (and
 *   the replica leaves the read set), so a replica going away is no 5xx;
 * - its organization wrote within WRITE_MARK_TTL_MS and the replica has not
 *   replayed that write yet ({@link ReadRoute.settle}, src/db/write-marks.ts);
 * - the client has seen a state the replica may not have: a conditional GET
 *   whose tag the replica's version does not match (src/rest/routes.ts), or
 *   any state a caller can test ({@link ReadRoute.atLeast}).
 * Once on the primary a request never goes back, so what it reads never
 * goes back in time either.
 */
import type { Statement } from './kysely.js';
import type { Replica, ReplicaSet } from './replicas.js';
import type { ReadOptions, SqlReader } from './sql.js';
import type { WriteMarks } from './write-marks.js';

/**
 * Errors of the statement itself (data exceptions, integrity, syntax or
 * access): the primary would fail it alike, so it is not run again there.
 * Any other failure on a replica (connection lost or refused, shutdown,
 * a conflict with recovery, a timeout) is.
 */
function statementAtFault(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^(22|23|42)/.test(code);
}

export class ReadRoute {
  private replica: Replica | null;
  private replicaRead = false;
  readonly sql: SqlReader;

  constructor(
    private readonly primary: SqlReader,
    private readonly routing: ReadRouting,
  ) {
    this.replica = routing.replicas.pick();
    this.sql = {
      query: <R>(statement: Statement<R>, options?: ReadOptions): Promise<R[]> => {
        const replica = this.replica;
        if (!replica) return this.primary.query(statement, options);
        this.replicaRead = true;
        return replica.reader.query(statement, options).catch((error: unknown) => {
          if (statementAtFault(error)) throw error;
          this.routing.replicas.failed(replica, error);
          this.replica = null;
          return this.primary.query(statement, options);
        });
      },
    };
  }

  /** The replica this request reads from; null: the primary. */
  get onReplica(): boolean {
    return this.replica !== null;
  }

  /** Whether a read of this request ran on a replica (then switching to the primary means reading it again). */
  get readFromReplica(): boolean {
    return this.replicaRead;
  }

  /** The rest of this request reads from the primary. */
  usePrimary(): void {
    this.replica = null;
  }

  /**
   * Once the request's organization is known: moves to the primary when the
   * replica has not replayed that organization's last write (within
   * WRITE_MARK_TTL_MS). False when it moved after a replica read already ran
   * for the request (the caller reads that again, on the primary).
   */
  async settle(orgId: string): Promise<boolean> {
    const replica = this.replica;
    if (!replica) return true;
    const mark = await this.routing.marks.get(orgId);
    if (mark === null || (replica.replayLsn !== null && replica.replayLsn >= mark)) return true;
    this.replica = null;
    return !this.replicaRead;
  }

  /**
   * The reader of a state the client has seen: the replica's when `probe`
   * (run on it) says it has that state, else the primary's. A change feed
   * asks with the cursor a client presents: `probe` reads the replica's
   * latest `seq` of the organization and compares.
   */
  async atLeast(probe: (sql: SqlReader) => Promise<boolean>): Promise<SqlReader> {
    if (this.replica && !(await probe(this.sql).catch(() => false))) this.replica = null;
    return this.sql;
  }
}

export class ReadRouting {
  private readonly routes = new WeakMap<object, ReadRoute>();

  constructor(
    private readonly primary: SqlReader,
    readonly replicas: ReplicaSet,
    readonly marks: WriteMarks,
  ) {}

  /** The route of one request (`owner`: the request), made on its first read. */
  routeOf(owner: object): ReadRoute {
    let route = this.routes.get(owner);
    if (!route) {
      route = new ReadRoute(this.primary, this);
      this.routes.set(owner, route);
    }
    return route;
  }

  /** After a write of `orgId` committed on the primary: its reads wait for the replicas to replay it. */
  async noteWrite(orgId: string): Promise<void> {
    await this.marks.note(orgId, await this.replicas.primaryLsn());
  }

  /** Closes the marks' Redis connection; the replicas are the database's (src/db/client.ts). */
  async close(): Promise<void> {
    await this.marks.close();
  }
}
