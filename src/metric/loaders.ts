/**
 * Batched reads of what surrounds a metric: one SQL statement per kind of
 * data per request, whatever the number of metrics (DataLoader collects the
 * ids of one tick). Batch functions return results in key order.
 */
import DataLoader from 'dataloader';
import type { PrismaClient } from '../generated/prisma/client.js';

export interface CurrentApprovedVersion {
  id: string;
  definitionVersion: string;
  releasedAt: Date | null;
}

export interface MetricStats {
  challengesCount: number;
  openChallengesCount: number;
  threadCount: number;
  messageCount: number;
  lastValidatedAt: Date | null;
  currentApprovedVersion: CurrentApprovedVersion | null;
  /** null when no thread has intent objection or proposal */
  discourse: { openObjectionsCount: number; openProposalsCount: number; lastActivityAt: Date | null } | null;
}

export interface AgentContextNote {
  id: string;
  threadId: string;
  intent: string;
  authorDisplayName: string;
  body: string;
  pinnedAt: Date;
  createdAt: Date;
}

export type DisambiguationRelation = 'variant_of' | 'has_variant' | 'supersedes' | 'superseded_by' | 'conflicts_with';

export interface DisambiguationCandidate {
  metricId: string;
  key: string;
  name: string;
  lifecycleStatus: string;
  relation: DisambiguationRelation;
}

/** The response carries at most this many pinned notes per metric. */
export const AGENT_CONTEXT_NOTE_LIMIT = 10;

interface StatsRow {
  metric_id: string;
  challenges_count: number;
  open_challenges_count: number;
  thread_count: number;
  message_count: number;
  last_validated_at: Date | null;
  has_discourse: boolean;
  open_objections_count: number;
  open_proposals_count: number;
  last_activity_at: Date | null;
  version_id: string | null;
  version_definition: string | null;
  version_released_at: Date | null;
}

async function loadStats(prisma: PrismaClient, ids: readonly string[]): Promise<MetricStats[]> {
  const rows = await prisma.$queryRaw<StatsRow[]>`
    SELECT m.id::text AS metric_id,
           c.challenges_count, c.open_challenges_count,
           t.thread_count, t.has_discourse, t.open_objections_count, t.open_proposals_count,
           g.message_count,
           v.last_validated_at,
           GREATEST(t.last_thread_at, g.last_message_at) AS last_activity_at,
           cv.id::text AS version_id, cv.definition_version AS version_definition, cv.released_at AS version_released_at
    FROM unnest(${ids}::uuid[]) AS m(id)
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS challenges_count,
             (count(*) FILTER (WHERE status = 'open'))::int AS open_challenges_count
      FROM challenge WHERE metric_id = m.id) c
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS thread_count,
             bool_or(intent IN ('objection', 'proposal')) IS TRUE AS has_discourse,
             (count(*) FILTER (WHERE intent = 'objection' AND resolution_status = 'open'))::int AS open_objections_count,
             (count(*) FILTER (WHERE intent = 'proposal' AND resolution_status = 'open'))::int AS open_proposals_count,
             max(created_at) AS last_thread_at
      FROM thread WHERE metric_id = m.id) t
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS message_count, max(created_at) AS last_message_at
      FROM message WHERE metric_id = m.id AND deleted_at IS NULL) g
    CROSS JOIN LATERAL (
      SELECT max(ran_at) AS last_validated_at FROM validation WHERE metric_id = m.id) v
    LEFT JOIN LATERAL (
      SELECT id, definition_version, released_at FROM metric_version
      WHERE metric_id = m.id AND status IN ('released', 'approved')
      ORDER BY released_at DESC NULLS LAST, id LIMIT 1) cv ON TRUE`;
  const byId = new Map(rows.map((row) => [row.metric_id, row]));
  return ids.map((id) => {
    const row = byId.get(id);
    if (!row) throw new Error(`no stats row for metric ${id}`);
    return {
      challengesCount: row.challenges_count,
      openChallengesCount: row.open_challenges_count,
      threadCount: row.thread_count,
      messageCount: row.message_count,
      lastValidatedAt: toDate(row.last_validated_at),
      currentApprovedVersion:
        row.version_id && row.version_definition !== null
          ? {
              id: row.version_id,
              definitionVersion: row.version_definition,
              releasedAt: toDate(row.version_released_at),
            }
          : null,
      discourse: row.has_discourse
        ? {
            openObjectionsCount: row.open_objections_count,
            openProposalsCount: row.open_proposals_count,
            lastActivityAt: toDate(row.last_activity_at),
          }
        : null,
    };
  });
}

interface NoteRow {
  metric_id: string;
  id: string;
  thread_id: string;
  intent: string;
  author_display_name: string;
  body: string;
  pinned_at: Date;
  created_at: Date;
}

async function loadNotes(prisma: PrismaClient, ids: readonly string[]): Promise<AgentContextNote[][]> {
  const rows = await prisma.$queryRaw<NoteRow[]>`
    SELECT m.id::text AS metric_id, n.*
    FROM unnest(${ids}::uuid[]) AS m(id)
    CROSS JOIN LATERAL (
      SELECT g.id::text AS id, g.thread_id::text AS thread_id, t.intent, u.display_name AS author_display_name,
             g.body, g.pinned_at, g.created_at
      FROM message g
      JOIN thread t ON t.id = g.thread_id
      JOIN app_user u ON u.id = g.author_user_id
      WHERE g.metric_id = m.id AND g.pinned_at IS NOT NULL AND g.deleted_at IS NULL
      ORDER BY g.pinned_at DESC, g.id
      LIMIT ${AGENT_CONTEXT_NOTE_LIMIT}) n`;
  const byMetric = new Map<string, AgentContextNote[]>(ids.map((id) => [id, []]));
  for (const row of rows) {
    byMetric.get(row.metric_id)?.push({
      id: row.id,
      threadId: row.thread_id,
      intent: row.intent,
      authorDisplayName: row.author_display_name,
      body: row.body,
      pinnedAt: new Date(row.pinned_at),
      createdAt: new Date(row.created_at),
    });
  }
  return ids.map((id) => byMetric.get(id) ?? []);
}

interface CandidateRow {
  metric_id: string;
  other_id: string;
  key: string;
  name: string;
  lifecycle_status: string;
  relation: DisambiguationRelation;
}

/** Variants, supersession and conflicts, seen from either side of the relationship. */
async function loadDisambiguation(prisma: PrismaClient, ids: readonly string[]): Promise<DisambiguationCandidate[][]> {
  const rows = await prisma.$queryRaw<CandidateRow[]>`
    SELECT r.metric_id::text AS metric_id, o.id::text AS other_id, o.key, o.name, o.lifecycle_status::text,
           r.kind::text AS relation
    FROM metric_relationship r JOIN metric o ON o.id = r.target_metric_id
    WHERE r.metric_id = ANY(${ids}::uuid[]) AND r.kind IN ('variant_of', 'supersedes', 'conflicts_with')
    UNION ALL
    SELECT r.target_metric_id::text, o.id::text, o.key, o.name, o.lifecycle_status::text,
           CASE r.kind WHEN 'variant_of' THEN 'has_variant' WHEN 'supersedes' THEN 'superseded_by' ELSE 'conflicts_with' END
    FROM metric_relationship r JOIN metric o ON o.id = r.metric_id
    WHERE r.target_metric_id = ANY(${ids}::uuid[]) AND r.kind IN ('variant_of', 'supersedes', 'conflicts_with')
    ORDER BY 1, 6, 4, 2`;
  const byMetric = new Map<string, DisambiguationCandidate[]>(ids.map((id) => [id, []]));
  for (const row of rows) {
    const candidates = byMetric.get(row.metric_id);
    // A pair of conflicts_with rows in both directions names the same metric once.
    if (!candidates || candidates.some((c) => c.metricId === row.other_id && c.relation === row.relation)) continue;
    candidates.push({
      metricId: row.other_id,
      key: row.key,
      name: row.name,
      lifecycleStatus: row.lifecycle_status,
      relation: row.relation,
    });
  }
  return ids.map((id) => byMetric.get(id) ?? []);
}

function toDate(value: Date | string | null): Date | null {
  return value === null ? null : new Date(value);
}

export function createMetricLoaders(prisma: PrismaClient) {
  return {
    stats: new DataLoader<string, MetricStats>((ids) => loadStats(prisma, ids)),
    agentContextNotes: new DataLoader<string, AgentContextNote[]>((ids) => loadNotes(prisma, ids)),
    disambiguation: new DataLoader<string, DisambiguationCandidate[]>((ids) => loadDisambiguation(prisma, ids)),
  };
}

export type MetricLoaders = ReturnType<typeof createMetricLoaders>;
