/**
 * What surrounds a metric, as SQL over the metric `m` of an enclosing
 * statement. Each part is its columns (and lateral joins) plus the reading of
 * them, so the same SQL serves two statements:
 *
 * - a batch for DataLoader, over `unnest(ids) AS m(id)`: one statement per
 *   part for all the metrics of a list (src/metric/loaders.ts);
 * - the single-metric read over `metric m`, which takes the parts its
 *   GraphQL selection asks for in the same statement as the metric row
 *   (`metric(id)`: the detail and the contract are one statement each).
 *
 * JSON built in SQL carries timestamps as text; `read` turns them into Dates.
 */
import { type RawBuilder, sql } from 'kysely';
import type { Approval, MetricRelationship, MetricVersion } from '../generated/prisma/client.js';
import type { MetricField, SelectedMetric } from './columns.js';

export interface CurrentApprovedVersion {
  id: string;
  definitionVersion: string;
  releasedAt: Date | null;
}

/** Governance facts of a metric: challenges, validation, the approved version. */
export interface MetricStats {
  challengesCount: number;
  openChallengesCount: number;
  lastValidatedAt: Date | null;
  currentApprovedVersion: CurrentApprovedVersion | null;
}

/** Counts and state of a metric's discussion. */
export interface MetricDiscussion {
  threadCount: number;
  messageCount: number;
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

/**
 * What a relationship carries of its target, read with it: what a REST
 * detail shows of a target (its key, name and lifecycle status), so that
 * the detail needs no statement for its targets.
 */
export const CARRIED_TARGET_FIELDS: ReadonlySet<MetricField> = new Set<MetricField>([
  'id',
  'orgId',
  'key',
  'name',
  'lifecycleStatus',
]);

export interface RelationshipRow extends MetricRelationship {
  /** the target's {@link CARRIED_TARGET_FIELDS}; null when it is not a metric of the organization */
  target: SelectedMetric | null;
}

/** What the detail of a metric lists, in the orders the schema documents. */
export interface MetricRelations {
  relationships: RelationshipRow[];
  approvals: Approval[];
  versions: MetricVersion[];
}

/** The response carries at most this many pinned notes per metric. */
export const AGENT_CONTEXT_NOTE_LIMIT = 10;

export interface MetricPart<T> {
  /** names the part in the shape of a statement (src/db/kysely.ts, ShapeCache) */
  name: string;
  /** select-list items; their aliases are unique across parts and metric columns */
  columns: RawBuilder<unknown>;
  /** lateral joins the columns use, or empty */
  joins: RawBuilder<unknown>;
  read(row: Record<string, unknown>): T;
}

type Json<T> = { [K in keyof T]: T[K] extends Date ? string : T[K] extends Date | null ? string | null : T[K] };

const date = (value: unknown): Date => new Date(value as string);
const dateOrNull = (value: unknown): Date | null => (value === null ? null : date(value));

export const relationsPart: MetricPart<MetricRelations> = {
  name: 'relations',
  columns: sql`
    (SELECT coalesce(json_agg(json_build_object('id', r.id, 'metricId', r.metric_id, 'kind', r.kind,
              'targetMetricId', r.target_metric_id,
              'target', (SELECT json_build_object('id', t.id, 'orgId', t.org_id, 'key', t.key, 'name', t.name,
                                  'lifecycleStatus', t.lifecycle_status)
                         FROM metric t JOIN metric s ON s.id = r.metric_id
                         WHERE t.id = r.target_metric_id AND t.org_id = s.org_id))
              ORDER BY r.kind, r.target_metric_id), '[]')
     FROM metric_relationship r WHERE r.metric_id = m.id) AS relationships,
    (SELECT coalesce(json_agg(json_build_object('id', a.id, 'metricId', a.metric_id, 'versionId', a.version_id,
              'approverUserId', a.approver_user_id, 'approverRole', a.approver_role, 'decision', a.decision,
              'decidedAt', a.decided_at, 'comment', a.comment) ORDER BY a.decided_at DESC, a.id), '[]')
     FROM approval a WHERE a.metric_id = m.id) AS approvals,
    (SELECT coalesce(json_agg(json_build_object('id', v.id, 'metricId', v.metric_id,
              'definitionVersion', v.definition_version, 'status', v.status, 'releasedAt', v.released_at,
              'changeSummary', v.change_summary) ORDER BY v.released_at DESC NULLS LAST, v.id), '[]')
     FROM metric_version v WHERE v.metric_id = m.id) AS versions`,
  joins: sql``,
  read: (row) => ({
    relationships: row.relationships as RelationshipRow[],
    approvals: (row.approvals as Json<Approval>[]).map((a) => ({ ...a, decidedAt: date(a.decidedAt) })),
    versions: (row.versions as Json<MetricVersion>[]).map((v) => ({ ...v, releasedAt: dateOrNull(v.releasedAt) })),
  }),
};

export const statsPart: MetricPart<MetricStats> = {
  name: 'stats',
  columns: sql`
    s_c.challenges_count, s_c.open_challenges_count, s_v.last_validated_at,
    s_cv.id::text AS approved_version_id, s_cv.definition_version AS approved_version_definition,
    s_cv.released_at AS approved_version_released_at`,
  joins: sql`
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS challenges_count,
             (count(*) FILTER (WHERE status = 'open'))::int AS open_challenges_count
      FROM challenge WHERE metric_id = m.id) s_c
    CROSS JOIN LATERAL (
      SELECT max(ran_at) AS last_validated_at FROM validation WHERE metric_id = m.id) s_v
    LEFT JOIN LATERAL (
      SELECT id, definition_version, released_at FROM metric_version
      WHERE metric_id = m.id AND status IN ('released', 'approved')
      ORDER BY released_at DESC NULLS LAST, id LIMIT 1) s_cv ON TRUE`,
  read: (row) => ({
    challengesCount: row.challenges_count as number,
    openChallengesCount: row.open_challenges_count as number,
    lastValidatedAt: dateOrNull(row.last_validated_at),
    currentApprovedVersion:
      row.approved_version_id === null
        ? null
        : {
            id: row.approved_version_id as string,
            definitionVersion: row.approved_version_definition as string,
            releasedAt: dateOrNull(row.approved_version_released_at),
          },
  }),
};

/** Separate from the governance facts: a dashboard of discussion counts reads only these two aggregates. */
export const discussionPart: MetricPart<MetricDiscussion> = {
  name: 'discussion',
  columns: sql`
    d_t.thread_count, d_t.has_discourse, d_t.open_objections_count, d_t.open_proposals_count,
    d_g.message_count, GREATEST(d_t.last_thread_at, d_g.last_message_at) AS last_activity_at`,
  joins: sql`
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS thread_count,
             bool_or(intent IN ('objection', 'proposal')) IS TRUE AS has_discourse,
             (count(*) FILTER (WHERE intent = 'objection' AND resolution_status = 'open'))::int AS open_objections_count,
             (count(*) FILTER (WHERE intent = 'proposal' AND resolution_status = 'open'))::int AS open_proposals_count,
             max(created_at) AS last_thread_at
      FROM thread WHERE metric_id = m.id) d_t
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS message_count, max(created_at) AS last_message_at
      FROM message WHERE metric_id = m.id AND deleted_at IS NULL) d_g`,
  read: (row) => ({
    threadCount: row.thread_count as number,
    messageCount: row.message_count as number,
    discourse: row.has_discourse
      ? {
          openObjectionsCount: row.open_objections_count as number,
          openProposalsCount: row.open_proposals_count as number,
          lastActivityAt: dateOrNull(row.last_activity_at),
        }
      : null,
  }),
};

export const notesPart: MetricPart<AgentContextNote[]> = {
  name: 'agentContextNotes',
  columns: sql`
    (SELECT coalesce(json_agg(json_build_object('id', n.id, 'threadId', n.thread_id, 'intent', n.intent,
              'authorDisplayName', n.author_display_name, 'body', n.body, 'pinnedAt', n.pinned_at,
              'createdAt', n.created_at) ORDER BY n.pinned_at DESC, n.id), '[]')
     FROM (
       SELECT g.id, g.thread_id, t.intent, coalesce(u.display_name, st.name) AS author_display_name, g.body,
              g.pinned_at, g.created_at
       FROM message g
       JOIN thread t ON t.id = g.thread_id
       LEFT JOIN app_user u ON u.id = g.author_user_id
       -- A bot's note (written with a service token) is by the token's name.
       LEFT JOIN service_token st ON st.id = g.author_token_id
       WHERE g.metric_id = m.id AND g.pinned_at IS NOT NULL AND g.deleted_at IS NULL
       ORDER BY g.pinned_at DESC, g.id
       LIMIT ${AGENT_CONTEXT_NOTE_LIMIT}) n) AS agent_context_notes`,
  joins: sql``,
  read: (row) =>
    (row.agent_context_notes as Json<AgentContextNote>[]).map((note) => ({
      ...note,
      pinnedAt: date(note.pinnedAt),
      createdAt: date(note.createdAt),
    })),
};

/**
 * Variants, supersession and conflicts, seen from either side of the
 * relationship; UNION names a metric once per relation (a pair of
 * conflicts_with rows in both directions is one candidate).
 */
export const disambiguationPart: MetricPart<DisambiguationCandidate[]> = {
  name: 'disambiguation',
  columns: sql`
    (SELECT coalesce(json_agg(json_build_object('metricId', d.other_id, 'key', d.key, 'name', d.name,
              'lifecycleStatus', d.lifecycle_status, 'relation', d.relation) ORDER BY d.relation, d.name, d.other_id), '[]')
     FROM (
       SELECT o.id AS other_id, o.key, o.name, o.lifecycle_status::text AS lifecycle_status, r.kind::text AS relation
       FROM metric_relationship r JOIN metric o ON o.id = r.target_metric_id
       WHERE r.metric_id = m.id AND r.kind IN ('variant_of', 'supersedes', 'conflicts_with')
       UNION
       SELECT o.id, o.key, o.name, o.lifecycle_status::text,
              CASE r.kind WHEN 'variant_of' THEN 'has_variant' WHEN 'supersedes' THEN 'superseded_by' ELSE 'conflicts_with' END
       FROM metric_relationship r JOIN metric o ON o.id = r.metric_id
       WHERE r.target_metric_id = m.id AND r.kind IN ('variant_of', 'supersedes', 'conflicts_with')) d
    ) AS disambiguation_candidates`,
  joins: sql``,
  read: (row) => row.disambiguation_candidates as DisambiguationCandidate[],
};
