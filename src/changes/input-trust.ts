/**
 * Trust that follows inputs (docs/trust.md#inputs): which upstream metrics of
 * a metric carry their state over to it. A metric's inputs are edges of
 * metric_input; an input carries over when its own verdict (computed with
 * its own inputs) is do_not_use or its latest validation failed
 * (`carriesOver`). A metric's untrusted inputs are its direct inputs that
 * carry over, then those of its inputs, without repeats, at most
 * MAX_UNTRUSTED_INPUTS.
 *
 * Computed by writers (src/changes/trust-transitions.ts) over the graph of
 * what they evaluate and kept with the announced verdict, so that a read
 * takes the list from one row instead of walking the graph. The walk is
 * iterative: a chain as long as the registry is deep cannot overflow the
 * stack, and a cycle (which applies refuse) ends where it closes.
 */
import type { Prisma } from '../generated/prisma/client.js';
import {
  carriesOver,
  MAX_UNTRUSTED_INPUTS,
  type Trust,
  type TrustFacts,
  type TrustPolicy,
  trustVerdict,
  type UntrustedInput,
} from '../metric/trust.js';

type Tx = Prisma.TransactionClient;

/** Each metric's inputs, in their order, for the metrics a writer evaluates and everything upstream of them. */
export type InputGraph = Map<string, string[]>;

/** The edges upstream of `ids` (of `ids` alone when `direct`), one statement. */
export async function readInputGraph(tx: Tx, ids: readonly string[], { direct = false } = {}): Promise<InputGraph> {
  const rows = !ids.length
    ? []
    : await tx.$queryRawUnsafe<{ metric_id: string; input_id: string }[]>(
        direct
          ? `SELECT i.metric_id::text AS metric_id, i.input_metric_id::text AS input_id
             FROM metric_input i WHERE i.metric_id = ANY($1::uuid[]) ORDER BY i.metric_id, i.position`
          : `WITH RECURSIVE up(id) AS (
               SELECT unnest($1::uuid[])
               UNION
               SELECT i.input_metric_id FROM up JOIN metric_input i ON i.metric_id = up.id)
             SELECT i.metric_id::text AS metric_id, i.input_metric_id::text AS input_id
             FROM metric_input i WHERE i.metric_id IN (SELECT id FROM up) ORDER BY i.metric_id, i.position`,
        ids,
      );
  const graph: InputGraph = new Map();
  for (const row of rows) {
    const inputs = graph.get(row.metric_id);
    if (inputs) inputs.push(row.input_id);
    else graph.set(row.metric_id, [row.input_id]);
  }
  return graph;
}

/** The metrics that are an input of some metric of `graph`. */
export const inputsIn = (graph: InputGraph): string[] => [...new Set([...graph.values()].flat())];

export interface InputFacts {
  key: string;
  facts: TrustFacts;
}

/**
 * An input as last announced (its row of metric_trust_state): its verdict, reasons and own list of
 * untrusted inputs; null fields when it has none yet.
 */
export interface AnnouncedInput {
  key: string;
  verdict: UntrustedInput['verdict'] | null;
  reasons: UntrustedInput['reasons'] | null;
  untrustedInputs: UntrustedInput[] | null;
}

/**
 * Whether an announced verdict carries over ({@link carriesOver}): do_not_use, or a failed latest
 * validation, which a verdict short of do_not_use always lists among its reasons.
 */
const announcedCarries = (input: AnnouncedInput): boolean =>
  input.verdict === 'do_not_use' || (input.reasons ?? []).includes('failed_validation');

/**
 * The untrusted inputs of the metrics of a graph, given the verdict facts
 * of every metric that is an input in it. Each metric is worked out once.
 */
export class UpstreamTrust {
  private readonly upstream = new Map<string, UntrustedInput[]>();
  private readonly verdicts = new Map<string, { trust: Trust; carries: boolean }>();

  private readonly keys = new Map<string, string>();

  /**
   * `announced`: inputs taken as last announced, verdict and list, rather than worked out from their
   * facts and the graph, which does not hold their inputs (a page of every metric:
   * src/changes/trust-transitions.ts); none by default.
   */
  constructor(
    private readonly graph: InputGraph,
    private readonly inputs: ReadonlyMap<string, InputFacts>,
    private readonly policy: TrustPolicy,
    private readonly now: Date,
    announced: ReadonlyMap<string, AnnouncedInput> = new Map(),
  ) {
    for (const [id, input] of announced) {
      this.keys.set(id, input.key);
      this.upstream.set(id, input.untrustedInputs ?? []);
      if (input.verdict === null) continue;
      const trust = {
        verdict: input.verdict,
        reasons: input.reasons ?? [],
        preferredMetricId: null,
        untrustedInputs: [],
      };
      this.verdicts.set(id, { trust, carries: announcedCarries(input) });
    }
  }

  /** The upstream metrics that carry their state over to `id`, direct inputs first. */
  untrustedInputsOf(id: string): UntrustedInput[] {
    const known = this.upstream.get(id);
    if (known) return known;
    const stack: { id: string; expanded: boolean }[] = [{ id, expanded: false }];
    const open = new Set<string>();
    while (stack.length) {
      const top = stack[stack.length - 1] as { id: string; expanded: boolean };
      if (this.upstream.has(top.id)) {
        stack.pop();
        continue;
      }
      const inputs = this.graph.get(top.id) ?? [];
      if (!top.expanded) {
        top.expanded = true;
        open.add(top.id);
        for (const input of inputs) {
          if (!this.upstream.has(input) && !open.has(input)) stack.push({ id: input, expanded: false });
        }
        continue;
      }
      stack.pop();
      open.delete(top.id);
      this.upstream.set(top.id, this.combine(inputs));
    }
    return this.upstream.get(id) ?? [];
  }

  /** The list of a metric from its inputs' verdicts and lists (an input still open closes a cycle: none). */
  private combine(inputs: readonly string[]): UntrustedInput[] {
    const list: UntrustedInput[] = [];
    const seen = new Set<string>();
    const add = (entry: UntrustedInput) => {
      if (list.length < MAX_UNTRUSTED_INPUTS && !seen.has(entry.id)) {
        seen.add(entry.id);
        list.push(entry);
      }
    };
    for (const input of inputs) {
      const own = this.verdictOf(input);
      if (own?.carries) {
        add({
          id: input,
          key: this.inputs.get(input)?.key ?? this.keys.get(input) ?? '',
          verdict: own.trust.verdict,
          reasons: own.trust.reasons,
        });
      }
    }
    for (const input of inputs) for (const entry of this.upstream.get(input) ?? []) add(entry);
    return list;
  }

  /** An input's own verdict, its untrusted inputs included; null when its facts were not read. */
  private verdictOf(id: string): { trust: Trust; carries: boolean } | null {
    const cached = this.verdicts.get(id);
    if (cached) return cached;
    const input = this.inputs.get(id);
    const upstream = this.upstream.get(id);
    if (!input || !upstream) return null;
    const facts = { ...input.facts, untrustedInputs: upstream };
    const trust = trustVerdict(facts, this.policy, this.now);
    const verdict = { trust, carries: carriesOver(trust, facts) };
    this.verdicts.set(id, verdict);
    return verdict;
  }
}

/** One spelling of a list for comparison (jsonb keeps its members in its own order). */
export const untrustedIdentity = (list: readonly UntrustedInput[]): string =>
  list.map((entry) => `${entry.id}:${entry.key}:${entry.verdict}:${entry.reasons.join(',')}`).join(';');
