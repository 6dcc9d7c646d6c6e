/**
 * What a small foreign file may make (docs/importers.md, "Limits"): each
 * reproduction of the write-side audit, and the other ways a few kilobytes
 * could become gigabytes or a deep recursion, is translated or refused with
 * the place of the problem, within a bound of time far from the minutes and
 * out-of-memory of before.
 */
import { describe, expect, it } from 'vitest';
import { importDbtManifest } from '../../src/importers/dbt.js';
import { ImportError, type ImportProblem } from '../../src/importers/import-error.js';
import {
  MAX_DERIVED_DEPTH,
  MAX_DIMENSIONS,
  MAX_IMPORTED_SIZE,
  MAX_RENDERED_EXPRESSION,
  MAX_SOURCE_REFS,
} from '../../src/importers/limits.js';
import { importOsiDocument } from '../../src/importers/osi.js';
import type { RegistryDocumentInput } from '../../src/importers/registry-document-input.js';
import {
  deepGovernanceDocument,
  derivedChain,
  derivedCycle,
  exponentialDerived,
  osiWithoutNames,
} from './hostile-documents.js';

type Json = Record<string, unknown>;

/** The document made, or the problems of a refusal; generous bound on the time either takes. */
function translate(run: () => RegistryDocumentInput): RegistryDocumentInput | readonly ImportProblem[] {
  const started = performance.now();
  try {
    return run();
  } catch (error) {
    if (error instanceof ImportError) return error.problems;
    throw error;
  } finally {
    expect(performance.now() - started).toBeLessThan(10_000);
  }
}

const dbt = (manifest: unknown) => translate(() => importDbtManifest(manifest, { organization: 'acme' }));
const osi = (document: unknown) => translate(() => importOsiDocument(document, { organization: 'acme' }));

function documentOf(result: RegistryDocumentInput | readonly ImportProblem[]): RegistryDocumentInput {
  if (Array.isArray(result)) throw new Error(`refused: ${JSON.stringify(result.slice(0, 3))}`);
  return result as RegistryDocumentInput;
}

function problemsOf(result: RegistryDocumentInput | readonly ImportProblem[]): readonly ImportProblem[] {
  if (!Array.isArray(result)) throw new Error('expected a refusal');
  return result;
}

const orders = (extra: Json = {}) => ({
  name: 'orders',
  node_relation: { relation_name: 'analytics.orders' },
  measures: [{ name: 'amount', agg: 'sum' }],
  dimensions: [],
  ...extra,
});

describe('dbt derived metrics', () => {
  it('each metric over the one before, x + x + x + x, 20 levels: inlined while short, then named by key', () => {
    const manifest = exponentialDerived(20);
    expect(JSON.stringify(manifest).length).toBeLessThan(4096);
    const { metrics } = documentOf(dbt(JSON.stringify(manifest)));
    expect(metrics.map((metric) => metric.sql_expression.length <= MAX_RENDERED_EXPRESSION)).not.toContain(false);
    expect(metrics[1]?.sql_expression).toBe('SUM(amount) + SUM(amount) + SUM(amount) + SUM(amount)');
    const wrapped = `(${metrics[1]?.sql_expression})`;
    expect(metrics[2]?.sql_expression).toBe([wrapped, wrapped, wrapped, wrapped].join(' + '));
    // 4^10 sums do not fit: the metric names its input instead, which the registry holds under that key
    expect(metrics[10]?.sql_expression).toBe('m9 + m9 + m9 + m9');
    expect(metrics[20]?.sql_expression).toBe('m19 + m19 + m19 + m19');
    expect(metrics[20]?.dependencies).toEqual({ measures: [], metrics: ['m19'] });
  });

  it('inputs read under different filters at every level stay within the budget', () => {
    const manifest: Json = {
      semantic_models: [orders({ dimensions: [{ name: 'region', type: 'categorical' }] })],
      metrics: [
        { name: 'm0', type: 'simple', type_params: { measure: 'amount' } },
        ...Array.from({ length: 20 }, (_, i) => ({
          name: `m${i + 1}`,
          type: 'derived',
          type_params: {
            expr: 'a + b + c + d',
            metrics: ['a', 'b', 'c', 'd'].map((alias) => ({
              name: `m${i}`,
              alias,
              filter: `{{ Dimension('order__region') }} = '${alias}${i}'`,
            })),
          },
        })),
      ],
    };
    const { metrics } = documentOf(dbt(manifest));
    expect(metrics).toHaveLength(21);
    expect(metrics[20]?.sql_expression).toBe('m19 + m19 + m19 + m19');
  });

  it(`a chain of 20,000 derived metrics is refused at the first past ${MAX_DERIVED_DEPTH} levels, naming the chain`, () => {
    expect(dbt(derivedChain(20_000))).toEqual([
      {
        path: 'metrics[65].type_params',
        message: 'metric "m65": its input metrics go 65 deep (m65 -> m64 -> m63 -> m62 -> m61 -> ...); at most 64',
      },
    ]);
    const { metrics } = documentOf(dbt(derivedChain(MAX_DERIVED_DEPTH)));
    expect(metrics[MAX_DERIVED_DEPTH]?.sql_expression).toBe(`${'('.repeat(63)}SUM(amount) + 1${') + 1'.repeat(63)}`);
  });

  it('a cycle through 20,000 metrics is one problem, at the metric it comes back to, its middle left out', () => {
    expect(dbt(derivedCycle(20_000))).toEqual([
      {
        path: 'metrics[1].type_params',
        message:
          'metric "m1": inputs form a cycle: m1 -> m20000 -> m19999 -> m19998 -> m19997 -> ... (20000 metrics) -> ' +
          'm5 -> m4 -> m3 -> m2 -> m1',
      },
    ]);
  });

  it('an expression naming its input 100,000 times, over an input of 10,000 characters', () => {
    const manifest = {
      semantic_models: [orders({ measures: [{ name: 'amount', agg: 'sum', expr: 'a'.repeat(10_000) }] })],
      metrics: [
        { name: 'base', type: 'simple', type_params: { measure: 'amount' } },
        { name: 'many', type: 'derived', type_params: { expr: 'base + '.repeat(100_000), metrics: ['base'] } },
      ],
    };
    expect(problemsOf(dbt(manifest))).toEqual([
      {
        path: 'metrics[1]',
        message: `metric "many": its SQL expression is longer than ${MAX_RENDERED_EXPRESSION} characters even with its input metrics named, not inlined`,
      },
    ]);
  });

  it(`a metric reading 3,000 semantic models, and 3,000 metrics reading it: past ${MAX_SOURCE_REFS}, refused`, () => {
    const models = Array.from({ length: 3000 }, (_, i) => ({
      name: `sm${i}`,
      node_relation: { relation_name: `t.sm${i}` },
      measures: [{ name: `me${i}`, agg: 'sum' }],
    }));
    const manifest = {
      semantic_models: models,
      metrics: [
        ...models.map((_, i) => ({ name: `b${i}`, type: 'simple', type_params: { measure: `me${i}` } })),
        { name: 'wide', type: 'derived', type_params: { expr: 'b0', metrics: models.map((_, i) => `b${i}`) } },
        ...models.map((_, i) => ({ name: `r${i}`, type: 'derived', type_params: { expr: 'wide', metrics: ['wide'] } })),
      ],
    };
    const problems = problemsOf(dbt(manifest));
    expect(problems).toHaveLength(3001);
    expect(problems[0]).toEqual({
      path: 'metrics[3000]',
      message: `metric "wide": more than ${MAX_SOURCE_REFS} semantic models read (the most an imported metric may have)`,
    });
  });

  it(`10,000 metrics over a semantic model of 10,000 dimensions: past ${MAX_DIMENSIONS}, refused`, () => {
    const dimensions = Array.from({ length: 10_000 }, (_, i) => ({ name: `dim${i}`, type: 'categorical' }));
    const manifest = {
      semantic_models: [orders({ dimensions })],
      metrics: Array.from({ length: 10_000 }, (_, i) => ({
        name: `x${i}`,
        type: 'simple',
        type_params: { measure: 'amount' },
      })),
    };
    const problems = problemsOf(dbt(manifest));
    expect(problems).toHaveLength(10_000);
    expect(problems[0]?.message).toBe(
      `metric "x0": more than ${MAX_DIMENSIONS.toLocaleString('en-US')} dimensions (the most an imported metric may have)`,
    );
  });

  it('what every metric inherits is counted: past the size of a hand-written document, refused', () => {
    const dimensions = Array.from({ length: MAX_DIMENSIONS }, (_, i) => ({
      name: `a_dimension_with_a_long_name_${i}`,
      type: 'categorical',
    }));
    const manifest = {
      semantic_models: [orders({ dimensions })],
      metrics: Array.from({ length: 2000 }, (_, i) => ({
        name: `x${i}`,
        type: 'simple',
        type_params: { measure: 'amount' },
      })),
    };
    expect(JSON.stringify(manifest).length).toBeLessThan(200_000);
    const [problem, ...rest] = problemsOf(dbt(manifest));
    expect(rest).toEqual([]);
    expect(problem?.message).toMatch(
      new RegExp(
        `^metric "x\\d+": the document made from this file passes ${MAX_IMPORTED_SIZE.toLocaleString('en-US')} characters`,
      ),
    );
  });

  it("a filter of 20,000 unclosed {{ Dimension(' is read in linear time", () => {
    const manifest = {
      semantic_models: [orders()],
      metrics: [
        { name: 'x', type: 'simple', filter: "{{ Dimension('".repeat(20_000), type_params: { measure: 'amount' } },
      ],
    };
    expect(problemsOf(dbt(manifest))[0]?.path).toBe('metrics[0]');
  });

  it('filters nested 100,000 lists deep are read without recursion', () => {
    let filter: unknown = "{{ Dimension('order__region') }} = 'EU'";
    for (let i = 0; i < 100_000; i++) filter = [filter];
    const manifest = {
      semantic_models: [orders()],
      metrics: [{ name: 'x', type: 'simple', filter, type_params: { measure: 'amount' } }],
    };
    expect(documentOf(dbt(manifest)).metrics[0]?.sql_expression).toBe(
      "SUM(amount) FILTER (WHERE order__region = 'EU')",
    );
  });
});

describe('OSI', () => {
  it('3,000 datasets and 3,000 metrics naming none: no metric gets 3,000 source_refs', () => {
    const { metrics } = documentOf(osi(osiWithoutNames(3000)));
    expect(metrics).toHaveLength(3000);
    expect(metrics.map((metric) => metric.source_refs?.length)).not.toContain(3000);
    expect(metrics[0]?.source_refs).toEqual([]);
  });

  it('a metric naming none reads the one dataset of a one-dataset model', () => {
    const { metrics } = documentOf(osi(osiWithoutNames(1)));
    expect(metrics[0]?.source_refs).toEqual([{ table: 'wh.d0', dataset: 'd0' }]);
  });

  it(`a metric naming more than ${MAX_SOURCE_REFS} datasets is refused`, () => {
    const expression = Array.from({ length: 100 }, (_, i) => `SUM(d${i}.x)`).join(' + ');
    expect(problemsOf(osi(osiWithoutNames(100, expression)))[0]).toEqual({
      path: 'semantic_model[0].metrics[0]',
      message: `metric "k0": more than ${MAX_SOURCE_REFS} datasets named (the most an imported metric may have)`,
    });
  });

  it('a METRIC_GOVERNANCE data string nested 100,000 deep is refused before it is parsed', () => {
    expect(problemsOf(osi(deepGovernanceDocument(100_000)))).toEqual([
      {
        path: 'semantic_model[0].metrics[0].custom_extensions[0].data',
        message: 'metric "k": the METRIC_GOVERNANCE data is nested deeper than 32 levels',
      },
    ]);
  });
});
