/**
 * Inputs must not form a cycle (docs/registry-document.md, "Inputs"): a
 * metric computed, through its inputs, from itself has no definition. The
 * graph checked is the registry after the apply: the document's metrics with
 * the inputs it gives them, the other metrics with their stored inputs (none
 * when a prune removes them). The search is a depth-first walk with a stack
 * of its own, not recursion: how deep a chain of inputs goes is the
 * document's choice (a chain of 20,000 metrics is a valid document).
 */
import { MAX_CYCLE_KEYS_SHOWN, MAX_INPUT_CYCLES_REPORTED } from './limits.js';
import type { RegistryProblem } from './registry-error.js';

/** A cycle as the keys on it, each an input of the one before, the last's input the first. */
export type InputCycle = string[];

const IN_PROGRESS = 1;
const DONE = 2;

/**
 * The cycles of the graph `inputsOf` (a metric's key -> its inputs' keys),
 * at most `max`, each found once by the edge that closes it; the walk starts
 * from the keys in the map's order.
 */
export function findInputCycles(
  inputsOf: ReadonlyMap<string, readonly string[]>,
  max = MAX_INPUT_CYCLES_REPORTED,
): InputCycle[] {
  const cycles: InputCycle[] = [];
  const seen = new Map<string, typeof IN_PROGRESS | typeof DONE>();
  /** the place on the stack of each metric in progress */
  const placeOf = new Map<string, number>();
  for (const root of inputsOf.keys()) {
    if (seen.has(root)) continue;
    const stack: { key: string; next: number }[] = [{ key: root, next: 0 }];
    seen.set(root, IN_PROGRESS);
    placeOf.set(root, 0);
    while (stack.length > 0) {
      const frame = stack[stack.length - 1] as { key: string; next: number };
      const inputs = inputsOf.get(frame.key) ?? [];
      if (frame.next < inputs.length) {
        const input = inputs[frame.next++] as string;
        const state = seen.get(input);
        if (state === undefined) {
          seen.set(input, IN_PROGRESS);
          placeOf.set(input, stack.length);
          stack.push({ key: input, next: 0 });
        } else if (state === IN_PROGRESS) {
          cycles.push(stack.slice(placeOf.get(input)).map(({ key }) => key));
          if (cycles.length >= max) return cycles;
        }
        continue;
      }
      stack.pop();
      seen.set(frame.key, DONE);
      placeOf.delete(frame.key);
    }
  }
  return cycles;
}

/** `a -> b -> c -> a`; a long cycle keeps its start and end, and says how many metrics it holds. */
export function describeCycle(cycle: InputCycle): string {
  const [first = ''] = cycle;
  if (cycle.length <= MAX_CYCLE_KEYS_SHOWN) return [...cycle, first].join(' -> ');
  const head = Math.ceil(MAX_CYCLE_KEYS_SHOWN / 2);
  const tail = MAX_CYCLE_KEYS_SHOWN - head;
  return `${[...cycle.slice(0, head), '...', ...cycle.slice(-tail), first].join(' -> ')} (${cycle.length} metrics)`;
}

/**
 * The cycles of inputs an apply would make, as problems. Each is reported at
 * an input the document gives (`metrics[m].inputs[i]`): the edge that closes
 * it when that is the document's, else the last of the document's edges on
 * it (the stored edges were acyclic before it), and named from that metric
 * on: `inputs form a cycle: a -> b -> a`.
 */
export function inputCycleProblems(
  documentInputs: readonly { key: string; inputs: readonly string[] }[],
  otherInputs: readonly (readonly [string, string])[],
): RegistryProblem[] {
  if (!documentInputs.some(({ inputs }) => inputs.length > 0)) return [];
  const placeOf = new Map<string, number>();
  const inputsOf = new Map<string, string[]>();
  documentInputs.forEach(({ key, inputs }, m) => {
    placeOf.set(key, m);
    inputsOf.set(key, [...inputs]);
  });
  for (const [metric, input] of otherInputs) {
    if (placeOf.has(metric)) continue;
    const list = inputsOf.get(metric);
    if (list) list.push(input);
    else inputsOf.set(metric, [input]);
  }
  return findInputCycles(inputsOf).map((cycle) => {
    let at = -1;
    for (let i = cycle.length - 1; i >= 0 && at < 0; i--) if (placeOf.has(cycle[i] as string)) at = i;
    const from = at < 0 ? [...cycle] : [...cycle.slice(at), ...cycle.slice(0, at)];
    const message = `inputs form a cycle: ${describeCycle(from)}`;
    const [metric = '', input = metric] = from.length > 1 ? from : [from[0], from[0]];
    const m = placeOf.get(metric);
    if (m === undefined) return { path: [], message };
    const i = (inputsOf.get(metric) ?? []).indexOf(input);
    return { path: ['metrics', m, 'inputs', i], message };
  });
}
