/**
 * The MCP tools name a metric's inputs with their verdicts, through the SDK
 * client over a listening socket: get_metric and get_metric_contract, as the
 * REST contract does; within 4 KB a metric of 100 long-named inputs leaves
 * out inputs of verdict `use` first, and says how many.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTRACT_MAX_BYTES, METRIC_MAX_BYTES } from '../../src/mcp/tools.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { announceVerdict, insertInputs } from '../helpers/lineage.js';

const r = registry();
const org = r.org();
const key = org.key();
const revenue = org.metric({ key: 'total_revenue', name: 'Total Revenue', lifecycle_status: 'DEPRECATED' });
const expense = org.metric({ key: 'total_expense', name: 'Total Expense' });
const profit = org.metric({ key: 'total_profit', name: 'Total Profit' });
const wide = org.metric({ key: 'wide', name: 'Wide' });
const many = Array.from({ length: 100 }, (_, i) =>
  org.metric({
    key: `input_with_a_long_key_${String(i).padStart(3, '0')}`,
    name: `An input metric with a long and descriptive name, number ${i}`,
  }),
);
/** Positions of the inputs of `wide` that are not `use`. */
const UNTRUSTED = new Set([10, 50, 99]);

let t: TestApp;
let url: URL;

beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
  url = new URL('/mcp', await t.app.listen({ port: 0, host: '127.0.0.1' }));
  const { prisma } = t.database;
  await insertInputs(prisma, profit.id, [revenue.id, expense.id]);
  await announceVerdict(prisma, revenue.id, 'do_not_use', ['deprecated']);
  await insertInputs(
    prisma,
    wide.id,
    many.map((metric) => metric.id),
  );
  for (const [i, metric] of many.entries()) {
    await announceVerdict(
      prisma,
      metric.id,
      UNTRUSTED.has(i) ? 'do_not_use' : 'use',
      UNTRUSTED.has(i) ? ['deprecated'] : [],
    );
  }
});
afterAll(() => t?.close());

async function connect(): Promise<Client> {
  const client = new Client({ name: 'lineage-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${key.secret}` } } }),
  );
  return client;
}

type Input = { id: string; key: string; name: string; verdict: string | null };
type Answer = { inputs: Input[]; inputs_omitted?: number };

async function call(name: string, args: Record<string, unknown>) {
  const client = await connect();
  try {
    const result = await client.callTool({ name, arguments: args });
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    return { answer: result.structuredContent as Answer & Record<string, unknown>, text };
  } finally {
    await client.close();
  }
}

async function restContract(id: string) {
  const res = await t.get(`/api/v1/metrics/${id}/contract`, key.secret);
  expect(res.statusCode).toBe(200);
  return res.json().data;
}

describe('inputs on the MCP tools', () => {
  it('get_metric and get_metric_contract name the inputs with their verdicts, as the REST contract', async () => {
    const expected = [
      { id: revenue.id, key: 'total_revenue', name: 'Total Revenue', verdict: 'do_not_use' },
      // Not evaluated yet.
      { id: expense.id, key: 'total_expense', name: 'Total Expense', verdict: null },
    ];
    const metric = await call('get_metric', { key: 'total_profit' });
    expect(metric.answer.inputs).toEqual(expected);
    expect(metric.answer).not.toHaveProperty('inputs_omitted');
    expect(metric.text).toMatch(/; built from total_revenue \(do_not_use\), total_expense \(not evaluated\)$/);
    const contract = await call('get_metric_contract', { id: profit.id });
    expect(contract.answer.inputs).toEqual(expected);
    expect(contract.text).toMatch(/built from total_revenue \(do_not_use\)/);
    expect((await restContract(profit.id)).inputs).toEqual(expected);
    // A metric built from nothing.
    expect((await call('get_metric', { id: revenue.id })).answer.inputs).toEqual([]);
  });

  it.each([
    ['get_metric', METRIC_MAX_BYTES],
    ['get_metric_contract', CONTRACT_MAX_BYTES],
  ])('%s of 100 long-named inputs stays within its budget, keeping the inputs that are not use', async (tool, max) => {
    const { answer, text } = await call(tool, { id: wide.id });
    expect(Buffer.byteLength(JSON.stringify(answer))).toBeLessThanOrEqual(max);
    const full = (await restContract(wide.id)).inputs as Input[];
    expect(full).toHaveLength(100);
    expect(answer.inputs.length).toBeGreaterThan(UNTRUSTED.size);
    expect(answer.inputs_omitted).toBe(100 - answer.inputs.length);
    // Those kept are in their order, each whole; every input that is not `use` is among them.
    const positions = answer.inputs.map((input) => full.findIndex((f) => f.id === input.id));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    for (const [i, input] of answer.inputs.entries()) expect(input).toEqual(full[positions[i] as number]);
    for (const position of UNTRUSTED) expect(positions).toContain(position);
    expect(text).toMatch(new RegExp(`and ${answer.inputs_omitted} more$`));
  });
});
