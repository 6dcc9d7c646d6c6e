/**
 * Applies a registry document to one organization: in one transaction, under
 * a per-organization advisory lock (applies to one organization run one after
 * the other), the state is read, the plan made from it (src/registry/plan.ts),
 * its removals checked against what the request allows
 * (src/registry/removals.ts) and its rows written; removed metrics are
 * archived and restored ones brought back (src/registry/archive.ts) in the
 * same transaction; the plan's impact (src/registry/impact.ts) is read
 * before the writes. Nothing is written when the plan changes nothing, so a
 * second apply of the same document leaves every `updated_at`, ETag and
 * `metrics_version` as it was. Readers see the registry before or after.
 *
 * ETags, `metrics_version` and search documents follow from the database's
 * triggers on the rows written (see the migrations): the apply only writes
 * what changed. A change of the organization's trust policy is the
 * exception: it moves no metric row, yet every verdict and its explanation
 * may read differently, so the apply bumps them all itself and evaluates
 * every verdict of the organization again.
 */
import { setTimeout } from 'node:timers/promises';
import type { NewChangeEvent } from '../changes/event.js';
import { recordEvents } from '../changes/record.js';
import { everyMetricTransitions, metricsAffectedBy, trustTransitions } from '../changes/trust-transitions.js';
import { type BulkRow, bulkStatement, chunks, column, insertRows, rowJson } from '../db/bulk-write.js';
import { lockRegistry } from '../db/registry-lock.js';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { TrustPolicy } from '../metric/trust.js';
import type { TrustPolicyDocument } from '../metric/trust-policy.js';
import { archiveMetrics, restoreHistory } from './archive.js';
import type { RegistryDocument } from './document.js';
import { applyEvents, type RemovedMetrics } from './events.js';
import { type Impact, planImpact } from './impact.js';
import { ConflictsRefused } from './ownership.js';
import { desireDocument, metricsToCompare, type Plan, type PlanWrites, planApply } from './plan.js';
import { checkRemovals, DEFAULT_PRUNE_MAX_REMOVALS, removalsToConfirm } from './removals.js';
import { readRegistryState, readStoredMetrics } from './state.js';

export interface ApplyOptions {
  /** remove the organization's metrics that the document does not list */
  prune?: boolean;
  /** plan only: nothing is written */
  dryRun?: boolean;
  /** take over the fields the document sets that another source owns (else such an apply is refused) */
  forceConflicts?: boolean;
  /** how the refusal of conflicts tells the caller to force them */
  forceHint?: string;
  /** refuse conflicts in a dry run too (a check: what it plans must be applicable) */
  refuseConflicts?: boolean;
  /** removals applied without confirmation (PRUNE_MAX_REMOVALS); default DEFAULT_PRUNE_MAX_REMOVALS */
  maxRemovals?: number;
  /** the removals the request accepts (allow_removals); needed past maxRemovals or to remove every metric */
  allowRemovals?: number;
  now?: Date;
  /** the thresholds of the verdicts whose changes the apply announces (metric.trust_changed) */
  trust: TrustPolicy;
}

export interface ApplyOutcome {
  plan: Plan;
  /** whether rows were written */
  applied: boolean;
  /** events recorded in the change feed */
  events: number;
  /** the allow_removals an apply of this plan needs; null: none */
  allowRemovalsRequired: number | null;
  /** what the plan's removals, deprecations, supersessions and definition changes affect, as before its writes */
  impact: Impact[];
}

/**
 * After each statement of its writes, an apply waits as long as the statement
 * took: it takes at most about half of the database's time while it runs,
 * and the reads of every tenant beside it keep the rest. A large apply takes
 * about twice as long; an apply of a few changes is one or two statements.
 */
const WRITE_PACE = 1;

async function paced<T>(statement: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await statement();
  await setTimeout((performance.now() - started) * WRITE_PACE);
  return result;
}

/** A large apply is many statements; the pool's statement_timeout is meant for reads. */
const APPLY_TIMEOUT_MS = 300_000;
const TRANSACTION_OPTIONS = { timeout: APPLY_TIMEOUT_MS, maxWait: 60_000 };

type Tx = Prisma.TransactionClient;
/** Updates metrics to the rows given (all columns but their id, organization and creation time), likewise. */
async function updateMetrics(tx: Tx, rows: readonly BulkRow[]): Promise<void> {
  const [first] = rows;
  if (!first) return;
  const fields = Object.keys(first).filter((field) => !['id', 'orgId', 'createdAt'].includes(field));
  const columns = fields.map((field) => `"${column(field)}"`);
  for (const chunk of chunks(rows)) {
    await paced(() =>
      bulkStatement(
        tx,
        `UPDATE "metric" AS m SET (${columns.join(', ')}) = (${columns.map((c) => `r.${c}`).join(', ')})
       FROM jsonb_populate_recordset(NULL::"metric", $1::jsonb) AS r WHERE m."id" = r."id"`,
        rowJson(chunk),
      ),
    );
  }
}

async function deleteWhere(tx: Tx, table: string, key: string, ids: readonly string[]): Promise<void> {
  for (const chunk of chunks(ids)) {
    await paced(() => tx.$executeRawUnsafe(`DELETE FROM "${table}" WHERE "${key}" = ANY($1::uuid[])`, chunk));
  }
}

async function writePlan(tx: Tx, orgId: string, writes: PlanWrites, now: Date): Promise<void> {
  await insertRows(tx, 'project', writes.projects, paced);
  await insertRows(tx, 'domain', writes.domains, paced);
  await insertRows(tx, 'metric', [...writes.created, ...writes.restored], paced);
  for (const chunk of chunks(writes.restored.map((row) => row.key))) {
    await paced(() => restoreHistory(tx, orgId, chunk));
  }
  await updateMetrics(
    tx,
    writes.updated.map(({ data }) => data),
  );
  await deleteWhere(tx, 'approval', 'metric_id', writes.governanceOf);
  await deleteWhere(tx, 'metric_version', 'metric_id', writes.governanceOf);
  await deleteWhere(tx, 'metric_relationship', 'metric_id', writes.relationshipsOf);
  await deleteWhere(tx, 'metric_input', 'metric_id', writes.inputsOf);
  await insertRows(tx, 'metric_version', writes.versions, paced);
  await insertRows(tx, 'approval', writes.approvals, paced);
  await insertRows(tx, 'metric_relationship', writes.relationships, paced);
  await insertRows(tx, 'metric_input', writes.inputs, paced);
  if (writes.trustPolicy) await writeTrustPolicy(tx, orgId, writes.trustPolicy.value);
  for (const chunk of chunks(writes.removed)) await paced(() => archiveMetrics(tx, orgId, chunk, now));
  await deleteWhere(tx, 'metric', 'id', writes.removed);
}

/**
 * Stores the organization's trust policy (null: the defaults) and bumps the
 * ETag of each of its metrics and its `metrics_version`: what a verdict's
 * explanation says may change even where the verdict does not.
 */
async function writeTrustPolicy(tx: Tx, orgId: string, policy: TrustPolicyDocument | null): Promise<void> {
  const value = policy === null ? null : JSON.stringify(policy);
  await tx.$executeRaw`UPDATE "organization" SET "trust_policy" = ${value}::jsonb,
    "metrics_version" = "metrics_version" + 1 WHERE "id" = ${orgId}::uuid`;
  await tx.$executeRaw`UPDATE "metric_etag" SET "version" = nextval('metric_etag_seq')
    WHERE "metric_id" IN (SELECT "id" FROM "metric" WHERE "org_id" = ${orgId}::uuid)`;
}

async function readRemoved(tx: Tx, ids: readonly string[]): Promise<RemovedMetrics> {
  const rows = ids.length
    ? await tx.metric.findMany({
        where: { id: { in: [...ids] } },
        select: { id: true, key: true, name: true, lifecycleStatus: true },
      })
    : [];
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * Writes the plan and records its events, in the apply's transaction: the
 * events of its metrics, then the trust transitions of every metric whose
 * verdict the writes can move (relationships read before and after them;
 * a metric whose inputs changed is among the updated ones), or of every
 * metric of the organization when its trust policy changed.
 */
async function writeWithEvents(
  tx: Tx,
  plan: Plan,
  details: Parameters<typeof applyEvents>[1],
  options: { now: Date; trust: TrustPolicy },
): Promise<number> {
  const { writes } = plan;
  const changed = [...writes.updated.map(({ id }) => id), ...writes.removed];
  const affectedBefore = await metricsAffectedBy(tx, changed);
  const removed = await readRemoved(tx, writes.removed);
  await writePlan(tx, plan.orgId, writes, options.now);
  const added = [...writes.created, ...writes.restored].map(({ id }) => id);
  const affectedAfter = await metricsAffectedBy(tx, [...added, ...changed]);
  const gone = new Set(writes.removed);
  const candidates = [...new Set([...affectedBefore, ...affectedAfter])].filter((id) => !gone.has(id));
  const transitions: NewChangeEvent[] = [];
  if (writes.trustPolicy) {
    // A new trust policy can move any verdict: every metric, in this apply's transaction.
    await everyMetricTransitions(plan.orgId, options.trust, options.now, async (evaluate) => {
      const page = await evaluate(tx);
      transitions.push(...page.events);
      return page;
    });
  } else {
    transitions.push(...(await trustTransitions(tx, plan.orgId, candidates, options.trust, options.now)));
  }
  return recordEvents(tx, plan.orgId, [...applyEvents(plan, details, removed), ...transitions], options.now);
}

/** Plans `document` against the organization's registry and, unless a dry run, applies it. */
export async function applyRegistryDocument(
  prisma: PrismaClient,
  orgId: string,
  document: RegistryDocument,
  options: ApplyOptions,
): Promise<ApplyOutcome> {
  const dryRun = options.dryRun ?? false;
  const planOptions = {
    prune: options.prune ?? false,
    now: options.now ?? new Date(),
    forceConflicts: options.forceConflicts ?? false,
  };
  return prisma.$transaction(async (tx) => {
    if (!dryRun) {
      await lockRegistry(tx, orgId);
      await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${APPLY_TIMEOUT_MS}`);
      // Writes of this transaction are the apply's: they keep the applied_hash they set (see the migration).
      await tx.$executeRawUnsafe(`SET LOCAL registry.apply = 'on'`);
    }
    const keys = document.metrics.map((metric) => metric.key);
    const state = await readRegistryState(tx, orgId, keys, {
      inputs: document.metrics.some((metric) => metric.inputs.length > 0),
      trustPolicy: document.trustPolicy !== undefined,
    });
    const desired = desireDocument(document, state, planOptions);
    const details = await readStoredMetrics(tx, metricsToCompare(desired));
    const plan = planApply(desired, state, details, planOptions);
    if (plan.conflicts.length > 0 && !planOptions.forceConflicts && (!dryRun || options.refuseConflicts)) {
      throw new ConflictsRefused(plan.conflicts, options.forceHint ?? 'forcing the conflicts');
    }
    const maxRemovals = options.maxRemovals ?? DEFAULT_PRUNE_MAX_REMOVALS;
    if (!dryRun) checkRemovals(plan, state, { maxRemovals, allowRemovals: options.allowRemovals });
    const impact = await planImpact(tx, plan, state, details, planOptions.now);
    const applied = !dryRun && plan.changes;
    const events = applied
      ? await writeWithEvents(tx, plan, details, { now: planOptions.now, trust: options.trust })
      : 0;
    return { plan, applied, events, allowRemovalsRequired: removalsToConfirm(plan, state, maxRemovals), impact };
  }, TRANSACTION_OPTIONS);
}
