/**
 * Imported meaning over a listening socket: a dbt manifest and an OSI
 * document generated here are imported through PUT /api/registry, and each
 * metric's contract states the business definition the file's description
 * (and OSI's ai_context) gave, or that it is empty when the file says
 * nothing; re-importing the same file plans nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const manifest = {
  metadata: { project_name: 'payments' },
  semantic_models: [
    {
      name: 'payments',
      defaults: { agg_time_dimension: 'paid_at' },
      node_relation: { alias: 'payments', schema_name: 'finance', database: 'wh' },
      measures: [{ name: 'amount', agg: 'sum', expr: 'amount' }],
      dimensions: [{ name: 'paid_at', type: 'time', type_params: { time_granularity: 'day' } }],
    },
  ],
  metrics: [
    {
      name: 'paid_amount',
      label: 'Paid amount',
      description: 'Amount paid, <b>refunds</b> excluded.',
      type: 'simple',
      type_params: { measure: { name: 'amount' } },
    },
    { name: 'raw_amount', label: 'Raw amount', description: '   ', type: 'simple', type_params: { measure: 'amount' } },
  ],
};

const osi = {
  version: '0.2.0',
  semantic_model: [
    {
      name: 'shop',
      datasets: [{ name: 'orders', source: 'wh.shop.orders', fields: [] }],
      metrics: [
        {
          name: 'order_count',
          description: 'Orders placed, test orders excluded.',
          expression: { dialects: [{ dialect: 'ANSI_SQL', expression: 'COUNT(orders.id)' }] },
          ai_context: {
            instructions: 'Orders are counted when placed, not shipped.',
            synonyms: ['orders'],
            examples: ['How many orders last week?'],
          },
        },
        { name: 'order_rows', expression: { dialects: [{ dialect: 'ANSI_SQL', expression: 'COUNT(*)' }] } },
      ],
    },
  ],
};

const EMPTY = { included: '', excluded: '', time_window: '', caveats: '', legacy_description: '' };

describe('imported meaning in the contract', () => {
  const r = registry();
  const dbtOrg = r.org();
  const osiOrg = r.org();
  const keys = [dbtOrg.key(), osiOrg.key()];
  const tokens: string[] = [];
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await startTestApp({ fixture: r.build() });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    for (const org of [dbtOrg, osiOrg])
      tokens.push(
        (await createServiceToken(t.database.prisma, { org: org.slug, name: 'ci', scopes: ['registry:write'] })).secret,
      );
  });
  afterAll(() => t.close());

  const send = (org: number, path: string, init: RequestInit = {}) =>
    fetch(new URL(path, base), {
      ...init,
      headers: { authorization: `Bearer ${init.method ? tokens[org] : keys[org]?.secret}`, ...init.headers },
    });

  async function apply(org: number, format: string, document: unknown) {
    const res = await send(org, `/api/registry?format=${format}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(document),
    });
    expect(res.status).toBe(200);
    return (await res.json()).data.totals as Record<string, number>;
  }

  /** Each metric's contract `data`, by name (list items carry no key). */
  async function contracts(org: number): Promise<Map<string, Record<string, unknown>>> {
    const list = await (await send(org, '/api/v1/metrics?pageSize=100')).json();
    const byName = new Map<string, Record<string, unknown>>();
    for (const item of list.data as { id: string; name: string }[]) {
      const res = await send(org, `/api/v1/metrics/${item.id}/contract`);
      expect(res.status).toBe(200);
      byName.set(item.name, (await res.json()).data);
    }
    return byName;
  }

  it('dbt: the description is the definition; a blank one is said empty; the same file again plans nothing', async () => {
    expect(await apply(0, 'dbt', manifest)).toMatchObject({ created: 2 });
    const served = await contracts(0);
    expect(served.get('Paid amount')).toMatchObject({
      name: 'Paid amount',
      business_definition: { ...EMPTY, included: 'Amount paid, <b>refunds</b> excluded.' },
      business_definition_status: 'defined',
    });
    expect(served.get('Raw amount')).toMatchObject({ business_definition: EMPTY, business_definition_status: 'empty' });
    expect(await apply(0, 'dbt', manifest)).toMatchObject({ created: 0, updated: 0, unchanged: 2 });
  });

  it('OSI: description and instructions are the definition and its caveats; none is said empty', async () => {
    expect(await apply(1, 'osi', osi)).toMatchObject({ created: 2 });
    const served = await contracts(1);
    expect(served.get('Order Count')).toMatchObject({
      business_definition: {
        ...EMPTY,
        included: 'Orders placed, test orders excluded.',
        caveats: 'Orders are counted when placed, not shipped.',
      },
      business_definition_status: 'defined',
    });
    expect(served.get('Order Rows')).toMatchObject({ business_definition: EMPTY, business_definition_status: 'empty' });
    expect(await apply(1, 'osi', osi)).toMatchObject({ created: 0, updated: 0, unchanged: 2 });
  });
});
