/**
 * What an apply compares a document with, read inside its transaction after
 * its lock: first the organization's metrics by key (the listed ones with
 * the hash of the entry each was last applied from), the removed metrics (src/registry/archive.ts)
 * of the document's keys, its projects, domains, members and trust
 * policy, and (only when the document names any inputs) the inputs of the
 * metrics it does not list, for the cycle check; then, for the metrics whose
 * hash is not the document's, everything an apply compares (their fields,
 * versions, approvals, relationships and inputs).
 */
import type { Prisma } from '../generated/prisma/client.js';

type Reader = Prisma.TransactionClient;

const metricInclude = {
  versions: true,
  approvals: true,
  relationships: { select: { kind: true, target: { select: { key: true } } } },
  inputs: { select: { position: true, input: { select: { key: true } } }, orderBy: { position: 'asc' } },
} as const satisfies Prisma.MetricInclude;

export type StoredMetric = Prisma.MetricGetPayload<{ include: typeof metricInclude }>;

/** A metric of the organization, as every apply reads each of them (the plan's `absent` and `removed`, references). */
export interface MetricSummary {
  id: string;
  key: string;
  /** the source that created it: a prune of that source removes it */
  source: string;
}

/** A metric the document lists, with what its plan compares first. */
export interface StoredSummary extends MetricSummary {
  appliedHash: string | null;
  /** document field -> the source that set it (docs/registry.md#sources) */
  fieldSources: unknown;
}

/** A metric a prune removed, which an apply listing its key restores. */
export interface ArchivedSummary {
  id: string;
  key: string;
  createdAt: Date;
}

export interface RegistryState {
  orgId: string;
  /** every metric of the organization, by key */
  metrics: MetricSummary[];
  /** the stored metrics of the keys asked for, by key */
  listed: Map<string, StoredSummary>;
  /** the removed metrics of the keys asked for, by key */
  archived: Map<string, ArchivedSummary>;
  /** project and domain ids by name (the oldest when a name repeats) */
  projects: Map<string, string>;
  domains: Map<string, string>;
  /** member user ids by lower-cased email */
  memberIds: Map<string, string>;
  /** the organization's stored trust_policy (JSON; null: the server's defaults); undefined: not read */
  trustPolicy?: unknown;
  /**
   * The inputs of the metrics the document does not list, as
   * `[metric key, input key]` in each metric's order; empty when the
   * document names no inputs (its metrics then have none after the apply,
   * so no cycle can pass through them).
   */
  otherInputs: [string, string][];
}

function byName(rows: { id: string; name: string }[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const row of rows) if (!names.has(row.name)) names.set(row.name, row.id);
  return names;
}

/** The stored inputs of the organization's metrics whose keys are not `keys`, by key. */
async function inputsOfOthers(reader: Reader, orgId: string, keys: readonly string[]): Promise<[string, string][]> {
  const rows = await reader.$queryRaw<{ metric: string; input: string }[]>`
    SELECT m."key" AS "metric", i."key" AS "input"
    FROM "metric_input" e
    JOIN "metric" m ON m."id" = e."metric_id"
    JOIN "metric" i ON i."id" = e."input_metric_id"
    WHERE m."org_id" = ${orgId}::uuid AND NOT (m."key" = ANY(${[...keys]}::text[]))
    ORDER BY m."key", e."position"`;
  return rows.map((row) => [row.metric, row.input]);
}

/** What of the state a document needs beyond its metrics. */
export interface StateNeeds {
  /** the document names inputs: the other metrics' inputs are read, for the cycle check */
  inputs?: boolean;
  /** the document sets a trust policy: the stored one is read, to compare */
  trustPolicy?: boolean;
}

/** The state an apply of a document listing `keys` compares it with. */
export async function readRegistryState(
  reader: Reader,
  orgId: string,
  keys: readonly string[],
  needs: StateNeeds = {},
): Promise<RegistryState> {
  // Every metric's key, id and source; the hash and field sources of the listed ones only, so that
  // a document of a few metrics reads little more than their keys of a large registry.
  const rows = await reader.$queryRaw<(StoredSummary & { listed: boolean })[]>`
    SELECT m."id"::text AS "id", m."key", m."source", l."key" IS NOT NULL AS "listed",
      CASE WHEN l."key" IS NOT NULL THEN m."applied_hash" END AS "appliedHash",
      CASE WHEN l."key" IS NOT NULL THEN m."field_sources" END AS "fieldSources"
    FROM "metric" m LEFT JOIN unnest(${[...keys]}::text[]) AS l("key") ON l."key" = m."key"
    WHERE m."org_id" = ${orgId}::uuid
    ORDER BY m."key"`;
  const metrics: MetricSummary[] = [];
  const listed = new Map<string, StoredSummary>();
  for (const { listed: isListed, appliedHash, fieldSources, ...metric } of rows) {
    metrics.push(metric);
    if (isListed) listed.set(metric.key, { ...metric, appliedHash, fieldSources });
  }
  // By key, not the whole archive: a key found here is one the document lists again.
  const archived = await reader.$queryRaw<ArchivedSummary[]>`
    SELECT "metric_id"::text AS "id", "key", ("snapshot"->'metric'->>'created_at')::timestamptz AS "createdAt"
    FROM "removed_metric" WHERE "org_id" = ${orgId}::uuid AND "key" = ANY(${[...keys]}::text[])`;
  const projects = await reader.project.findMany({
    where: { orgId },
    select: { id: true, name: true },
    orderBy: { id: 'asc' },
  });
  const domains = await reader.domain.findMany({
    where: { orgId },
    select: { id: true, name: true },
    orderBy: { id: 'asc' },
  });
  const members = await reader.membership.findMany({
    where: { orgId },
    select: { user: { select: { id: true, email: true } } },
  });
  const memberIds = new Map(members.map(({ user }) => [user.email.toLowerCase(), user.id]));
  const organization = needs.trustPolicy
    ? await reader.organization.findUniqueOrThrow({ where: { id: orgId }, select: { trustPolicy: true } })
    : undefined;
  return {
    orgId,
    metrics,
    listed,
    archived: new Map(archived.map((metric) => [metric.key, metric])),
    projects: byName(projects),
    domains: byName(domains),
    memberIds,
    trustPolicy: organization?.trustPolicy,
    otherInputs: needs.inputs ? await inputsOfOthers(reader, orgId, keys) : [],
  };
}

/** Metrics a statement reads at most: the rows of a page of stored metrics stay small. */
const PAGE = 500;

/** The stored metrics of `ids`, with what an apply compares, by id. */
export async function readStoredMetrics(reader: Reader, ids: readonly string[]): Promise<Map<string, StoredMetric>> {
  const stored = new Map<string, StoredMetric>();
  for (let i = 0; i < ids.length; i += PAGE) {
    const page = await reader.metric.findMany({
      where: { id: { in: ids.slice(i, i + PAGE) } },
      include: metricInclude,
    });
    for (const metric of page) stored.set(metric.id, metric);
  }
  return stored;
}
