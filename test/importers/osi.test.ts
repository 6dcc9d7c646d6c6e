import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { importOsiDocument } from '../../src/importers/osi.js';
import type { RegistryMetricInput } from '../../src/importers/registry-document-input.js';
import type { ExportedMetric } from '../../src/registry/export.js';
import { osiDocument } from '../../src/registry/export-osi.js';

const fixtures = new URL('../../../shared/fixtures/osi/', import.meta.url);
const hasFixtures = existsSync(fixtures);
const readDocument = (name: string): unknown => parse(readFileSync(new URL(name, fixtures), 'utf8'));
const byKey = (metrics: RegistryMetricInput[]) => new Map(metrics.map((metric) => [metric.key, metric]));

describe.skipIf(!hasFixtures)('OSI documents of shared/fixtures/osi', () => {
  describe.each(['ossie.tpcds_semantic_model.v0.1.1.yaml', 'ossie.tpcds_semantic_model.v0.2.0.dev0.yaml'])(
    '%s',
    (file) => {
      // A skipped suite is still collected: read nothing where the shared fixtures are absent.
      if (!hasFixtures) return;
      const metrics = byKey(importOsiDocument(readDocument(file), { organization: 'acme' }).metrics);

      it('maps the five metrics: key, name, description, ANSI SQL, synonyms, source tables', () => {
        expect([...metrics.keys()]).toEqual([
          'total_sales',
          'total_profit',
          'customer_lifetime_value',
          'sales_by_brand',
          'store_productivity',
        ]);
        expect(metrics.get('customer_lifetime_value')).toMatchObject({
          name: 'Customer Lifetime Value',
          description: 'Average lifetime sales value per customer',
          sql_expression: 'SUM(store_sales.ss_ext_sales_price) / COUNT(DISTINCT customer.c_customer_sk)',
          aliases: ['CLV', 'LTV', 'customer value', 'lifetime revenue'],
          project: 'tpcds_retail_model',
          owner_team: 'unassigned',
          source_refs: [
            { table: 'tpcds.public.store_sales', dataset: 'store_sales' },
            { table: 'tpcds.public.customer', dataset: 'customer' },
          ],
        });
        expect(metrics.get('total_profit')?.source_refs).toEqual([
          { table: 'tpcds.public.store_sales', dataset: 'store_sales' },
        ]);
        expect(metrics.get('store_productivity')?.sql_expression).toBe(
          'SUM(store_sales.ss_ext_sales_price) / NULLIF(SUM(store.s_number_employees), 0)',
        );
        expect(metrics.get('total_sales')).not.toHaveProperty('lifecycle_status');
        // every described metric states its definition from the description
        for (const metric of metrics.values())
          expect(metric.business_definition?.included).toBe(metric.description.trim() || undefined);
        expect(metrics.get('customer_lifetime_value')?.business_definition?.included).toBe(
          'Average lifetime sales value per customer',
        );
        expect(metrics.get('total_sales')?.dimensions).toContainEqual({ name: 'ss_sold_date_sk', type: 'categorical' });
      });
    },
  );

  it('gsf sales: the ANSI_SQL dialect is chosen over SNOWFLAKE, both kept in expression', () => {
    const [metric] = importOsiDocument(readDocument('ossie.gsf-fixture.sales.v0.2.0.dev0.yaml'), {
      organization: 'acme',
    }).metrics;
    expect(metric).toMatchObject({
      key: 'revenue_per_customer',
      name: 'Revenue Per Customer',
      description: 'Revenue per customer',
      sql_expression: 'SUM(orders.subtotal) / COUNT(DISTINCT customers.customer_id)',
      source_refs: [
        { table: 'analytics.public.orders', dataset: 'orders' },
        { table: 'analytics.public.customers', dataset: 'customers' },
      ],
    });
    expect(metric?.dimensions).toContainEqual({ name: 'order_date', type: 'time' });
    expect(metric?.expression).toEqual({
      dialects: [
        { dialect: 'ANSI_SQL', expression: 'SUM(orders.subtotal) / COUNT(DISTINCT customers.customer_id)' },
        { dialect: 'SNOWFLAKE', expression: 'SUM(orders.subtotal)::NUMBER / COUNT(DISTINCT customers.customer_id)' },
      ],
    });
  });

  it('databricks: the first dialect when there is no ANSI_SQL; unqualified columns read the fact dataset; other vendors ignored', () => {
    const document = readDocument('ossie.databricks-fixture.tpcds_ossie.v0.2.0.dev0.yaml');
    const metrics = importOsiDocument(document, { organization: 'acme', defaultLifecycle: 'CANDIDATE' }).metrics;
    expect(metrics.map((metric) => [metric.key, metric.sql_expression, metric.lifecycle_status])).toEqual([
      ['total_sales', 'SUM(ss_ext_sales_price)', 'CANDIDATE'],
      ['total_quantity', 'SUM(ss_quantity)', 'CANDIDATE'],
    ]);
    expect(metrics[0]?.source_refs).toEqual([{ table: 'tpcds.public.store_sales', dataset: 'store_sales' }]);
  });

  it('is deterministic: the same document gives the same registry document', () => {
    const file = 'ossie.tpcds_semantic_model.v0.2.0.dev0.yaml';
    expect(importOsiDocument(readDocument(file), { organization: 'acme' })).toEqual(
      importOsiDocument(readDocument(file), { organization: 'acme' }),
    );
  });
});

describe('OSI governance and older snapshots', () => {
  const document = (extra: Record<string, unknown>) => ({
    semantic_model: [
      {
        name: 'finance',
        ai_context: 'Model-level context is not a metric caveat.',
        datasets: [{ name: 'ledger', source: 'wh.fin.ledger', fields: [] }],
        metrics: [
          {
            name: 'Net Revenue',
            description: 'Revenue after refunds.',
            expression: { dialects: [{ dialect: 'SNOWFLAKE', expression: 'SUM(ledger.net)' }] },
            ai_context: { instructions: 'Refunds are booked in the month issued.', synonyms: ['NR'] },
            ...extra,
          },
          {
            name: 'Gross Revenue',
            expression: { dialects: [{ dialect: 'ANSI_SQL', expression: 'SUM(ledger.gross)' }] },
          },
        ],
      },
    ],
  });

  it('reads a document without a version (earlier snapshots) as the 0.1 draft; names become keys', () => {
    const [metric] = importOsiDocument(document({}), { organization: 'acme' }).metrics;
    expect(metric).toMatchObject({
      key: 'net_revenue',
      name: 'Net Revenue',
      sql_expression: 'SUM(ledger.net)',
      aliases: ['NR'],
      business_definition: { caveats: 'Refunds are booked in the month issued.' },
      source_refs: [{ table: 'wh.fin.ledger', dataset: 'ledger' }],
    });
  });

  it('meaning: description is the definition, instructions its caveats, examples kept for consumers; none says empty', () => {
    const examples = ['What was net revenue last month?', ' ', 42];
    const [described, bare] = importOsiDocument(
      document({ ai_context: { instructions: 'Refunds are booked in the month issued.', synonyms: ['NR'], examples } }),
      { organization: 'acme' },
    ).metrics;
    expect(described).toMatchObject({
      description: 'Revenue after refunds.',
      business_definition: { included: 'Revenue after refunds.', caveats: 'Refunds are booked in the month issued.' },
      aliases: ['NR'],
      consumer_contexts: { ai_examples: ['What was net revenue last month?'] },
    });
    // nothing said: no member is written, so the contract reports the definition as empty
    expect(bare?.description).toBe('');
    expect(bare).not.toHaveProperty('business_definition');
    expect(bare).not.toHaveProperty('consumer_contexts');
    const [blank] = importOsiDocument(document({ description: '  ', ai_context: '  ' }), {
      organization: 'acme',
    }).metrics;
    expect(blank).not.toHaveProperty('business_definition');
  });

  it('meaning survives an OSI export: ai_context is written back for other readers, and reads back the same', () => {
    const context = { instructions: 'Booked when issued.', synonyms: ['NR'], examples: ['Net revenue in May?'] };
    const [imported] = importOsiDocument(document({ ai_context: context }), { organization: 'acme' }).metrics;
    const exported = osiDocument([imported as unknown as ExportedMetric]);
    const [metric] = (exported.semantic_model as { metrics: Record<string, unknown>[] }[])[0]?.metrics ?? [];
    expect(metric).toMatchObject({ description: 'Revenue after refunds.', ai_context: context });
    const [again] = importOsiDocument(exported, { organization: 'acme' }).metrics;
    for (const field of ['description', 'business_definition', 'aliases', 'consumer_contexts'] as const)
      expect(again?.[field], field).toEqual(imported?.[field]);
  });

  it('carries METRIC_GOVERNANCE (vendor name in any case), relationship targets by OSI name', () => {
    const governance = {
      lifecycle_status: 'APPROVED',
      owner_team: 'Finance Analytics',
      scope: 'enterprise_canonical',
      business_definition: { included: 'All channels.' },
      relationships: [{ kind: 'variant_of', target: 'Gross Revenue' }],
    };
    const custom_extensions = [
      { vendor_name: 'DATABRICKS', data: '{"_v": 1}' },
      { vendor_name: 'metric_governance', data: JSON.stringify({ governance }) },
    ];
    const [metric] = importOsiDocument(document({ custom_extensions }), { organization: 'acme' }).metrics;
    expect(metric).toMatchObject({
      key: 'net_revenue',
      lifecycle_status: 'APPROVED',
      owner_team: 'Finance Analytics',
      scope: 'enterprise_canonical',
      relationships: [{ kind: 'variant_of', target: 'gross_revenue' }],
    });
    expect(metric?.business_definition).toEqual({
      caveats: 'Refunds are booked in the month issued.',
      included: 'All channels.',
    });
  });
});
