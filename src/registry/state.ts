/**
 * What an apply compares a document with: the organization's metrics as they
 * are, with their versions, approvals and relationships, and the projects,
 * domains and members a document names. Read inside the apply's transaction,
 * after its lock, so the plan is made from the state it is applied to.
 */
import type { Prisma } from '../generated/prisma/client.js';

type Reader = Prisma.TransactionClient;

const metricInclude = {
  versions: true,
  approvals: true,
  relationships: { select: { kind: true, target: { select: { key: true } } } },
} as const satisfies Prisma.MetricInclude;

export type StoredMetric = Prisma.MetricGetPayload<{ include: typeof metricInclude }>;

export interface RegistryState {
  orgId: string;
  metrics: StoredMetric[];
  /** project and domain ids by name (the oldest when a name repeats) */
  projects: Map<string, string>;
  domains: Map<string, string>;
  /** member emails by user id, and user ids by email */
  memberEmails: Map<string, string>;
  memberIds: Map<string, string>;
}

function byName(rows: { id: string; name: string }[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const row of rows) if (!names.has(row.name)) names.set(row.name, row.id);
  return names;
}

export async function readRegistryState(reader: Reader, orgId: string): Promise<RegistryState> {
  const [metrics, projects, domains, members] = await Promise.all([
    reader.metric.findMany({ where: { orgId }, include: metricInclude, orderBy: { key: 'asc' } }),
    reader.project.findMany({ where: { orgId }, select: { id: true, name: true }, orderBy: { id: 'asc' } }),
    reader.domain.findMany({ where: { orgId }, select: { id: true, name: true }, orderBy: { id: 'asc' } }),
    reader.membership.findMany({ where: { orgId }, select: { user: { select: { id: true, email: true } } } }),
  ]);
  const memberEmails = new Map(members.map(({ user }) => [user.id, user.email]));
  const memberIds = new Map(members.map(({ user }) => [user.email.toLowerCase(), user.id]));
  return { orgId, metrics, projects: byName(projects), domains: byName(domains), memberEmails, memberIds };
}
