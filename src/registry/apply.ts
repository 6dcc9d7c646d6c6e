/**
 * Applies a registry document to one organization: in one transaction, under
 * a per-organization advisory lock (applies to one organization run one after
 * the other), the state is read, the plan made from it (src/registry/plan.ts)
 * and its rows written. Nothing is written when the plan changes nothing, so
 * a second apply of the same document leaves every `updated_at`, ETag and
 * `metrics_version` as it was. Readers see the registry before or after.
 *
 * ETags, `metrics_version` and search documents follow from the database's
 * triggers on the rows written (see the migrations): the apply only writes
 * what changed.
 */
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { RegistryDocument } from './document.js';
import { lockRegistry } from './lock.js';
import { type Plan, type PlanWrites, planApply } from './plan.js';
import { readRegistryState } from './state.js';

export interface ApplyOptions {
  /** remove the organization's metrics that the document does not list */
  prune?: boolean;
  /** plan only: nothing is written */
  dryRun?: boolean;
  now?: Date;
}

export interface ApplyOutcome {
  plan: Plan;
  /** whether rows were written */
  applied: boolean;
}

/** Rows a statement carries at most (PostgreSQL takes 65,535 parameters; a metric row has about 50). */
const CHUNK = 1000;

/** A large apply is many statements; the pool's statement_timeout is meant for reads. */
const APPLY_TIMEOUT_MS = 300_000;
const TRANSACTION_OPTIONS = { timeout: APPLY_TIMEOUT_MS, maxWait: 60_000 };

function chunks<T>(rows: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += CHUNK) out.push(rows.slice(i, i + CHUNK));
  return out;
}

async function insertAll<T>(rows: T[], createMany: (args: { data: T[] }) => Promise<unknown>): Promise<void> {
  for (const chunk of chunks(rows)) await createMany({ data: chunk });
}

async function deleteWhereMetricIn(
  ids: string[],
  deleteMany: (args: { where: { metricId: { in: string[] } } }) => Promise<unknown>,
): Promise<void> {
  for (const chunk of chunks(ids)) await deleteMany({ where: { metricId: { in: chunk } } });
}

async function writePlan(tx: Prisma.TransactionClient, writes: PlanWrites): Promise<void> {
  await insertAll(writes.projects, (args) => tx.project.createMany(args));
  await insertAll(writes.domains, (args) => tx.domain.createMany(args));
  await insertAll(writes.created, (args) => tx.metric.createMany(args));
  for (const { id, data } of writes.updated) {
    const { id: _id, orgId: _orgId, ...changes } = data;
    await tx.metric.update({ where: { id }, data: changes });
  }
  await deleteWhereMetricIn(writes.governanceOf, (args) => tx.approval.deleteMany(args));
  await deleteWhereMetricIn(writes.governanceOf, (args) => tx.metricVersion.deleteMany(args));
  await deleteWhereMetricIn(writes.relationshipsOf, (args) => tx.metricRelationship.deleteMany(args));
  await insertAll(writes.versions, (args) => tx.metricVersion.createMany(args));
  await insertAll(writes.approvals, (args) => tx.approval.createMany(args));
  await insertAll(writes.relationships, (args) => tx.metricRelationship.createMany(args));
  for (const chunk of chunks(writes.removed)) await tx.metric.deleteMany({ where: { id: { in: chunk } } });
}

/** Plans `document` against the organization's registry and, unless a dry run, applies it. */
export async function applyRegistryDocument(
  prisma: PrismaClient,
  orgId: string,
  document: RegistryDocument,
  options: ApplyOptions = {},
): Promise<ApplyOutcome> {
  const dryRun = options.dryRun ?? false;
  const planOptions = { prune: options.prune ?? false, now: options.now ?? new Date() };
  return prisma.$transaction(async (tx) => {
    if (!dryRun) {
      await lockRegistry(tx, orgId);
      await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${APPLY_TIMEOUT_MS}`);
    }
    const state = await readRegistryState(tx, orgId);
    const plan = planApply(document, state, planOptions);
    const applied = !dryRun && plan.changes;
    if (applied) await writePlan(tx, plan.writes);
    return { plan, applied };
  }, TRANSACTION_OPTIONS);
}
