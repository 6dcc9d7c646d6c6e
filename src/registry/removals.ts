/**
 * A prune that removes many metrics, or every metric of the organization, is
 * applied only when the request says how many removals it accepts
 * (`allow_removals=N`, `--allow-removals N`), as `terraform apply` of a
 * reviewed plan: N is checked against the plan made in the apply's
 * transaction, so a registry that changed since the review (more to remove)
 * is refused, not pruned further than what was read. A dry run needs none and
 * says what an apply would need.
 */
import type { Plan } from './plan.js';
import type { RegistryState } from './state.js';

/** Removals an apply makes without confirmation (PRUNE_MAX_REMOVALS). */
export const DEFAULT_PRUNE_MAX_REMOVALS = 10;

/** Keys a refusal names at most: the plan (a dry run) lists them all. */
const KEYS_SHOWN = 20;

export interface RemovalLimits {
  /** removals an apply makes without confirmation */
  maxRemovals: number;
  /** the removals the request accepts; undefined: none said */
  allowRemovals?: number;
}

/**
 * The `allow_removals` an apply of `plan` needs: its count of removals when
 * they are more than `maxRemovals` or every metric of the organization; null
 * when it needs none.
 */
export function removalsToConfirm(plan: Plan, state: RegistryState, maxRemovals: number): number | null {
  const removed = plan.totals.removed;
  if (removed === 0) return null;
  return removed > maxRemovals || removed === state.metrics.length ? removed : null;
}

/** An apply whose removals the request did not accept: nothing was written. */
export class RemovalsNotAllowed extends Error {
  override readonly name = 'RemovalsNotAllowed';

  constructor(
    /** the keys the plan would remove */
    readonly keys: readonly string[],
    /** what the request accepted; undefined: it said nothing */
    readonly allowed: number | undefined,
    readonly reason: 'too_many' | 'every_metric' | 'fewer_allowed',
    readonly maxRemovals: number,
  ) {
    super(`prune would remove ${keys.length} metrics`);
  }

  /** The refusal, then the metrics it would remove, one a line; `confirm(n)` spells the way to accept n. */
  lines(confirm: (count: number) => string): string[] {
    const count = this.keys.length;
    const why =
      this.reason === 'fewer_allowed'
        ? `${confirm(this.allowed ?? 0)} is fewer than the ${count} metrics this prune would remove`
        : this.reason === 'every_metric'
          ? `this prune would remove every metric of the organization (${count})`
          : `this prune would remove ${count} metrics, more than the ${this.maxRemovals} removed without confirmation`;
    const shown = this.keys.slice(0, KEYS_SHOWN).map((key) => `would remove: ${key}`);
    const more = count > KEYS_SHOWN ? [`and ${count - KEYS_SHOWN} more (the dry run's plan lists them all)`] : [];
    return [
      `${why}; nothing was written. Review the plan (a dry run) and confirm with ${confirm(count)}`,
      ...shown,
      ...more,
    ];
  }
}

/** Throws {@link RemovalsNotAllowed} unless the request accepts every removal of `plan` that needs it. */
export function checkRemovals(plan: Plan, state: RegistryState, limits: RemovalLimits): void {
  const removed = plan.totals.removed;
  const keys = () => plan.entries.filter((entry) => entry.result === 'removed').map((entry) => entry.key);
  const { allowRemovals, maxRemovals } = limits;
  if (allowRemovals !== undefined) {
    if (allowRemovals < removed) throw new RemovalsNotAllowed(keys(), allowRemovals, 'fewer_allowed', maxRemovals);
    return;
  }
  if (removalsToConfirm(plan, state, maxRemovals) === null) return;
  const reason = removed === state.metrics.length ? 'every_metric' : 'too_many';
  throw new RemovalsNotAllowed(keys(), undefined, reason, maxRemovals);
}
