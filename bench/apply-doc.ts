/**
 * A registry document of `n` metrics for the apply scenario: every metric
 * with a business definition, aliases and grains, every tenth with a released
 * version and its approval, every twentieth superseding the one before it.
 * Deterministic; `revision` changes the descriptions of the first `changed`
 * metrics, so a second document differs from the first in exactly those.
 */
export function benchRegistryDocument(
  organization: string,
  n: number,
  options: { changed?: number; revision?: number } = {},
) {
  const changed = options.changed ?? 0;
  const revision = options.revision ?? 0;
  const pad = (i: number) => String(i).padStart(5, '0');
  return {
    organization,
    defaults: { project: 'Core Analytics', owner_team: 'Finance Analytics', domain: 'Finance' },
    metrics: Array.from({ length: n }, (_, i) => ({
      key: `apply_metric_${pad(i)}`,
      name: `Apply Metric ${pad(i)}`,
      description:
        i < changed
          ? `Revenue measure ${i}, revision ${revision}.`
          : `Revenue measure ${i}: subscription revenue of the period.`,
      sql_expression: `SUM(revenue_${i % 50})`,
      lifecycle_status: i % 10 === 0 ? 'RELEASED' : 'DRAFT',
      definition_version: i % 10 === 0 ? '2.0.0' : '1.0.0',
      policy_tier: `tier_${1 + (i % 3)}`,
      scope: i % 7 === 0 ? 'enterprise_canonical' : 'exploratory',
      aliases: [`AM${i}`],
      grains: ['month', 'quarter'],
      business_definition: { included: 'Subscription revenue.', excluded: 'Refunds.', time_window: 'calendar month' },
      ...(i % 10 === 0
        ? {
            versions: [{ definition_version: '2.0.0', status: 'released', released_at: '2026-02-15T00:00:00Z' }],
            approvals: [
              {
                definition_version: '2.0.0',
                approver_role: 'finance_controller',
                approver: null,
                decision: 'approved',
                decided_at: '2026-02-14T10:00:00Z',
              },
            ],
          }
        : {}),
      ...(i % 20 === 1 ? { relationships: [{ kind: 'supersedes', target: `apply_metric_${pad(i - 1)}` }] } : {}),
    })),
  };
}
