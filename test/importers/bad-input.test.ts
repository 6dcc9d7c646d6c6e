import { describe, expect, it } from 'vitest';
import { importDbtManifest } from '../../src/importers/dbt.js';
import { ImportError, type ImportProblem } from '../../src/importers/import-error.js';
import { importOsiDocument } from '../../src/importers/osi.js';

// biome-ignore lint/suspicious/noExplicitAny: manifests are plain JSON
type Json = any;

function problemsOf(run: () => unknown): readonly ImportProblem[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ImportError) return error.problems;
    throw error;
  }
  throw new Error('expected an ImportError');
}

const dbt = (manifest: unknown) => problemsOf(() => importDbtManifest(manifest, { organization: 'acme' }));
const osi = (document: unknown) => problemsOf(() => importOsiDocument(document, { organization: 'acme' }));

const manifest = (): Json => ({
  semantic_models: [
    {
      name: 'orders',
      node_relation: { relation_name: 'analytics.orders' },
      measures: [{ name: 'revenue', agg: 'sum', expr: 'amount' }],
      dimensions: [],
    },
  ],
  metrics: [
    { name: 'revenue', type: 'simple', type_params: { measure: { name: 'revenue' } } },
    {
      name: 'revenue_share',
      type: 'ratio',
      type_params: { numerator: { name: 'revenue' }, denominator: { name: 'revenue' } },
    },
  ],
});

const NOT_A_MANIFEST =
  'not a dbt semantic manifest: expected a JSON object with "semantic_models" and "metrics" arrays, as dbt writes to target/semantic_manifest.json';

describe('dbt: bad input', () => {
  it('the valid base manifest translates', () => {
    expect(importDbtManifest(manifest(), { organization: 'acme' }).metrics.map((metric) => metric.key)).toEqual([
      'revenue',
      'revenue_share',
    ]);
  });

  it('refuses truncated JSON', () => {
    const text = JSON.stringify(manifest());
    const [problem] = dbt(text.slice(0, text.length / 2));
    expect(problem?.path).toBe('');
    expect(problem?.message).toMatch(
      /^not valid JSON \(.+\); expected a dbt semantic manifest \(target\/semantic_manifest\.json\)$/,
    );
    expect(dbt(new TextEncoder().encode('{"metrics": ['))[0]?.message).toMatch(/^not valid JSON/);
  });

  it('refuses JSON that is not a semantic manifest', () => {
    expect(dbt([])).toEqual([{ path: '', message: NOT_A_MANIFEST }]);
    expect(dbt('{"metrics": []}')).toEqual([{ path: '', message: NOT_A_MANIFEST }]);
    expect(dbt({ nodes: {}, metadata: {} })).toEqual([
      {
        path: '',
        message: `${NOT_A_MANIFEST} (this looks like dbt's manifest.json; import target/semantic_manifest.json instead)`,
      },
    ]);
  });

  it('names a missing measure', () => {
    const input = manifest();
    input.metrics[0].type_params.measure.name = 'revenue_usd';
    expect(dbt(input)).toEqual([
      {
        path: 'metrics[0].type_params.measure.name',
        message: 'metric "revenue": type_params.measure names measure "revenue_usd", which no semantic model defines',
      },
    ]);
  });

  it('names a missing input metric', () => {
    const input = manifest();
    input.metrics[1].type_params.denominator.name = 'total_revenue';
    expect(dbt(input)).toEqual([
      {
        path: 'metrics[1].type_params.denominator.name',
        message:
          'metric "revenue_share": type_params.denominator names metric "total_revenue", which the manifest does not define',
      },
    ]);
  });

  it('names an unknown semantic model of a newer-spec metric', () => {
    const input = manifest();
    input.metrics[0].type_params = { metric_aggregation_params: { semantic_model: 'order', agg: 'sum', expr: 'x' } };
    expect(dbt(input)).toEqual([
      {
        path: 'metrics[0].type_params.metric_aggregation_params.semantic_model',
        message:
          'metric "revenue": metric_aggregation_params names semantic model "order", which the manifest does not define',
      },
    ]);
  });

  it('refuses duplicate metric names', () => {
    const input = manifest();
    input.metrics.push({ ...input.metrics[0] });
    expect(dbt(input)).toEqual([
      { path: 'metrics[2].name', message: 'metric "revenue": duplicate metric name (also metrics[0])' },
    ]);
  });

  it('refuses input metrics that form a cycle', () => {
    const input = manifest();
    input.metrics[1].type_params.numerator.name = 'revenue_share';
    expect(dbt(input)).toEqual([
      {
        path: 'metrics[1].type_params',
        message: 'metric "revenue_share": inputs form a cycle: revenue_share -> revenue_share',
      },
    ]);
  });

  it('names an unknown metric type', () => {
    const input = manifest();
    input.metrics[0].type = 'window';
    expect(dbt(input)).toEqual([
      {
        path: 'metrics[0].type',
        message: 'metric "revenue": type "window" is not one of simple, ratio, cumulative, derived, conversion',
      },
    ]);
  });

  it('names an invalid lifecycle and scope, an unknown governance field, and a bad nested value', () => {
    const input = manifest();
    input.metrics[1].config = {
      meta: {
        governance: {
          lifecycle_status: 'LIVE',
          scope: 'global',
          owner: 'finance',
          versions: [{ definition_version: '1.0.0', status: 'released', released_at: 'yesterday', notes: '' }],
          relationships: [{ kind: 'twin_of', target: 'revenue' }],
        },
      },
    };
    expect(dbt(input)).toEqual([
      {
        path: 'metrics[1].config.meta.governance.lifecycle_status',
        message:
          'metric "revenue_share": lifecycle_status: "LIVE" is not one of DRAFT, VALIDATED, CANDIDATE, APPROVED, RELEASED, DEPRECATED',
      },
      {
        path: 'metrics[1].config.meta.governance.scope',
        message:
          'metric "revenue_share": scope: "global" is not one of enterprise_canonical, domain_canonical, exploratory',
      },
      {
        path: 'metrics[1].config.meta.governance.versions[0].released_at',
        message:
          'metric "revenue_share": versions[0].released_at: expected an ISO 8601 timestamp, e.g. 2026-01-31T09:00:00Z',
      },
      {
        path: 'metrics[1].config.meta.governance.versions[0].notes',
        message: 'metric "revenue_share": unknown field "notes" in governance.versions[0]',
      },
      {
        path: 'metrics[1].config.meta.governance.relationships[0].kind',
        message:
          'metric "revenue_share": relationships[0].kind: "twin_of" is not one of variant_of, supersedes, related_to, conflicts_with',
      },
      {
        path: 'metrics[1].config.meta.governance.owner',
        message: expect.stringMatching(/^metric "revenue_share": unknown governance field "owner" \(allowed: name, /),
      },
    ]);
  });

  it('refuses a governance value that is not an object', () => {
    const input = manifest();
    input.metrics[0].config = { meta: { governance: 'RELEASED' } };
    expect(dbt(input)).toEqual([
      {
        path: 'metrics[0].config.meta.governance',
        message: 'metric "revenue": governance: Invalid input: expected object, received string',
      },
    ]);
  });
});

const osiDocument = (): Json => ({
  version: '0.2.0.dev0',
  semantic_model: [
    {
      name: 'sales',
      datasets: [{ name: 'orders', source: 'db.public.orders', fields: [] }],
      metrics: [{ name: 'revenue', expression: { dialects: [{ dialect: 'ANSI_SQL', expression: 'SUM(orders.x)' }] } }],
    },
  ],
});

const governanceExtension = (data: string) => [{ vendor_name: 'METRIC_GOVERNANCE', data }];

describe('OSI: bad input', () => {
  it('the valid base document translates', () => {
    expect(importOsiDocument(osiDocument(), { organization: 'acme' }).metrics.map((metric) => metric.key)).toEqual([
      'revenue',
    ]);
  });

  it('refuses a document that is not OSI, and a version it does not read', () => {
    const notOsi = [
      {
        path: '',
        message: 'not an Open Semantic Interchange (Ossie) document: expected an object with a "semantic_model" list',
      },
    ];
    expect(osi({ semantic_models: [] })).toEqual(notOsi);
    expect(osi('version: 0.1.1')).toEqual(notOsi);
    expect(osi({ ...osiDocument(), version: '1.0.0' })).toEqual([
      { path: 'version', message: 'OSI version "1.0.0" is not supported; this importer reads the 0.1 and 0.2 drafts' },
    ]);
  });

  it('refuses duplicate metric names and a metric without an expression', () => {
    const input = osiDocument();
    const [first] = input.semantic_model[0].metrics;
    input.semantic_model[0].metrics.push({ ...first }, { name: 'margin', expression: { dialects: [] } });
    expect(osi(input)).toEqual([
      { path: 'semantic_model[0].metrics[1].name', message: 'metric "revenue": duplicate metric name' },
      {
        path: 'semantic_model[0].metrics[2].expression',
        message: 'metric "margin": expression.dialects holds no expression',
      },
    ]);
  });

  it('names bad METRIC_GOVERNANCE data: not JSON, not {governance}, an unknown field, an invalid lifecycle', () => {
    const cases: [string, ImportProblem][] = [
      [
        '{"governance": ',
        {
          path: 'semantic_model[0].metrics[0].custom_extensions[0].data',
          message: expect.stringMatching(/^metric "revenue": the METRIC_GOVERNANCE data is not valid JSON \(.+\)$/),
        },
      ],
      [
        '{"lifecycle_status": "RELEASED"}',
        {
          path: 'semantic_model[0].metrics[0].custom_extensions[0].data',
          message: 'metric "revenue": the METRIC_GOVERNANCE data must be a JSON object {"governance": {...}}',
        },
      ],
      [
        '{"governance": {"lifecycle": "RELEASED"}}',
        {
          path: 'semantic_model[0].metrics[0].custom_extensions[0].data.governance.lifecycle',
          message: expect.stringMatching(/^metric "revenue": unknown governance field "lifecycle" \(allowed: /),
        },
      ],
      [
        '{"governance": {"lifecycle_status": "released"}}',
        {
          path: 'semantic_model[0].metrics[0].custom_extensions[0].data.governance.lifecycle_status',
          message:
            'metric "revenue": lifecycle_status: "released" is not one of DRAFT, VALIDATED, CANDIDATE, APPROVED, RELEASED, DEPRECATED',
        },
      ],
    ];
    for (const [data, problem] of cases) {
      const input = osiDocument();
      input.semantic_model[0].metrics[0].custom_extensions = governanceExtension(data);
      expect(osi(input)).toEqual([problem]);
    }
  });
});
