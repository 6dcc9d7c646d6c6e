/**
 * `metric.trust_changed`: the verdict of a metric computed now, against the
 * one last announced for it (table metric_trust_state). Whatever changed it
 * (an apply of this metric or of another one, validation evidence, or time),
 * the writer that could have changed it compares the two in its transaction
 * and records an event when they differ. A metric without an announced
 * verdict (new, or older than the feed) gets one silently: there is no
 * "from" to report.
 */
import { sql } from 'kysely';
import { compile } from '../db/kysely.js';
import type { Prisma } from '../generated/prisma/client.js';
import { type TrustPolicy, trustFactsJoin, trustPart, trustVerdict } from '../metric/trust.js';
import { type NewChangeEvent, trustState } from './event.js';
import { type InputFacts, inputsIn, readInputGraph, UpstreamTrust, untrustedIdentity } from './input-trust.js';

type Tx = Prisma.TransactionClient;

/** Metrics a statement evaluates at most. */
const PAGE = 1000;

/**
 * The metrics whose verdict a change of `ids` can move, in the registry as it
 * is now: the metrics themselves, what they supersede (down the whole chain:
 * its end is the preferred metric of every metric on it), what they
 * conflict with, in either direction, and every metric built on one of
 * those (its dependents through metric_input, transitively: an input's
 * verdict carries over). Other relationships (`related_to`, `variant_of`)
 * do not enter a verdict. A writer that changes relationships or inputs asks
 * before and after its writes.
 */
export async function metricsAffectedBy(tx: Tx, ids: readonly string[]): Promise<string[]> {
  if (!ids.length) return [];
  const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
    `WITH RECURSIVE affected(id) AS (
       SELECT unnest($1::uuid[])
       UNION
       SELECT n.id FROM affected a CROSS JOIN LATERAL (
         SELECT r.target_metric_id AS id FROM metric_relationship r
         WHERE r.metric_id = a.id AND r.kind IN ('supersedes', 'conflicts_with')
         UNION ALL
         SELECT r.metric_id FROM metric_relationship r
         WHERE r.target_metric_id = a.id AND r.kind = 'conflicts_with'
         UNION ALL
         SELECT i.metric_id FROM metric_input i WHERE i.input_metric_id = a.id) n)
     SELECT id::text AS id FROM affected`,
    ids,
  );
  return rows.map((row) => row.id);
}

interface EvaluatedRow extends Record<string, unknown> {
  id: string;
  key: string;
  name: string;
  lifecycle_status: string;
  prev_verdict: string | null;
  prev_reasons: string[] | null;
  prev_preferred: string | null;
}

/** Which metrics to evaluate: some of them, or every metric of the organization (the sweep). */
export type TrustScope = { ids: readonly string[] } | 'all';

/**
 * A page of the metrics to evaluate, with their verdict facts except for those of `held` (metrics
 * whose facts the writer read already, as inputs): their trust columns are null.
 */
function evaluation(orgId: string, scope: TrustScope, after: string, ids: readonly string[], held: readonly string[]) {
  const which = scope === 'all' ? sql`m.id > ${after}::uuid` : sql`m.id = ANY(${ids}::uuid[])`;
  const skip = held.length ? sql<boolean>`tm.id = ANY(${held}::uuid[])` : null;
  return compile(sql<EvaluatedRow>`
    SELECT m.id::text AS id, m.key, m.name, m.lifecycle_status::text AS lifecycle_status,
      s.verdict AS prev_verdict, s.reasons AS prev_reasons, s.preferred_metric_id::text AS prev_preferred,
      ${trustPart.columns}
    FROM metric m
    LEFT JOIN metric_trust_state s ON s.metric_id = m.id
    ${trustFactsJoin(skip)}
    WHERE m.org_id = ${orgId}::uuid AND ${which}
    ORDER BY m.id
    LIMIT ${PAGE}`);
}

/**
 * The first `count` ids of sorted `ids` after `after`: those a page of the sweep (the next `count`
 * metrics by id) can hold, as the held ids are some of the organization's metrics.
 */
function nextIds(ids: readonly string[], after: string, count: number): string[] {
  let low = 0;
  let high = ids.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((ids[mid] as string) <= after) low = mid + 1;
    else high = mid;
  }
  return ids.slice(low, low + count);
}

const sameReasons = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((reason, i) => reason === b[i]);

/** The verdict facts of `ids`, by id, for the metrics that are inputs of those a writer evaluates. */
async function readInputFacts(tx: Tx, orgId: string, ids: readonly string[]): Promise<Map<string, InputFacts>> {
  const facts = new Map<string, InputFacts>();
  for (let start = 0; start < ids.length; start += PAGE) {
    const statement = evaluation(orgId, { ids }, '', ids.slice(start, start + PAGE), []);
    const rows = await tx.$queryRawUnsafe<EvaluatedRow[]>(statement.sql, ...statement.parameters);
    for (const row of rows) facts.set(row.id, { key: row.key, facts: trustPart.read(row) });
  }
  return facts;
}

/**
 * Evaluates the verdicts of `scope` at `now`, records them as the announced
 * ones and returns a `metric.trust_changed` event for each that differs from
 * the verdict announced before. Each verdict takes in the metric's inputs
 * (src/changes/input-trust.ts): the graph upstream of `scope` is read first,
 * then the facts of every metric that is an input in it.
 */
export async function trustTransitions(
  tx: Tx,
  orgId: string,
  scope: TrustScope,
  policy: TrustPolicy,
  now: Date,
): Promise<NewChangeEvent[]> {
  const events: NewChangeEvent[] = [];
  const all = scope === 'all' ? [] : [...new Set(scope.ids)];
  // Every read here is by a metric's id through an index. Right after an apply of thousands of
  // rows the table statistics still say the tables are small, and the planner scanned all the
  // relationships once per metric (0.6 ms a metric at 10,000); within this transaction only.
  await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = off');
  const graph = await readInputGraph(tx, orgId, scope === 'all' ? 'all' : all);
  const inputFacts = await readInputFacts(tx, orgId, inputsIn(graph));
  const upstream = new UpstreamTrust(graph, inputFacts, policy, now);
  // A metric that is an input of another and evaluated itself (most of them, in a sweep) has its facts
  // read once, with the inputs: each page's statement skips those it holds.
  const heldIds = [...inputFacts.keys()].sort();
  let after = '00000000-0000-0000-0000-000000000000';
  for (let start = 0; ; start += PAGE) {
    const page = all.slice(start, start + PAGE);
    if (scope !== 'all' && !page.length) break;
    const held = scope === 'all' ? nextIds(heldIds, after, PAGE) : page.filter((id) => inputFacts.has(id));
    const statement = evaluation(orgId, scope, after, page, held);
    const rows = await tx.$queryRawUnsafe<EvaluatedRow[]>(statement.sql, ...statement.parameters);
    const states: unknown[] = [];
    for (const row of rows) {
      const stored = inputFacts.get(row.id)?.facts ?? trustPart.read(row);
      const untrustedInputs = upstream.untrustedInputsOf(row.id);
      const trust = trustVerdict({ ...stored, untrustedInputs }, policy, now);
      const previous = row.prev_verdict;
      const announced =
        previous === null ||
        previous !== trust.verdict ||
        !sameReasons(row.prev_reasons ?? [], trust.reasons) ||
        row.prev_preferred !== trust.preferredMetricId;
      if (!announced && untrustedIdentity(stored.untrustedInputs) === untrustedIdentity(untrustedInputs)) continue;
      states.push({
        metric_id: row.id,
        verdict: trust.verdict,
        reasons: trust.reasons,
        preferred_metric_id: trust.preferredMetricId,
        untrusted_inputs: untrustedInputs,
      });
      if (previous === null || !announced) continue;
      events.push({
        type: 'metric.trust_changed',
        metric: { id: row.id, key: row.key, name: row.name, lifecycleStatus: row.lifecycle_status },
        detail: {
          from: { verdict: previous, reasons: row.prev_reasons ?? [] },
          to: trustState(trust),
          preferred_metric_id: trust.preferredMetricId,
        },
      });
    }
    if (states.length) {
      await tx.$executeRawUnsafe(
        `INSERT INTO metric_trust_state (metric_id, verdict, reasons, preferred_metric_id, untrusted_inputs, evaluated_at)
         SELECT s.metric_id, s.verdict, s.reasons, s.preferred_metric_id, s.untrusted_inputs, $2::timestamptz
         FROM jsonb_populate_recordset(NULL::metric_trust_state, $1::jsonb) AS s
         ON CONFLICT (metric_id) DO UPDATE SET verdict = EXCLUDED.verdict, reasons = EXCLUDED.reasons,
           preferred_metric_id = EXCLUDED.preferred_metric_id, untrusted_inputs = EXCLUDED.untrusted_inputs,
           evaluated_at = EXCLUDED.evaluated_at`,
        JSON.stringify(states),
        now,
      );
    }
    if (scope === 'all') {
      const last = rows.at(-1);
      if (!last || rows.length < PAGE) break;
      after = last.id;
    }
  }
  await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = on');
  return events;
}
