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
import {
  staleAtOf,
  type TrustPolicy,
  trustFactsJoin,
  trustPart,
  trustVerdict,
  type UntrustedInput,
} from '../metric/trust.js';
import { type NewChangeEvent, trustState } from './event.js';
import {
  type AnnouncedInput,
  type InputFacts,
  inputsIn,
  readInputGraph,
  UpstreamTrust,
  untrustedIdentity,
} from './input-trust.js';

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
  prev_stale_at: Date | string | null;
}

/** Where a walk of the organization's metrics by id starts: before the first. */
const BEFORE_FIRST_ID = '00000000-0000-0000-0000-000000000000';

/**
 * Passes at most: an input evaluated after the metrics built on it is taken up by them in the next
 * pass, so a change travels one level of inputs a pass at worst (further down a chain deeper than
 * this, the next sweep goes on).
 */
const MAX_PASSES = 64;

/** A page of a walk of the organization's metrics by id: the next `pageSize` after `after` (of those built on `inputsOf`). */
interface WalkPage {
  after: string;
  pageSize: number;
  /** only the metrics with one of these among their inputs */
  inputsOf?: readonly string[];
}

/**
 * A page of the metrics to evaluate with their verdict facts: a {@link WalkPage}, or `ids`, except for the facts of `held` (metrics whose facts the writer read
 * already, as inputs): their trust columns are null.
 */
function evaluation(orgId: string, which: WalkPage | { ids: readonly string[]; held: readonly string[] }) {
  const dependents =
    'inputsOf' in which && which.inputsOf
      ? sql`AND m.id IN (SELECT i.metric_id FROM metric_input i WHERE i.input_metric_id = ANY(${which.inputsOf}::uuid[]))`
      : sql``;
  const where =
    'after' in which ? sql`m.id > ${which.after}::uuid ${dependents}` : sql`m.id = ANY(${which.ids}::uuid[])`;
  // The announced states from the page's first id on as well: a merge join of the two tables by id then
  // starts at the page, not at the organization's first metric (a page late in a walk read them all).
  const announced = 'after' in which ? sql`AND s.metric_id > ${which.after}::uuid` : sql``;
  const skip = 'held' in which && which.held.length ? sql<boolean>`tm.id = ANY(${which.held}::uuid[])` : null;
  return compile(sql<EvaluatedRow>`
    SELECT m.id::text AS id, m.key, m.name, m.lifecycle_status::text AS lifecycle_status,
      s.verdict AS prev_verdict, s.reasons AS prev_reasons, s.preferred_metric_id::text AS prev_preferred,
      s.stale_at AS prev_stale_at, ${trustPart.columns}
    FROM metric m
    LEFT JOIN metric_trust_state s ON s.metric_id = m.id ${announced}
    ${trustFactsJoin(skip)}
    WHERE m.org_id = ${orgId}::uuid AND ${where}
    ORDER BY m.id
    LIMIT ${'pageSize' in which ? which.pageSize : PAGE}`);
}

const sameReasons = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((reason, i) => reason === b[i]);

const sameTime = (stored: Date | string | null, at: Date | null) =>
  (stored === null ? null : new Date(stored).getTime()) === (at === null ? null : at.getTime());

/** The verdict facts of `ids`, by id, for the metrics that are inputs of those a writer evaluates. */
async function readInputFacts(tx: Tx, orgId: string, ids: readonly string[]): Promise<Map<string, InputFacts>> {
  const facts = new Map<string, InputFacts>();
  for (let start = 0; start < ids.length; start += PAGE) {
    const statement = evaluation(orgId, { ids: ids.slice(start, start + PAGE), held: [] });
    const rows = await tx.$queryRawUnsafe<EvaluatedRow[]>(statement.sql, ...statement.parameters);
    for (const row of rows) facts.set(row.id, { key: row.key, facts: trustPart.read(row) });
  }
  return facts;
}

/** The inputs `ids` as last announced, by id. */
async function readAnnounced(tx: Tx, ids: readonly string[]): Promise<Map<string, AnnouncedInput>> {
  if (!ids.length) return new Map();
  const rows = await tx.$queryRawUnsafe<
    { id: string; key: string; verdict: string | null; reasons: string[] | null; untrusted_inputs: unknown }[]
  >(
    `SELECT m.id::text AS id, m.key, s.verdict, s.reasons, s.untrusted_inputs
     FROM unnest($1::uuid[]) AS a(id) JOIN metric m ON m.id = a.id
     LEFT JOIN metric_trust_state s ON s.metric_id = a.id`,
    ids,
  );
  return new Map(
    rows.map((row) => [
      row.id,
      {
        key: row.key,
        verdict: row.verdict as AnnouncedInput['verdict'],
        reasons: row.reasons as AnnouncedInput['reasons'],
        untrustedInputs: row.untrusted_inputs as UntrustedInput[] | null,
      },
    ]),
  );
}

/**
 * The verdicts of `rows` at `now`, recorded as the announced ones: a `metric.trust_changed` event for
 * each that differs from the verdict announced before; `written`, the metrics whose state it stored (an
 * event's, and a changed list of untrusted inputs that moves no verdict).
 */
async function announce(
  tx: Tx,
  orgId: string,
  rows: readonly EvaluatedRow[],
  inputFacts: ReadonlyMap<string, InputFacts>,
  upstream: UpstreamTrust,
  policy: TrustPolicy,
  now: Date,
): Promise<{ events: NewChangeEvent[]; written: string[] }> {
  const events: NewChangeEvent[] = [];
  const states: ({ metric_id: string } & Record<string, unknown>)[] = [];
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
    const staleAt = staleAtOf(stored, policy, now);
    if (
      !announced &&
      untrustedIdentity(stored.untrustedInputs) === untrustedIdentity(untrustedInputs) &&
      sameTime(row.prev_stale_at, staleAt)
    ) {
      continue;
    }
    states.push({
      metric_id: row.id,
      verdict: trust.verdict,
      reasons: trust.reasons,
      preferred_metric_id: trust.preferredMetricId,
      untrusted_inputs: untrustedInputs,
      stale_at: staleAt,
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
      `INSERT INTO metric_trust_state (metric_id, org_id, verdict, reasons, preferred_metric_id, untrusted_inputs, stale_at, evaluated_at)
       SELECT s.metric_id, $3::uuid, s.verdict, s.reasons, s.preferred_metric_id, s.untrusted_inputs, s.stale_at, $2::timestamptz
       FROM jsonb_populate_recordset(NULL::metric_trust_state, $1::jsonb) AS s
       ON CONFLICT (metric_id) DO UPDATE SET verdict = EXCLUDED.verdict, reasons = EXCLUDED.reasons,
         preferred_metric_id = EXCLUDED.preferred_metric_id, untrusted_inputs = EXCLUDED.untrusted_inputs,
         stale_at = EXCLUDED.stale_at, evaluated_at = EXCLUDED.evaluated_at`,
      JSON.stringify(states),
      now,
      orgId,
    );
  }
  return { events, written: states.map((state) => state.metric_id) };
}

/**
 * Runs `reads` with sequential scans off, within the caller's transaction only. Every read of a
 * verdict pass is by a metric's id through an index; right after an apply of thousands of rows the
 * table statistics still say the tables are small, and the planner scanned all the relationships
 * once per metric (0.6 ms a metric at 10,000).
 */
async function byIndex<T>(tx: Tx, reads: () => Promise<T>): Promise<T> {
  await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = off');
  const result = await reads();
  await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = on');
  return result;
}

/**
 * Evaluates the verdicts of `ids` at `now`, records them as the announced
 * ones and returns a `metric.trust_changed` event for each that differs from
 * the verdict announced before. Each verdict takes in the metric's inputs
 * (src/changes/input-trust.ts): the graph upstream of `ids` is read first,
 * then the facts of every metric that is an input in it.
 */
export async function trustTransitions(
  tx: Tx,
  orgId: string,
  ids: readonly string[],
  policy: TrustPolicy,
  now: Date,
): Promise<NewChangeEvent[]> {
  const all = [...new Set(ids)];
  if (!all.length) return [];
  return byIndex(tx, async () => {
    const graph = await readInputGraph(tx, all);
    const inputFacts = await readInputFacts(tx, orgId, inputsIn(graph));
    const upstream = new UpstreamTrust(graph, inputFacts, policy, now);
    const events: NewChangeEvent[] = [];
    for (let start = 0; start < all.length; start += PAGE) {
      const page = all.slice(start, start + PAGE);
      // A metric that is an input of another and evaluated itself has its facts read once, with the inputs.
      const statement = evaluation(orgId, { ids: page, held: page.filter((id) => inputFacts.has(id)) });
      const rows = await tx.$queryRawUnsafe<EvaluatedRow[]>(statement.sql, ...statement.parameters);
      events.push(...(await announce(tx, orgId, rows, inputFacts, upstream, policy, now)).events);
    }
    return events;
  });
}

/** What the evaluation of one page of every metric did. */
export interface PageTransitions {
  events: NewChangeEvent[];
  /** the metrics whose state it stored: the next pass evaluates those built on them; none ends the evaluation */
  written: string[];
  /** the page's last metric id (where the next page starts); null past the last page */
  last: string | null;
}

/**
 * One page of {@link everyMetricTransitions}: a {@link WalkPage} of metrics, each with its inputs
 * from other pages as they were last announced (verdict, reasons and list of untrusted inputs) rather
 * than worked out again upstream, so that its memory and its reads are a page's whatever the registry's
 * size: one statement with the page's verdict facts, one of its edges, one of its inputs' states.
 */
async function pageTransitions(
  tx: Tx,
  orgId: string,
  page: WalkPage,
  policy: TrustPolicy,
  now: Date,
): Promise<PageTransitions> {
  const { rows, graph, announced } = await byIndex(tx, async () => {
    const statement = evaluation(orgId, page);
    const rows = await tx.$queryRawUnsafe<EvaluatedRow[]>(statement.sql, ...statement.parameters);
    const inPage = new Set(rows.map((row) => row.id));
    const graph = await readInputGraph(tx, [...inPage], { direct: true });
    const announced = await readAnnounced(
      tx,
      inputsIn(graph).filter((id) => !inPage.has(id)),
    );
    return { rows, graph, announced };
  });
  if (!rows.length) return { events: [], written: [], last: null };
  // The page's own metrics may be inputs of each other: worked out here, with the facts just read.
  const inputFacts = new Map(rows.map((row) => [row.id, { key: row.key, facts: trustPart.read(row) }]));
  const upstream = new UpstreamTrust(graph, inputFacts, policy, now, announced);
  const { events, written } = await announce(tx, orgId, rows, inputFacts, upstream, policy, now);
  return { events, written, last: rows.length < page.pageSize ? null : (rows.at(-1) as EvaluatedRow).id };
}

/**
 * Every metric of the organization evaluated (the sweep, a new trust policy), a page
 * at a time in bounded memory: a first pass over every metric, then passes over the metrics built on
 * those whose state the pass before stored (nothing else can move: the facts are the same), until one
 * stores nothing. `runPage` runs a page's evaluation: in a transaction of its own (the sweep, so that
 * applies take turns with it) or in the caller's, and records its events. `pageSize`: metrics a page
 * (tests take small pages).
 */
export async function everyMetricTransitions(
  orgId: string,
  policy: TrustPolicy,
  now: Date,
  runPage: (evaluate: (tx: Tx) => Promise<PageTransitions>) => Promise<PageTransitions>,
  { pageSize = PAGE } = {},
): Promise<void> {
  // undefined: every metric (the first pass); then the metrics built on those the pass before wrote.
  let inputsOf: readonly string[] | undefined;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const written: string[] = [];
    let after: string | null = BEFORE_FIRST_ID;
    while (after !== null) {
      const walk = { after, pageSize, inputsOf };
      const page = await runPage((tx) => pageTransitions(tx, orgId, walk, policy, now));
      written.push(...page.written);
      after = page.last;
    }
    if (!written.length) return;
    inputsOf = written;
  }
}
