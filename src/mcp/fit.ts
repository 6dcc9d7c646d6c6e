/**
 * Size bounds for agents. A search page is shortened to fit its byte budget
 * by cutting the descriptions to a common length ({@link fitToBytes}); a
 * contract by leaving out and cutting commentary only ({@link fitContract}).
 * Each cut string ends in a visible marker. Identifiers, keys, timestamps,
 * counts and the business definition are never touched. A metric's inputs
 * are left out whole, last of all ({@link fitInputs}).
 */

export const TRUNCATION_MARKER = '…[truncated]';

/** UTF-8 bytes of the JSON of `value`, as it goes over the wire. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/** `text` cut to at most `max` characters (code points), marker included; unchanged when it fits. */
export function shorten(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  const keep = Math.max(0, max - TRUNCATION_MARKER.length);
  return chars.slice(0, keep).join('') + TRUNCATION_MARKER;
}

/**
 * `build(max)` makes the result with every shortenable string cut to `max`
 * characters (Infinity: none). Returns the result with the largest `max`
 * that fits `limitBytes` (at least the marker alone), found by bisection.
 */
export function fitToBytes<T>(limitBytes: number, build: (max: number) => T): T {
  const whole = build(Number.POSITIVE_INFINITY);
  if (jsonBytes(whole) <= limitBytes) return whole;
  let low = TRUNCATION_MARKER.length;
  let high = 64 * 1024;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (jsonBytes(build(mid)) <= limitBytes) low = mid;
    else high = mid - 1;
  }
  return build(low);
}

/** What {@link fitContract} may cut: the pinned notes (most recently pinned first) and the summary. */
export interface CuttableContract {
  agent_context_notes: { body: string }[];
  discussion_summary?: string | null;
}

/**
 * A contract within `limitBytes`, cutting only what is commentary, in this
 * order: whole pinned notes, oldest pinned first, down to the newest one;
 * then that note's body; then the discussion summary; then the last note.
 * The business definition, the name and every other fact the contract serves
 * are never cut: when they alone pass the budget, the budget gives way and
 * the result is larger than `limitBytes`. `agent_context_notes_omitted`
 * counts the notes left out (present only when some are).
 */
export function fitContract<T extends CuttableContract>(
  limitBytes: number,
  contract: T,
): T & { agent_context_notes_omitted?: number } {
  if (jsonBytes(contract) <= limitBytes) return contract;
  const notes = contract.agent_context_notes;
  const withNotes = (kept: number, lastBody?: string) => {
    const chosen = notes.slice(0, kept);
    const last = chosen[kept - 1];
    if (lastBody !== undefined && last) chosen[kept - 1] = { ...last, body: lastBody };
    const omitted = notes.length - kept;
    return { ...contract, agent_context_notes: chosen, ...(omitted ? { agent_context_notes_omitted: omitted } : {}) };
  };
  // Whole notes, oldest pinned first, while more than one is left.
  let kept = notes.length;
  while (kept > 1 && jsonBytes(withNotes(kept)) > limitBytes) kept--;
  if (jsonBytes(withNotes(kept)) <= limitBytes) return withNotes(kept);
  // The newest note's body, then the summary, each to the longest length that fits.
  const lastBody = notes[kept - 1]?.body;
  if (lastBody !== undefined) {
    const cut = longestFit(limitBytes, (max) => withNotes(kept, shorten(lastBody, max)));
    if (cut) return cut;
  }
  const summary = contract.discussion_summary;
  const bodyCut = lastBody === undefined ? withNotes(kept) : withNotes(kept, shorten(lastBody, 0));
  if (typeof summary === 'string') {
    const cut = longestFit(limitBytes, (max) => ({ ...bodyCut, discussion_summary: shorten(summary, max) }));
    if (cut) return cut;
  }
  // Then no note at all; what is left is the facts, and the budget gives way to them.
  const bare = withNotes(0);
  return typeof summary === 'string' ? { ...bare, discussion_summary: shorten(summary, 0) } : bare;
}

/** `build(max)` with the largest `max` that fits `limitBytes`, or null when even the marker alone does not. */
function longestFit<T>(limitBytes: number, build: (max: number) => T): T | null {
  if (jsonBytes(build(0)) > limitBytes) return null;
  let low = 0;
  let high = 64 * 1024;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (jsonBytes(build(mid)) <= limitBytes) low = mid;
    else high = mid - 1;
  }
  return build(low);
}

/** What {@link fitInputs} may leave out: a metric's inputs with their verdicts. */
export interface WithInputs {
  inputs: { verdict: string | null }[];
}

/**
 * `result` within `limitBytes` by leaving out whole inputs, as few as
 * fit: first those whose verdict is `use` (the last first), then the
 * others; those kept stay in their order. An input that is not `use` is
 * what an agent must hear of, so it goes last. `inputs_omitted` counts the
 * inputs left out (present only when some are). Unchanged when it fits;
 * with every input left out, the budget gives way to the rest.
 */
export function fitInputs<T extends WithInputs>(limitBytes: number, result: T): T & { inputs_omitted?: number } {
  if (jsonBytes(result) <= limitBytes) return result;
  const indexes = result.inputs.map((_, i) => i).reverse();
  const order = [
    ...indexes.filter((i) => result.inputs[i]?.verdict === 'use'),
    ...indexes.filter((i) => result.inputs[i]?.verdict !== 'use'),
  ];
  const without = (count: number) => {
    const left = new Set(order.slice(0, count));
    return {
      ...result,
      inputs: result.inputs.filter((_, i) => !left.has(i)),
      ...(count ? { inputs_omitted: count } : {}),
    };
  };
  // The fewest left out that fit (leaving out more never makes the result larger).
  let low = 1;
  let high = order.length;
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    if (jsonBytes(without(mid)) <= limitBytes) high = mid;
    else low = mid + 1;
  }
  return without(high);
}
