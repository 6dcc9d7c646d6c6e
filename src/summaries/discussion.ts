/**
 * Reads the discussion a generator summarizes: threads and their non-deleted
 * messages, one statement. A bot's message is by its service token's name.
 */
import type { Prisma } from '../generated/prisma/client.js';
import type { Discussion, DiscussionThread } from './generator.js';

interface DiscussionRow {
  metric_name: string;
  thread_id: string | null;
  intent: string | null;
  resolution_status: 'open' | 'resolved' | null;
  title: string | null;
  thread_created_at: Date | null;
  message_id: string | null;
  author_display_name: string | null;
  body: string | null;
  created_at: Date | null;
  pinned_at: Date | null;
}

export async function readDiscussion(
  db: Pick<Prisma.TransactionClient, '$queryRaw'>,
  metricId: string,
): Promise<Discussion> {
  const rows = await db.$queryRaw<DiscussionRow[]>`
    SELECT m.name AS metric_name, t.id::text AS thread_id, t.intent, t.resolution_status::text AS resolution_status,
           t.title, t.created_at AS thread_created_at, g.id::text AS message_id,
           coalesce(u.display_name, st.name) AS author_display_name, g.body, g.created_at, g.pinned_at
    FROM metric m
    LEFT JOIN thread t ON t.metric_id = m.id
    LEFT JOIN message g ON g.thread_id = t.id AND g.deleted_at IS NULL
    LEFT JOIN app_user u ON u.id = g.author_user_id
    LEFT JOIN service_token st ON st.id = g.author_token_id
    WHERE m.id = ${metricId}::uuid
    ORDER BY t.created_at, t.id, g.created_at, g.id`;
  const first = rows[0];
  if (!first) throw new Error(`metric ${metricId} not found`);
  const threads = new Map<string, DiscussionThread>();
  for (const row of rows) {
    if (!row.thread_id) continue;
    let thread = threads.get(row.thread_id);
    if (!thread) {
      thread = {
        id: row.thread_id,
        intent: row.intent ?? '',
        resolutionStatus: row.resolution_status === 'resolved' ? 'resolved' : 'open',
        title: row.title ?? '',
        createdAt: new Date(row.thread_created_at ?? 0),
        messages: [],
      };
      threads.set(row.thread_id, thread);
    }
    if (row.message_id) {
      thread.messages.push({
        id: row.message_id,
        authorDisplayName: row.author_display_name ?? 'Unknown',
        body: row.body ?? '',
        createdAt: new Date(row.created_at ?? 0),
        pinnedAt: row.pinned_at ? new Date(row.pinned_at) : null,
      });
    }
  }
  return { metricId, metricName: first.metric_name, threads: [...threads.values()] };
}
