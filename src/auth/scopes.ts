/**
 * Scopes (contract section 5). Routes request `metrics:read` (list, detail,
 * GraphQL) or `canonical-metric-api:read` (contract). Compatibility is
 * bidirectional: the Agent Contract pair (`canonical-metric-api:read`,
 * `definition:read`) satisfies `metrics:read`, and legacy `metrics:read`
 * keys satisfy the contract route. Either member of the pair is enough for
 * `metrics:read`; only `canonical-metric-api:read` or `metrics:read` reach
 * the contract.
 */
export const AGENT_CONTRACT_SCOPES = ['canonical-metric-api:read', 'definition:read'] as const;

export type RequestedScope = 'metrics:read' | 'canonical-metric-api:read';

const SATISFIED_BY: Record<RequestedScope, readonly string[]> = {
  'metrics:read': ['metrics:read', 'canonical-metric-api:read', 'definition:read'],
  'canonical-metric-api:read': ['canonical-metric-api:read', 'metrics:read'],
};

export function scopeSatisfied(granted: readonly string[], requested: RequestedScope): boolean {
  return granted.some((scope) => SATISFIED_BY[requested].includes(scope));
}

/** The granted scopes any one of which satisfies `requested`. */
export const scopesSatisfying = (requested: RequestedScope): readonly string[] => SATISFIED_BY[requested];

/** Scopes given at key creation must be exactly the Agent Contract pair. */
export function isAgentContractPair(scopes: readonly string[]): boolean {
  return (
    scopes.length === AGENT_CONTRACT_SCOPES.length && AGENT_CONTRACT_SCOPES.every((scope) => scopes.includes(scope))
  );
}
