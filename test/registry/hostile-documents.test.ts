/**
 * Generated hostile documents (issue 33) sent to the write routes of a
 * server with a 256 MB heap, through a real socket: a registry document, a
 * dbt manifest and an OSI document, as JSON and as YAML, to PUT
 * /api/registry?dry_run=true, and validation batches to POST
 * /api/validations. Every answer is a 4xx within the bound (a 200 for what
 * happens to be valid), never a 5xx, and /healthz answers after each. The
 * shapes are those that took the service down: deep nesting, wide
 * collections, many values, long and hostile text, duplicate names. The run
 * count is kept small: each document is large, and the machine is shared.
 * Values nested past a few thousand levels are sent by the reproductions as
 * raw text (the test's own JSON.stringify would overflow its stack).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { usingPostgres } from '../helpers/database.js';
import {
  ANSWER_WITHIN_MS,
  type HostileServer,
  ordersManifest,
  revenueMetric,
  startHostileServer,
} from './hostile-server.js';

let h: HostileServer;
beforeAll(async () => {
  if (usingPostgres) h = await startHostileServer();
}, 120_000);
afterAll(() => h?.stop());

const RUNS = 12;

/** A value nested `depth` levels, as arrays or objects. */
const nested = (depth: number, leaf: unknown, asObject: boolean): unknown => {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = asObject ? { n: value } : [value];
  return value;
};

const hostileText = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom('\u001b]0;x\u0007\u001b[2J', '\u009b31m', '\u0000', '\ud800', '\u007f', 'a\u2028b'),
  fc.integer({ min: 20_001, max: 3_000_000 }).map((n) => 'x'.repeat(n)),
);

/** Something to put where a document expects a value: deep, wide, long or hostile. */
const hostileValue = fc.oneof(
  fc
    .record({ depth: fc.integer({ min: 60, max: 3_000 }), asObject: fc.boolean() })
    .map(({ depth, asObject }) => nested(depth, 1, asObject)),
  fc.integer({ min: 1, max: 300_000 }).map((n) => new Array(n).fill({})),
  fc
    .integer({ min: 1, max: 30 })
    .map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, [1, 2]]))),
  hostileText,
  fc.constantFrom('0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', new Date(Date.now() + 3_600_000).toISOString()),
);

const registryDocument = fc
  .record({
    field: fc.constantFrom('name', 'description', 'tags', 'time_semantics', 'dimensions', 'sql_expression'),
    value: hostileValue,
  })
  .map(({ field, value }) => ({
    organization: h.org.slug,
    defaults: { project: 'P', owner_team: 'T' },
    metrics: [{ key: 'hostile', name: 'H', description: 'd', sql_expression: 'x', [field]: value }],
  }));

const dbtManifest = fc
  .record({ value: hostileValue, where: fc.constantFrom('label', 'description', 'filter', 'extra') })
  .map(({ value, where }) => ordersManifest([revenueMetric({ label: 'R', [where]: value })]));

const osiDocument = fc
  .record({
    value: hostileValue,
    where: fc.constantFrom('description', 'custom_extensions', 'expression', 'ai_context'),
  })
  .map(({ value, where }) => ({
    semantic_model: [
      {
        name: 'm',
        datasets: [
          {
            name: 'orders',
            source: 'a.m.orders',
            fields: [{ name: 'amount', expression: { dialects: [{ dialect: 'ANSI_SQL', expression: 'amount' }] } }],
          },
        ],
        metrics: [
          {
            name: 'revenue',
            expression: { dialects: [{ dialect: 'ANSI_SQL', expression: 'SUM(orders.amount)' }] },
            [where]: where === 'custom_extensions' ? [{ vendor_name: 'x', data: JSON.stringify(value) }] : value,
          },
        ],
      },
    ],
  }));

/** The text of `document` in the syntax given; a YAML rendering too deep to print is sent as JSON flow (valid YAML). */
function render(document: unknown, syntax: 'json' | 'yaml'): string {
  if (syntax === 'json') return JSON.stringify(document);
  try {
    return stringify(document, { lineWidth: 0, aliasDuplicateObjects: false });
  } catch {
    return JSON.stringify(document);
  }
}

async function expectAnswered(path: string, body: string, contentType: string) {
  const started = Date.now();
  const res = await h.send(path, body, contentType);
  expect(res.status, `${path} ${res.body.slice(0, 300)}`).toBeLessThan(500);
  expect(Date.now() - started).toBeLessThan(ANSWER_WITHIN_MS);
  expect(await h.health()).toBe(200);
}

const syntax = fc.constantFrom<'json' | 'yaml'>('json', 'yaml');
const contentTypeOf = (s: 'json' | 'yaml') => (s === 'json' ? 'application/json' : 'application/yaml');

describe.skipIf(!usingPostgres)('hostile documents never take the server down', () => {
  it('the audit reproductions: 200,000 levels of YAML, 2 million validation results', async () => {
    await expectAnswered('/api/registry?dry_run=true', `x: ${'['.repeat(200_000)}`, 'application/yaml');
    await expectAnswered(
      '/api/validations',
      `{"results":[${new Array(2_000_000).fill('{}').join(',')}]}`,
      'application/json',
    );
  });

  it.each([
    ['registry', registryDocument],
    ['dbt', dbtManifest],
    ['osi', osiDocument],
  ] as const)('PUT /api/registry?format=%s', async (format, documents) => {
    await fc.assert(
      fc.asyncProperty(documents as fc.Arbitrary<unknown>, syntax, async (document, s) => {
        await expectAnswered(`/api/registry?format=${format}&dry_run=true`, render(document, s), contentTypeOf(s));
      }),
      { numRuns: RUNS },
    );
  });

  it('POST /api/validations', async () => {
    const result = fc.record(
      {
        metric_key: hostileValue,
        ran_at: hostileValue,
        status: fc.constantFrom('passed', 'failed'),
        details: hostileValue,
      },
      { requiredKeys: ['status'] },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(result, { minLength: 1, maxLength: 3 }), async (results) => {
        await expectAnswered('/api/validations', JSON.stringify({ results }), 'application/json');
      }),
      { numRuns: RUNS },
    );
  });

  // Last: the importers' own blow-ups (findings 2 and 3), which the parse cannot bound.
  it('PUT /api/registry?format=dbt: chains of derived metrics that each use the one before several times', async () => {
    const chain = fc.record({ length: fc.integer({ min: 5, max: 25 }), uses: fc.integer({ min: 2, max: 4 }) });
    await fc.assert(
      fc.asyncProperty(chain, async ({ length, uses }) => {
        const manifest = ordersManifest([
          revenueMetric({ name: 'm0', label: 'm0' }),
          ...Array.from({ length }, (_, i) => ({
            name: `m${i + 1}`,
            label: `m${i + 1}`,
            type: 'derived',
            type_params: {
              expr: Array.from({ length: uses }, () => 'x').join(' + '),
              metrics: [{ name: `m${i}`, alias: 'x' }],
            },
          })),
        ]);
        await expectAnswered('/api/registry?format=dbt&dry_run=true', JSON.stringify(manifest), 'application/json');
      }),
      { numRuns: 4 },
    );
  });

  it('PUT /api/registry?format=osi: many datasets and metrics that name none', async () => {
    const size = fc.integer({ min: 500, max: 3_000 });
    await fc.assert(
      fc.asyncProperty(size, async (n) => {
        const document = {
          semantic_model: [
            {
              name: 'm',
              datasets: Array.from({ length: n }, (_, i) => ({ name: `d${i}`, source: `a.m.d${i}`, fields: [] })),
              metrics: Array.from({ length: n }, (_, i) => ({
                name: `metric ${i}`,
                expression: { dialects: [{ dialect: 'ANSI_SQL', expression: `SUM(${i})` }] },
              })),
            },
          ],
        };
        await expectAnswered('/api/registry?format=osi&dry_run=true', JSON.stringify(document), 'application/json');
      }),
      { numRuns: 3 },
    );
  });
});
