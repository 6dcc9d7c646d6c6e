/**
 * Importers write inputs (issue 34, item 1; docs/importers.md): dbt's input
 * metrics of derived, ratio, cumulative and conversion metrics, and OSI
 * metrics whose expression names another metric of their semantic model,
 * become `inputs` by key; measures and semantic models stay source
 * references; an importer names no input outside what it imports. Applied
 * over PUT /api/registry?format=..., they are stored as edges, and a second
 * import of the same file plans nothing. The dbt part reads the real
 * manifests of the shared fixtures and is skipped where they are absent.
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { importDbtManifest } from '../../src/importers/dbt.js';
import { importOsiDocument } from '../../src/importers/osi.js';
import type { RegistryDocumentInput } from '../../src/importers/registry-document-input.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { newTeamOrg, storedInputs as storedInputsOf, type TeamOrg, totals } from '../registry/support.js';
import { expectError } from '../rest/expectations.js';

const fixtures = new URL('../../../shared/fixtures/dbt/', import.meta.url);
const hasFixtures = existsSync(fixtures);
const readManifest = (name: string): string => readFileSync(new URL(name, fixtures), 'utf8');

/** Each imported metric that has inputs, with them. */
const inputsOf = (document: RegistryDocumentInput) =>
  Object.fromEntries(document.metrics.flatMap((metric) => (metric.inputs ? [[metric.key, metric.inputs]] : [])));

/** Every input is a metric of the same import. */
function expectInputsWithin(document: RegistryDocumentInput) {
  const keys = new Set(document.metrics.map((metric) => metric.key));
  for (const metric of document.metrics) for (const input of metric.inputs ?? []) expect(keys).toContain(input);
}

/** The derived and ratio metrics of both synthetic specs. */
const DERIVED_AND_RATIO = {
  average_order_value_00: ['revenue_00', 'orders_00'],
  net_revenue_00: ['revenue_00', 'refunds_00'],
  // Twice the same input (once offset by a month): one link.
  revenue_growth_mom_00: ['revenue_00'],
};

describe.skipIf(!hasFixtures)('dbt manifests of shared/fixtures/dbt', () => {
  it('measures-based spec: derived and ratio metrics have their input metrics; cumulative and conversion read measures, no inputs', () => {
    const document = importDbtManifest(readManifest('synthetic-legacy.semantic_manifest.json'), {
      organization: 'acme',
    });
    expect(inputsOf(document)).toEqual(DERIVED_AND_RATIO);
    expectInputsWithin(document);
  });

  it('newer spec: cumulative (cumulative_type_params.metric) and conversion (base_metric, conversion_metric) too', () => {
    const document = importDbtManifest(readManifest('synthetic-latest.semantic_manifest.json'), {
      organization: 'acme',
    });
    expect(inputsOf(document)).toEqual({
      ...DERIVED_AND_RATIO,
      revenue_ttm_00: ['revenue_00'],
      revenue_mtd_00: ['revenue_00'],
      repeat_purchase_rate_00: ['customers_00'],
    });
    expectInputsWithin(document);
  });

  it('a real manifest: each ratio has its numerator and denominator, in that order', () => {
    const manifest = readManifest('pbi-osi-converter.semantic_manifest.json');
    const document = importDbtManifest(manifest, { organization: 'acme' });
    const ratios = JSON.parse(manifest).metrics.filter((metric: { type: string }) => metric.type === 'ratio');
    expect(ratios).toHaveLength(6);
    expect(inputsOf(document)).toEqual(
      Object.fromEntries(
        ratios.map(
          (metric: { name: string; type_params: { numerator: { name: string }; denominator: { name: string } } }) => [
            metric.name,
            [metric.type_params.numerator.name, metric.type_params.denominator.name],
          ],
        ),
      ),
    );
    expectInputsWithin(document);
  });
});

/** An OSI document of one semantic model, its metrics given as name -> ANSI SQL. */
function osiDocument(metrics: Record<string, string>, fields: string[] = ['amount', 'order_id']) {
  return {
    version: '0.2.0',
    semantic_model: [
      {
        name: 'shop',
        datasets: [{ name: 'orders', source: 'db.public.orders', fields: fields.map((name) => ({ name })) }],
        metrics: Object.entries(metrics).map(([name, sql]) => ({
          name,
          expression: { dialects: [{ dialect: 'ANSI_SQL', expression: sql }] },
        })),
      },
    ],
  };
}

const osiInputs = (metrics: Record<string, string>, fields?: string[]) =>
  inputsOf(importOsiDocument(osiDocument(metrics, fields), { organization: 'acme' }));

describe('OSI: a metric whose expression names another metric of its model', () => {
  it('names them as identifiers: inputs in the order first named, by key', () => {
    expect(
      osiInputs({
        total_sales: 'SUM(orders.amount)',
        order_count: 'COUNT(DISTINCT orders.order_id)',
        'Average Order': 'total_sales / NULLIF(ORDER_COUNT, 0) + total_sales * 0',
        '"Quoted" Metric': 'SUM(orders.amount)',
        uses_quoted: '"""Quoted"" Metric" * 2',
      }),
    ).toEqual({
      average_order: ['total_sales', 'order_count'],
      uses_quoted: ['quoted_metric'],
    });
  });

  it('no input where something else may be meant', () => {
    expect(
      osiInputs(
        {
          total_sales: 'SUM(orders.amount)',
          amount: 'SUM(orders.amount)',
          // qualified, a qualifier, a function, a string, comments, a quoted name in another case
          a: "orders.total_sales + total_sales.x + total_sales(1) + 'total_sales' -- total_sales",
          b: '/* total_sales */ "TOTAL_SALES" + 1',
          // a field of a dataset of the model has the same name: the expression may mean the column
          c: 'SUM(amount)',
          // an SQL keyword names no metric unless quoted
          date: 'MAX(orders.amount)',
          d: 'CAST(orders.amount AS DATE)',
          e: '"date" - 1',
          // itself
          total: 'total + 1',
        },
        ['amount'],
      ),
    ).toEqual({ e: ['date'] });
  });

  it('an unterminated comment, string or quote reads to the end instead of failing over and over', () => {
    const long = `total_sales + ${"'/*".repeat(20_000)}`;
    expect(osiInputs({ total_sales: 'SUM(orders.amount)', long })).toEqual({ long: ['total_sales'] });
  });

  it('metrics of another semantic model are not named', () => {
    const document = osiDocument({ a: 'SUM(orders.amount)' });
    document.semantic_model.push({
      name: 'other',
      datasets: [],
      metrics: [{ name: 'b', expression: { dialects: [{ dialect: 'ANSI_SQL', expression: 'a * 2' }] } }],
    });
    expect(inputsOf(importOsiDocument(document, { organization: 'acme' }))).toEqual({});
  });
});

describe('imported inputs applied', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const put = (org: TeamOrg, body: string, format: 'dbt' | 'osi') =>
    t.inject({
      method: 'PUT',
      url: `/api/registry?format=${format}`,
      headers: {
        authorization: `Bearer ${org.token}`,
        'content-type': format === 'dbt' ? 'application/json' : 'application/yaml',
      },
      payload: body,
    });

  const storedInputs = (org: TeamOrg) => storedInputsOf(t.database.prisma, org.id);

  it.skipIf(!hasFixtures)('a dbt manifest’s inputs become edges; importing it again plans nothing', async () => {
    const org = await newTeamOrg(t.database.prisma, 'dbt-inputs');
    const text = readManifest('synthetic-latest.semantic_manifest.json');
    const first = await put(org, text, 'dbt');
    expect(first.statusCode, first.body).toBe(200);
    const imported = inputsOf(importDbtManifest(text, { organization: org.slug }));
    const sorted = Object.fromEntries(Object.entries(imported).sort(([a], [b]) => (a < b ? -1 : 1)));
    expect(await storedInputs(org)).toEqual(sorted);
    const second = await put(org, text, 'dbt');
    expect(second.json().data.totals).toEqual(totals({ unchanged: first.json().data.totals.created }));
  });

  it('an OSI document with a metric over others: edges; metrics naming each other: refused naming the cycle', async () => {
    const org = await newTeamOrg(t.database.prisma, 'osi-inputs');
    const document = osiDocument({
      total_sales: 'SUM(orders.amount)',
      order_count: 'COUNT(DISTINCT orders.order_id)',
      average_order: 'total_sales / NULLIF(order_count, 0)',
    });
    const applied = await put(org, stringify(document), 'osi');
    expect(applied.statusCode, applied.body).toBe(200);
    expect(await storedInputs(org)).toEqual({ average_order: ['total_sales', 'order_count'] });

    const cyclic = osiDocument({ a: 'b + 1', b: 'a - 1' });
    expectError(await put(org, stringify(cyclic), 'osi'), 400, {
      error: 'metrics[1].inputs[0] of the document imported from the file: inputs form a cycle: b -> a -> b',
    });
  });
});
