/**
 * The foreign files of the write-side audit, generated: small files that
 * made the importers run out of memory or recurse past the stack.
 */

const orders = {
  name: 'orders',
  node_relation: { relation_name: 'analytics.orders' },
  measures: [{ name: 'amount', agg: 'sum' }],
  dimensions: [],
};

/** m0 sums a measure; each of `levels` metrics after it is `x + x + x + x` over the one before. */
export function exponentialDerived(levels: number) {
  return {
    semantic_models: [orders],
    metrics: [
      { name: 'm0', type: 'simple', type_params: { measure: 'amount' } },
      ...Array.from({ length: levels }, (_, i) => ({
        name: `m${i + 1}`,
        type: 'derived',
        type_params: { expr: 'x + x + x + x', metrics: [{ name: `m${i}`, alias: 'x' }] },
      })),
    ],
  };
}

/** m0 sums a measure; each of `length` metrics after it is the one before plus 1. */
export function derivedChain(length: number) {
  return {
    semantic_models: [orders],
    metrics: [
      { name: 'm0', type: 'simple', type_params: { measure: 'amount' } },
      ...Array.from({ length }, (_, i) => ({
        name: `m${i + 1}`,
        type: 'derived',
        type_params: { expr: `m${i} + 1`, metrics: [`m${i}`] },
      })),
    ],
  };
}

/** The chain with its first derived metric reading the last: a cycle through all of them. */
export function derivedCycle(length: number) {
  const manifest = derivedChain(length);
  manifest.metrics[1] = {
    name: 'm1',
    type: 'derived',
    type_params: { expr: `m${length} + 1`, metrics: [`m${length}`] },
  };
  return manifest;
}

/** One model of `count` datasets and `count` metrics of one expression, by default naming none of them. */
export function osiWithoutNames(count: number, expression = 'COUNT(*)') {
  return {
    version: '0.1.1',
    semantic_model: [
      {
        name: 'wide',
        datasets: Array.from({ length: count }, (_, i) => ({ name: `d${i}`, source: `wh.d${i}` })),
        metrics: Array.from({ length: count }, (_, i) => ({
          name: `k${i}`,
          expression: { dialects: [{ dialect: 'ANSI_SQL', expression }] },
        })),
      },
    ],
  };
}

/** A metric whose METRIC_GOVERNANCE data is a JSON string nested `depth` arrays deep. */
export function deepGovernanceDocument(depth: number) {
  const nested = `${'['.repeat(depth)}${']'.repeat(depth)}`;
  return {
    semantic_model: [
      {
        name: 'm',
        datasets: [],
        metrics: [
          {
            name: 'k',
            expression: { dialects: [{ dialect: 'ANSI_SQL', expression: 'COUNT(*)' }] },
            custom_extensions: [
              { vendor_name: 'METRIC_GOVERNANCE', data: `{"governance": {"dimensions": ${nested}}}` },
            ],
          },
        ],
      },
    ],
  };
}
