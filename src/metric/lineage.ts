/**
 * The lineage of a metric: the metrics it is built from (upstream, its
 * inputs and theirs) or built on it (downstream), to a depth, a page at a
 * time. One statement: a recursive CTE over metric_input whose UNION drops
 * the rows already walked (a diamond meets once per edge, never once per
 * path), bounded by the depth and by the steps it may take (a large fan-out
 * stops there and says so); then the page of the nodes, each at its least
 * depth with the edge it was first reached by.
 */
import { sql } from 'kysely';
import { ShapeCache } from '../db/kysely.js';
import type { SqlReader } from '../db/sql.js';
import { type ErrorResponse, errors } from '../errors.js';
import type { LifecycleStatus } from '../generated/prisma/enums.js';
import { isUuid } from '../uuid.js';
import type { TrustVerdictValue } from './trust.js';

export const LINEAGE_DIRECTIONS = ['upstream', 'downstream'] as const;
export type LineageDirection = (typeof LINEAGE_DIRECTIONS)[number];

export const DEFAULT_LINEAGE_DEPTH = 3;
export const MAX_LINEAGE_DEPTH = 10;
export const DEFAULT_LINEAGE_LIMIT = 100;
export const MAX_LINEAGE_LIMIT = 500;
/**
 * Edges a walk follows at most (a node reached by two edges is two steps):
 * past it the walk stops, the nodes found so far are served and `truncated`
 * says so. Nearer nodes come first: the walk goes a depth at a time.
 */
export const MAX_LINEAGE_STEPS = 10_000;

/** An edge of metric_input: `metricId` has `inputMetricId` as its input at `position`. */
export interface LineageEdge {
  metricId: string;
  inputMetricId: string;
  position: number;
}

export interface LineageNode {
  id: string;
  key: string;
  name: string;
  lifecycleStatus: LifecycleStatus;
  /** the announced verdict (metric_trust_state); null while the metric has none */
  verdict: TrustVerdictValue | null;
  /** edges from the metric walked from, 1 for a direct input or dependent */
  depth: number;
  /** the edge the node was reached by at that depth (of several, the one from the smallest id) */
  via: LineageEdge;
}

/** Where a page starts: after the node of this depth and id, in the order (depth, id). */
export interface LineagePosition {
  depth: number;
  id: string;
}

export interface LineageRequest {
  direction: LineageDirection;
  depth: number;
  limit: number;
  after: LineagePosition | null;
}

export interface LineagePage {
  /** the page's nodes, by depth, then id */
  nodes: LineageNode[];
  /** distinct nodes found (a lower bound when truncated) */
  total: number;
  /** the walk stopped at MAX_LINEAGE_STEPS: deeper (or further) nodes may be missing */
  truncated: boolean;
  /** where the next page starts; null on the last one */
  next: LineagePosition | null;
}

type WalkArgs = {
  orgId: string;
  id: string;
  depth: number;
  steps: number;
  limit: number;
  afterDepth: number | null;
  afterId: string | null;
};

interface WalkRow {
  steps: number;
  total: number;
  nodes: LineageNode[];
}

const shapes = new ShapeCache<WalkArgs>();

/** Both ways over one edge: the column walked from and the one walked to. */
const ENDS = {
  upstream: { from: sql.raw('i.metric_id'), to: sql.raw('i.input_metric_id') },
  downstream: { from: sql.raw('i.input_metric_id'), to: sql.raw('i.metric_id') },
} as const;

function walkQuery(direction: LineageDirection, paged: boolean, p: WalkArgs) {
  const { from, to } = ENDS[direction];
  const after = paged ? sql`AND (n.depth, n.id) > (${p.afterDepth}::int, ${p.afterId}::uuid)` : sql``;
  // The root is a metric of the organization; every edge from it stays there (a trigger keeps both ends
  // of an edge in one organization). A row is an edge walked (`parent`, `position`): a metric reached by
  // two edges at one depth is two rows, but the rows past it are the same and UNION keeps them once, so
  // the rows grow with the edges, never with the paths (a diamond does not double what is below it).
  return sql<WalkRow>`
    WITH RECURSIVE walk(id, depth, parent, position) AS (
      SELECT m.id, 0, NULL::uuid, NULL::int FROM metric m WHERE m.id = ${p.id}::uuid AND m.org_id = ${p.orgId}::uuid
      UNION
      SELECT ${to}, w.depth + 1, w.id, i.position
      FROM walk w JOIN metric_input i ON ${from} = w.id
      WHERE w.depth < ${p.depth}::int
    ),
    walked AS MATERIALIZED (SELECT id, depth, parent, position FROM walk LIMIT ${p.steps}::int),
    nodes AS (
      SELECT DISTINCT ON (id) id, depth, parent, position FROM walked
      WHERE depth > 0 AND id <> ${p.id}::uuid
      ORDER BY id, depth, parent
    ),
    page AS (
      SELECT n.* FROM nodes n WHERE TRUE ${after} ORDER BY n.depth, n.id LIMIT ${p.limit}::int
    )
    SELECT
      (SELECT count(*)::int FROM walked) AS steps,
      (SELECT count(*)::int FROM nodes) AS total,
      (SELECT coalesce(json_agg(json_build_object('id', x.id, 'key', x.key, 'name', x.name,
                'lifecycleStatus', x.lifecycle_status,
                'verdict', (SELECT ts.verdict FROM metric_trust_state ts WHERE ts.metric_id = g.id),
                'depth', g.depth,
                'via', json_build_object('metricId', ${direction === 'upstream' ? sql`g.parent` : sql`g.id`},
                                         'inputMetricId', ${direction === 'upstream' ? sql`g.id` : sql`g.parent`},
                                         'position', g.position))
                ORDER BY g.depth, g.id), '[]')
       -- A look-up by id for each node of the page (LIMIT keeps it one): the planner, which cannot tell
       -- how few the page's rows are, would otherwise hash every metric of the table.
       FROM page g
       CROSS JOIN LATERAL (
         SELECT x.id, x.key, x.name, x.lifecycle_status FROM metric x
         WHERE x.id = g.id AND x.org_id = ${p.orgId}::uuid LIMIT 1) x) AS nodes`;
}

/**
 * A page of the lineage of metric `id` of the organization (which the
 * caller has found there; another organization's id walks nothing).
 */
export async function readLineage(
  reader: SqlReader,
  orgId: string,
  id: string,
  request: LineageRequest,
): Promise<LineagePage> {
  const { direction, depth, limit, after } = request;
  const args: WalkArgs = {
    orgId,
    id,
    depth,
    // One row more than the bound tells a walk that reached it from one that ended there.
    steps: MAX_LINEAGE_STEPS + 1,
    limit: limit + 1,
    afterDepth: after?.depth ?? null,
    afterId: after?.id ?? null,
  };
  const [row] = await reader.query(
    shapes.statement(`${direction}|${after ? 'a' : ''}`, args, (p) => walkQuery(direction, after !== null, p)),
  );
  const nodes = row?.nodes ?? [];
  const page = nodes.slice(0, limit);
  const last = page.at(-1);
  return {
    nodes: page,
    total: row?.total ?? 0,
    truncated: (row?.steps ?? 0) > MAX_LINEAGE_STEPS,
    next: nodes.length > limit && last ? { depth: last.depth, id: last.id } : null,
  };
}

/** An opaque cursor of a page's end. */
export function encodeLineageCursor(position: LineagePosition): string {
  return Buffer.from(`${position.depth}:${position.id}`).toString('base64url');
}

/** The position a cursor names; null when it is none this service gave. */
export function decodeLineageCursor(cursor: string): LineagePosition | null {
  if (cursor.length > 64 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const [depth, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  if (rest.length || !depth || !/^\d{1,2}$/.test(depth) || !id || !isUuid(id)) return null;
  const value = Number(depth);
  return value >= 1 && value <= MAX_LINEAGE_DEPTH ? { depth: value, id } : null;
}

/** What a caller asked, as sent: strings from a query, numbers from GraphQL; absent: the default. */
export interface LineageArguments {
  direction?: string | null;
  depth?: string | number | null;
  limit?: string | number | null;
  after?: string | null;
}

/** The names the caller knows the page arguments by (REST: limit and after; GraphQL: first and after). */
export interface LineageArgumentNames {
  limit: string;
  after: string;
}

/** The 400 of each argument out of its values; the page's by the name the caller knows it by. */
export const lineageErrors = {
  direction: errors.invalidParameter('direction', LINEAGE_DIRECTIONS.join(' or ')),
  depth: errors.invalidParameter('depth', `an integer from 1 to ${MAX_LINEAGE_DEPTH}`),
  limit: (name: string) => errors.invalidParameter(name, `an integer from 1 to ${MAX_LINEAGE_LIMIT}`),
  after: (name: string) => errors.invalidParameter(name, 'a cursor an earlier page returned'),
};

/** An integer from `min` to `max` (a number, or the digits of one), else null; absent: `fallback`. */
function boundedInteger(value: string | number | null | undefined, min: number, max: number, fallback: number) {
  if (value === undefined || value === null) return fallback;
  const number = typeof value === 'number' ? value : /^\d{1,6}$/.test(value) ? Number(value) : Number.NaN;
  return Number.isInteger(number) && number >= min && number <= max ? number : null;
}

/**
 * The request the arguments make, or the 400 that names the first one out of
 * its documented values: direction upstream (default) or downstream; depth
 * 1 to MAX_LINEAGE_DEPTH (default DEFAULT_LINEAGE_DEPTH); limit 1 to
 * MAX_LINEAGE_LIMIT (default DEFAULT_LINEAGE_LIMIT); after a cursor of an
 * earlier page.
 */
export function lineageRequest(
  args: LineageArguments,
  names: LineageArgumentNames,
): { request: LineageRequest } | { error: ErrorResponse } {
  const direction = args.direction ?? 'upstream';
  if (!(LINEAGE_DIRECTIONS as readonly string[]).includes(direction)) {
    return { error: lineageErrors.direction };
  }
  const depth = boundedInteger(args.depth, 1, MAX_LINEAGE_DEPTH, DEFAULT_LINEAGE_DEPTH);
  if (depth === null) return { error: lineageErrors.depth };
  const limit = boundedInteger(args.limit, 1, MAX_LINEAGE_LIMIT, DEFAULT_LINEAGE_LIMIT);
  if (limit === null) return { error: lineageErrors.limit(names.limit) };
  let after: LineagePosition | null = null;
  if (args.after !== undefined && args.after !== null) {
    after = decodeLineageCursor(args.after);
    if (!after) return { error: lineageErrors.after(names.after) };
  }
  return { request: { direction: direction as LineageDirection, depth, limit, after } };
}
