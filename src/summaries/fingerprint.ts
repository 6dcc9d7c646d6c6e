/**
 * The cache key of a summary: a SHA-256 fingerprint of one state of a
 * metric's discussion, computed in the database in one statement together
 * with the cache lookup.
 *
 * Covered, in a fixed order: every thread of the metric (id, intent,
 * resolution status, md5 of the title), every non-deleted message (id,
 * thread id, updated_at, md5 of the body, pinned_at), a version tag of this
 * recipe and the generator's name (provider and model). So a new, edited
 * (body or updated_at), deleted or (un)pinned message, a new thread, a
 * resolved thread, a retitled thread, or another generator makes a new
 * fingerprint; a deleted message leaves the set. Not covered: authors'
 * display names and the metric's name (a rename does not regenerate).
 */
import { Prisma } from '../generated/prisma/client.js';

/** Bump when the recipe changes so that old cache rows stop matching. */
const FINGERPRINT_VERSION = 'discussion-fingerprint:v1';

export interface DiscussionState {
  fingerprint: string;
  /** non-deleted messages; 0 means there is no discussion to summarize */
  messageCount: number;
  /** the cached summary of this state for the organization, if any */
  cachedSummary: string | null;
}

interface StateRow {
  message_count: number;
  fingerprint: string;
  summary: string | null;
}

type Queryable = Pick<Prisma.TransactionClient, '$queryRaw'>;

/**
 * One row: `message_count`, `fingerprint` and the cached `summary` of the
 * organization for this state (null when there is none). Also read, with the
 * metric's version, to decide a conditional GET of `summary=true`
 * (src/metric/state.ts).
 */
export function discussionStateSql(input: { orgId: string; metricId: string; generatorName: string }): Prisma.Sql {
  const { orgId, metricId, generatorName } = input;
  return Prisma.sql`
    WITH threads AS (
      SELECT string_agg(concat_ws('|', t.id::text, t.intent, t.resolution_status::text, md5(t.title)), E'\n'
                        ORDER BY t.id) AS digest
      FROM thread t WHERE t.metric_id = ${metricId}::uuid
    ), messages AS (
      SELECT count(*)::int AS message_count,
             string_agg(concat_ws('|', g.id::text, g.thread_id::text,
                                  (extract(epoch FROM g.updated_at) * 1000)::bigint::text, md5(g.body),
                                  coalesce((extract(epoch FROM g.pinned_at) * 1000)::bigint::text, '-')), E'\n'
                        ORDER BY g.id) AS digest
      FROM message g WHERE g.metric_id = ${metricId}::uuid AND g.deleted_at IS NULL
    ), state AS (
      SELECT m.message_count,
             encode(sha256(convert_to(concat_ws(E'\n\n', ${FINGERPRINT_VERSION}::text, ${generatorName}::text,
                                                coalesce(t.digest, ''), coalesce(m.digest, '')), 'UTF8')), 'hex')
               AS fingerprint
      FROM threads t CROSS JOIN messages m
    )
    SELECT s.message_count, s.fingerprint, ds.summary
    FROM state s
    LEFT JOIN discussion_summary ds
      ON ds.org_id = ${orgId}::uuid AND ds.metric_id = ${metricId}::uuid AND ds.fingerprint = s.fingerprint`;
}

export async function readDiscussionState(
  db: Queryable,
  input: { orgId: string; metricId: string; generatorName: string },
): Promise<DiscussionState> {
  const { metricId } = input;
  const rows = await db.$queryRaw<StateRow[]>(discussionStateSql(input));
  const row = rows[0];
  if (!row) throw new Error(`no discussion state for metric ${metricId}`);
  return { fingerprint: row.fingerprint, messageCount: row.message_count, cachedSummary: row.summary };
}
