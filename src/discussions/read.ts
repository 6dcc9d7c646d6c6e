/**
 * Threads, messages and challenges as the API shows them: what a write
 * returns and what the product lists. Every read is of the caller's
 * organization only (joined to its metric). A page of threads is two
 * statements (the total, the page), and the first messages of every thread
 * on it one more.
 */
import { type RawBuilder, sql } from 'kysely';
import { compile, type Statement } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
import type { Prisma } from '../generated/prisma/client.js';

/**
 * Where a read runs: the request's SQL reader (GraphQL, the pages: prepared statements, and a
 * replica where the request may read one), or a writer's transaction (what a write returns).
 */
type Db = SqlReader | Pick<Prisma.TransactionClient, '$queryRawUnsafe'>;

function rowsOf<R>(db: Db, statement: Statement<R>): Promise<R[]> {
  return 'query' in db ? db.query(statement) : db.$queryRawUnsafe<R[]>(statement.sql, ...statement.parameters);
}

async function firstOf<R>(db: Db, query: RawBuilder<R>): Promise<R | null> {
  const [row] = await rowsOf(db, compile(query));
  return row ?? null;
}

/** Who wrote, resolved, raised or decided something: a user by display name, or a bot's service token by name. */
export interface DiscussionAuthor {
  kind: 'user' | 'service_token';
  id: string;
  displayName: string;
}

export interface ThreadRow {
  id: string;
  metricId: string;
  intent: string;
  title: string;
  resolutionStatus: 'open' | 'resolved';
  createdAt: Date;
  /** null for a thread loaded without an author */
  author: DiscussionAuthor | null;
  resolvedAt: Date | null;
  resolvedBy: DiscussionAuthor | null;
  /** its messages, deleted ones included (they are listed, without their body) */
  messageCount: number;
  /** read as one of a page of threads: it lists fewer messages a page (MAX_LISTED_MESSAGES) */
  listed?: boolean;
}

export interface MessageRow {
  id: string;
  threadId: string;
  metricId: string;
  /** the thread's intent */
  intent: string;
  /** null only for an author that is gone */
  author: DiscussionAuthor | null;
  /** null once deleted: a deleted message is listed in its place, its body no longer served */
  body: string | null;
  createdAt: Date;
  editedAt: Date | null;
  deletedAt: Date | null;
  pinnedAt: Date | null;
  pinnedBy: DiscussionAuthor | null;
}

export interface ChallengeRow {
  id: string;
  metricId: string;
  status: 'open' | 'resolved';
  reason: string;
  raisedBy: DiscussionAuthor | null;
  createdAt: Date;
  decision: 'accepted' | 'rejected' | null;
  decisionReason: string | null;
  decidedBy: DiscussionAuthor | null;
  decidedAt: Date | null;
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  pageSize: number;
}

/** A user's or a token's reference, as one JSON value (null when neither). */
function author(userColumn: string, tokenColumn: string | null): RawBuilder<unknown> {
  const user = sql.raw(userColumn);
  const byToken = tokenColumn
    ? sql`WHEN ${sql.raw(tokenColumn)} IS NOT NULL THEN json_build_object('kind', 'service_token',
        'id', ${sql.raw(tokenColumn)},
        'displayName', (SELECT st.name FROM service_token st WHERE st.id = ${sql.raw(tokenColumn)}))`
    : sql``;
  return sql`CASE WHEN ${user} IS NOT NULL THEN json_build_object('kind', 'user', 'id', ${user},
        'displayName', (SELECT u.display_name FROM app_user u WHERE u.id = ${user}))
      ${byToken} END`;
}

const threadColumns = sql`
  t.id::text AS id, t.metric_id::text AS "metricId", t.intent, t.title,
  t.resolution_status::text AS "resolutionStatus", t.created_at AS "createdAt",
  ${author('t.author_user_id', 't.author_token_id')} AS author,
  t.resolved_at AS "resolvedAt", ${author('t.resolved_by_user_id', 't.resolved_by_token_id')} AS "resolvedBy",
  (SELECT count(*)::int FROM message c WHERE c.thread_id = t.id) AS "messageCount"`;

const messageColumns = sql`
  g.id::text AS id, g.thread_id::text AS "threadId", g.metric_id::text AS "metricId", t.intent,
  ${author('g.author_user_id', 'g.author_token_id')} AS author,
  CASE WHEN g.deleted_at IS NULL THEN g.body END AS body,
  g.created_at AS "createdAt", g.edited_at AS "editedAt", g.deleted_at AS "deletedAt",
  g.pinned_at AS "pinnedAt", ${author('g.pinned_by_user_id', null)} AS "pinnedBy"`;

const challengeColumns = sql`
  c.id::text AS id, c.metric_id::text AS "metricId", c.status::text AS status, c.reason,
  ${author('c.raised_by_user_id', 'c.raised_by_token_id')} AS "raisedBy", c.created_at AS "createdAt",
  c.decision::text AS decision, c.decision_reason AS "decisionReason",
  ${author('c.decided_by_user_id', null)} AS "decidedBy", c.decided_at AS "decidedAt"`;

/** A thread of the organization; null when there is none with this id. */
export function readThread(db: Db, orgId: string, threadId: string): Promise<ThreadRow | null> {
  return firstOf(
    db,
    sql<ThreadRow>`
      SELECT ${threadColumns} FROM thread t JOIN metric m ON m.id = t.metric_id
      WHERE t.id = ${threadId}::uuid AND m.org_id = ${orgId}::uuid`,
  );
}

/** A message of the organization; null when there is none with this id. */
export function readMessage(db: Db, orgId: string, messageId: string): Promise<MessageRow | null> {
  return firstOf(
    db,
    sql<MessageRow>`
      SELECT ${messageColumns} FROM message g JOIN thread t ON t.id = g.thread_id JOIN metric m ON m.id = g.metric_id
      WHERE g.id = ${messageId}::uuid AND m.org_id = ${orgId}::uuid`,
  );
}

/** A challenge of the organization; null when there is none with this id. */
export function readChallenge(db: Db, orgId: string, challengeId: string): Promise<ChallengeRow | null> {
  return firstOf(
    db,
    sql<ChallengeRow>`
      SELECT ${challengeColumns} FROM challenge c JOIN metric m ON m.id = c.metric_id
      WHERE c.id = ${challengeId}::uuid AND m.org_id = ${orgId}::uuid`,
  );
}

/** The total of a metric's rows in `table`, when the metric is the organization's (null otherwise). */
async function countOfMetric(db: Db, orgId: string, metricId: string, table: 'thread' | 'challenge') {
  const metric = await firstOf(
    db,
    sql<{ total: number }>`
      SELECT (SELECT count(*)::int FROM ${sql.raw(table)} x WHERE x.metric_id = m.id) AS total FROM metric m
      WHERE m.id = ${metricId}::uuid AND m.org_id = ${orgId}::uuid`,
  );
  return metric ? metric.total : null;
}

/** A page of the metric's threads, newest first; null when the metric is not the organization's. */
export async function readThreadPage(
  db: Db,
  orgId: string,
  metricId: string,
  page: number,
  pageSize: number,
): Promise<Page<ThreadRow> | null> {
  const total = await countOfMetric(db, orgId, metricId, 'thread');
  if (total === null) return null;
  const items = await rowsOf(
    db,
    compile(sql<ThreadRow>`
      SELECT ${threadColumns}, true AS listed FROM thread t WHERE t.metric_id = ${metricId}::uuid
      ORDER BY t.created_at DESC, t.id DESC OFFSET ${(page - 1) * pageSize}::bigint LIMIT ${pageSize}::int`),
  );
  return { items, total, page, pageSize };
}

/**
 * The same page of messages of each of `threadIds` (oldest first, deleted
 * ones in their place), one statement for them all.
 */
export async function readMessagePages(
  db: Db,
  threadIds: readonly string[],
  page: number,
  pageSize: number,
): Promise<Map<string, MessageRow[]>> {
  const pages = new Map<string, MessageRow[]>(threadIds.map((id) => [id, []]));
  if (!threadIds.length) return pages;
  const from = (page - 1) * pageSize;
  const rows = await rowsOf(
    db,
    compile(sql<MessageRow>`
      SELECT p.* FROM unnest(${[...threadIds]}::uuid[]) AS ids(id)
      CROSS JOIN LATERAL (
        SELECT ${messageColumns} FROM message g JOIN thread t ON t.id = g.thread_id
        WHERE g.thread_id = ids.id ORDER BY g.created_at, g.id OFFSET ${from}::bigint LIMIT ${pageSize}::int) p`),
  );
  for (const row of rows) pages.get(row.threadId)?.push(row);
  return pages;
}

/** A page of the metric's challenges, newest first; null when the metric is not the organization's. */
export async function readChallengePage(
  db: Db,
  orgId: string,
  metricId: string,
  page: number,
  pageSize: number,
): Promise<Page<ChallengeRow> | null> {
  const total = await countOfMetric(db, orgId, metricId, 'challenge');
  if (total === null) return null;
  const items = await rowsOf(
    db,
    compile(sql<ChallengeRow>`
      SELECT ${challengeColumns} FROM challenge c WHERE c.metric_id = ${metricId}::uuid
      ORDER BY c.created_at DESC, c.id DESC OFFSET ${(page - 1) * pageSize}::bigint LIMIT ${pageSize}::int`),
  );
  return { items, total, page, pageSize };
}
