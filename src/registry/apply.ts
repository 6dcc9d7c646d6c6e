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
import type { NewChangeEvent } from '../changes/event.js';
import { recordEvents } from '../changes/record.js';
import { everyMetricTransitions, metricsAffectedBy, trustTransitions } from '../changes/trust-transitions.js';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { TrustPolicy } from '../metric/trust.js';
import type { RegistryDocument } from './document.js';
import { applyEvents } from './events.js';
import { type Impact, planImpact } from './impact.js';
import { ConflictsRefused } from './ownership.js';
import { desireDocument, metricsToCompare, type Plan, type PlanWrites, planApply } from './plan.js';
import { checkRemovals, DEFAULT_PRUNE_MAX_REMOVALS, removalsToConfirm } from './removals.js';
import { readRegistryState, readStoredMetrics } from './state.js';
import { beginApply, readRemoved, transactionOptions, writePlan } from './write-plan.js';

type Tx = Prisma.TransactionClient;

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

/** The metrics whose verdicts a plan's writes can move, read before them: those built on what they change or remove. */
export function affectedBefore(tx: Tx, writes: PlanWrites): Promise<string[]> {
  return metricsAffectedBy(tx, [...writes.updated.map(({ id }) => id), ...writes.removed]);
}

/** The metrics a plan's writes create, restore or update. */
export const touchedBy = (writes: PlanWrites): string[] => [
  ...[...writes.created, ...writes.restored].map(({ id }) => id),
  ...writes.updated.map(({ id }) => id),
];

/** What an apply's writes moved: gathered over its plans (one, or each chunk of an upload's). */
export interface WrittenPlans {
  /** {@link affectedBefore} of each plan */
  before: Iterable<string>;
  /** {@link touchedBy} each plan */
  touched: readonly string[];
  removed: readonly string[];
  /** the trust policy was written */
  policyChanged: boolean;
}

/**
 * After an apply's writes, the trust transitions they made: of every metric
 * whose verdict they can move (relationships read before and after them; a
 * metric whose inputs changed is among the touched), or of every metric of
 * the organization when its trust policy changed.
 */
export async function transitionsAfter(
  tx: Tx,
  orgId: string,
  written: WrittenPlans,
  options: { now: Date; trust: TrustPolicy },
): Promise<NewChangeEvent[]> {
  const transitions: NewChangeEvent[] = [];
  if (written.policyChanged) {
    // A new trust policy can move any verdict: every metric, in this apply's transaction.
    await everyMetricTransitions(orgId, options.trust, options.now, async (evaluate) => {
      const page = await evaluate(tx);
      transitions.push(...page.events);
      return page;
    });
    return transitions;
  }
  const after = await metricsAffectedBy(tx, written.touched);
  const gone = new Set(written.removed);
  const candidates = [...new Set([...written.before, ...after])].filter((id) => !gone.has(id));
  transitions.push(...(await trustTransitions(tx, orgId, candidates, options.trust, options.now)));
  return transitions;
}

/** Writes the plan and records its events, in the apply's transaction: the events of its metrics, then the trust transitions. */
async function writeWithEvents(
  tx: Tx,
  plan: Plan,
  details: Parameters<typeof applyEvents>[1],
  options: { now: Date; trust: TrustPolicy },
): Promise<number> {
  const { writes } = plan;
  const before = await affectedBefore(tx, writes);
  const removed = await readRemoved(tx, writes.removed);
  await writePlan(tx, plan.orgId, writes, options.now);
  const written = { before, touched: touchedBy(writes), removed: writes.removed, policyChanged: !!writes.trustPolicy };
  const transitions = await transitionsAfter(tx, plan.orgId, written, options);
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
      await beginApply(tx, orgId);
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
  }, transactionOptions());
}
