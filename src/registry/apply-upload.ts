/**
 * Applies an upload in parts (src/registry/upload.ts) as one registry
 * document of all its parts' metrics: one transaction under the
 * organization's registry lock, all or nothing, with the plan, the rules,
 * the events and the response of an apply (src/registry/apply.ts). What
 * differs is that the metrics are read, planned and written a chunk at a
 * time, so memory follows the chunk, not the upload:
 *
 * - First what needs the whole upload, from its keys and links only: the
 *   references (relationship targets and inputs listed in any part, or kept
 *   in the registry), the cycles of inputs, and what a prune removes (the
 *   source's metrics no part lists), checked against allow_removals before
 *   anything is written.
 * - Then each chunk is planned against the registry's state as read at the
 *   start (its keys are no other chunk's, and the projects and domains
 *   earlier chunks create are carried on) and written. Its relationships and
 *   inputs go to tables of the transaction, and into the registry's once
 *   every metric of the upload is written: a chunk may name a metric of a
 *   later one.
 * - Last the removals, the trust policy, and the trust transitions of
 *   everything the chunks touched, evaluated once over the registry as the
 *   whole upload leaves it.
 *
 * Problems are reported at `parts[p].metrics[m]...`. A refused upload
 * writes nothing and is kept, to be applied again (with force_conflicts or
 * allow_removals, say); an applied one is removed.
 */
import { recordEvents } from '../changes/record.js';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { TrustPolicyDocument } from '../metric/trust-policy.js';
import { type ApplyOptions, type ApplyOutcome, affectedBefore, touchedBy, transitionsAfter } from './apply.js';
import { DEFAULT_SOURCE, type RegistryDocument } from './document.js';
import { applyEvents } from './events.js';
import { type Impact, planImpact } from './impact.js';
import { inputCycleProblems } from './input-cycles.js';
import { ConflictsRefused, type PlacedConflict } from './ownership.js';
import {
  checkTargets,
  desireMetrics,
  inputsThatStay,
  metricsToCompare,
  noWrites,
  type PlanEntry,
  planApply,
  planOf,
  planOthers,
  registryIndex,
  trustPolicyResult,
} from './plan.js';
import { RegistryError, type RegistryProblem } from './registry-error.js';
import { checkRemovals, DEFAULT_PRUNE_MAX_REMOVALS, removalsToConfirm } from './removals.js';
import { readRegistryState, readStoredMetrics } from './state.js';
import { findUpload, type UploadChunk, uploadChunks, uploadLinks, uploadParts } from './upload.js';
import { beginApply, type LinkTables, paced, readRemoved, transactionOptions, writePlan } from './write-plan.js';

type Tx = Prisma.TransactionClient;

export interface UploadApplyOptions extends ApplyOptions {
  /** the source the upload is applied as, instead of its parts' */
  source?: string;
}

/**
 * How long an upload's apply may take, its transaction and each statement: an
 * upload lists up to MAX_UPLOAD_METRICS metrics, 12 times what one document
 * may, and a first apply of 100,000 took 110 s on a quick machine and 188 s
 * on a slow one (docs/performance.md), where a document's apply has 300 s.
 */
export const UPLOAD_APPLY_TIMEOUT_MS = 900_000;

/** Problems an upload reports at most: past them the rest of it is not read. */
export const MAX_UPLOAD_PROBLEMS = 1_000;

/** The transaction's tables of an upload's relationships and inputs, moved into the registry's last. */
const STAGED_LINKS: LinkTables = { relationships: 'upload_staged_relationship', inputs: 'upload_staged_input' };

async function stageLinks(tx: Tx): Promise<void> {
  await tx.$executeRawUnsafe(
    `CREATE TEMP TABLE "${STAGED_LINKS.relationships}" (LIKE "metric_relationship") ON COMMIT DROP`,
  );
  await tx.$executeRawUnsafe(`CREATE TEMP TABLE "${STAGED_LINKS.inputs}" (LIKE "metric_input") ON COMMIT DROP`);
}

async function moveLinks(tx: Tx): Promise<void> {
  await paced(() =>
    tx.$executeRawUnsafe(`INSERT INTO "metric_relationship" SELECT * FROM "${STAGED_LINKS.relationships}"`),
  );
  await paced(() => tx.$executeRawUnsafe(`INSERT INTO "metric_input" SELECT * FROM "${STAGED_LINKS.inputs}"`));
}

/** A problem found in a chunk (`metrics[m]...` of the chunk), at its part and place. */
const inPart = (chunk: Pick<UploadChunk, 'parts' | 'positions'>, problem: RegistryProblem): RegistryProblem => {
  const [head, m, ...rest] = problem.path;
  if (head !== 'metrics' || typeof m !== 'number') return problem;
  return {
    path: ['parts', chunk.parts[m] as number, 'metrics', chunk.positions[m] as number, ...rest],
    message: problem.message,
  };
};

/** Plans the upload against the organization's registry and, unless a dry run, applies it and removes the upload. */
export async function applyUpload(
  prisma: PrismaClient,
  orgId: string,
  uploadId: string,
  options: UploadApplyOptions,
): Promise<ApplyOutcome> {
  const dryRun = options.dryRun ?? false;
  const prune = options.prune ?? false;
  const now = options.now ?? new Date();
  const force = options.forceConflicts ?? false;
  const planOptions = { prune, now, forceConflicts: force };
  return prisma.$transaction(async (tx) => {
    if (!dryRun) await beginApply(tx, orgId, UPLOAD_APPLY_TIMEOUT_MS);
    await findUpload(tx, orgId, uploadId, { lock: !dryRun, now });
    const parts = await uploadParts(tx, uploadId);
    if (parts.length === 0) throw new RegistryError([{ path: [], message: 'the upload has no parts yet' }]);
    const source = options.source ?? parts[0]?.source ?? DEFAULT_SOURCE;
    const policyPart = parts.find((part) => part.hasTrustPolicy);
    const trustPolicy = policyPart ? ((policyPart.trustPolicy ?? null) as TrustPolicyDocument | null) : undefined;

    const { keys, links } = await uploadLinks(tx, uploadId);
    const listed = new Set(keys);
    const state = await readRegistryState(tx, orgId, keys, {
      inputs: links.some((metric) => metric.inputs.length > 0),
      trustPolicy: trustPolicy !== undefined,
    });
    const at = (m: number) => ['parts', links[m]?.part as number, 'metrics', links[m]?.position as number];
    const problems = checkTargets(links, listed, state, { source, prune, place: at });
    problems.push(
      ...inputCycleProblems(links, inputsThatStay(state, source, prune)).map((problem) =>
        inPart({ parts: links.map((l) => l.part), positions: links.map((l) => l.position) }, problem),
      ),
    );

    const others = planOthers(state, listed, source, prune);
    const policyResult = trustPolicyResult(state, trustPolicy);
    const removals = planOf(orgId, source, {
      conflicts: [],
      entries: others.entries,
      trustPolicy: policyResult,
      writes: { ...noWrites(), removed: others.removed },
    });
    const maxRemovals = options.maxRemovals ?? DEFAULT_PRUNE_MAX_REMOVALS;
    if (!dryRun && problems.length === 0) {
      checkRemovals(removals, state, { maxRemovals, allowRemovals: options.allowRemovals });
      await stageLinks(tx);
    }

    const index = registryIndex(state, keys);
    const entries: PlanEntry[] = [];
    const conflicts: PlacedConflict[] = [];
    const impact: Impact[] = [];
    const before: string[] = [];
    const touched: string[] = [];
    const refuseConflicts = !force && (!dryRun || options.refuseConflicts === true);
    let events = 0;
    for await (const chunk of uploadChunks(tx, uploadId, parts)) {
      const found: RegistryProblem[] = [];
      const document: RegistryDocument = {
        organization: '',
        source,
        fieldsSet: chunk.fieldsSet,
        defaults: {},
        metrics: chunk.metrics,
      };
      const desired = desireMetrics(document, state, index, now, found);
      for (const project of desired.projects) state.projects.set(project.name, project.id);
      for (const domain of desired.domains) state.domains.set(domain.name, domain.id);
      problems.push(...found.map((problem) => inPart(chunk, problem)));
      if (problems.length >= MAX_UPLOAD_PROBLEMS) break;
      if (problems.length > 0) continue;
      const details = await readStoredMetrics(tx, metricsToCompare(desired));
      const plan = planApply(desired, state, details, planOptions, 'part');
      for (const { key, index: m, conflict } of plan.conflicts) {
        conflicts.push({ key, index: chunk.positions[m] as number, part: chunk.parts[m] as number, conflict });
      }
      entries.push(...plan.entries);
      impact.push(...(await planImpact(tx, plan, state, details, now)));
      if (dryRun || !plan.changes || (refuseConflicts && conflicts.length > 0)) continue;
      before.push(...(await affectedBefore(tx, plan.writes)));
      await writePlan(tx, orgId, plan.writes, now, STAGED_LINKS);
      touched.push(...touchedBy(plan.writes));
      events += await recordEvents(tx, orgId, applyEvents(plan, details, new Map()), now);
    }
    if (problems.length > 0) throw new RegistryError(problems.slice(0, MAX_UPLOAD_PROBLEMS));
    if (refuseConflicts && conflicts.length > 0) {
      throw new ConflictsRefused(conflicts, options.forceHint ?? 'forcing the conflicts');
    }

    impact.push(...(await planImpact(tx, removals, state, new Map(), now)));
    const plan = planOf(orgId, source, {
      conflicts,
      entries: [...entries, ...others.entries],
      trustPolicy: policyResult,
      writes: noWrites(),
    });
    const applied = !dryRun && plan.changes;
    if (applied) {
      await moveLinks(tx);
      const final = {
        ...removals.writes,
        ...(policyResult === 'changed' ? { trustPolicy: { value: trustPolicy ?? null } } : {}),
      };
      before.push(...(await affectedBefore(tx, final)));
      const removed = await readRemoved(tx, final.removed);
      await writePlan(tx, orgId, final, now);
      const written = { before, touched, removed: final.removed, policyChanged: policyResult === 'changed' };
      const transitions = await transitionsAfter(tx, orgId, written, { now, trust: options.trust });
      events += await recordEvents(tx, orgId, [...applyEvents(removals, new Map(), removed), ...transitions], now);
    }
    if (!dryRun) await tx.registryUpload.delete({ where: { id: uploadId } });
    return {
      plan,
      applied,
      events,
      allowRemovalsRequired: removalsToConfirm(removals, state, maxRemovals),
      impact,
    };
  }, transactionOptions(UPLOAD_APPLY_TIMEOUT_MS));
}
