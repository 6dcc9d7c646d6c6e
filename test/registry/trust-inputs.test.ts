/**
 * Trust that follows inputs, through the writes that move it (issue 34,
 * item 3): an input deprecated by an apply, or failing its validation, makes
 * the metrics built on it (directly or further down) use_with_caution with
 * `untrusted_input`, naming it, with a metric.trust_changed event each in the
 * write's own transaction; bringing the input back brings them back. Inputs
 * are written as rows here, so that this file tests the verdict whatever
 * writes the edges (the registry document's `inputs` has its own tests).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, planOf, postValidations, putRegistry, type TeamOrg, uuidV5 } from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const prisma = () => t.database.prisma;
const KEYS = ['total_revenue', 'total_expense', 'total_profit', 'profit_margin', 'unrelated'];
/** Each metric's inputs: profit over revenue and expense, margin over profit and revenue. */
const INPUTS: Record<string, string[]> = {
  total_profit: ['total_revenue', 'total_expense'],
  profit_margin: ['total_profit', 'total_revenue'],
};

const released = (overrides: Record<string, Record<string, unknown>> = {}) =>
  KEYS.map((key) => docMetric(key, { lifecycle_status: 'RELEASED', ...overrides[key] }));

async function apply(org: TeamOrg, overrides: Record<string, Record<string, unknown>> = {}) {
  return planOf(await putRegistry(t, doc(org.slug, released(overrides)), { token: org.token }));
}

async function validate(org: TeamOrg, status: Record<string, 'passed' | 'failed'>) {
  const ranAt = new Date().toISOString();
  const results = Object.entries(status).map(([key, s]) => ({ metric_key: key, ran_at: ranAt, status: s }));
  const res = await postValidations(t, { results }, { token: org.token });
  expect(res.statusCode, res.body).toBe(200);
  // A later run gets a later time.
  await new Promise((resolve) => setTimeout(resolve, 5));
}

/** Released, validated metrics with the edges of INPUTS: every verdict is `use`. */
async function registry(): Promise<TeamOrg> {
  const org = await newTeamOrg(prisma(), 'inputs');
  await apply(org);
  for (const [key, inputs] of Object.entries(INPUTS)) {
    for (const [position, input] of inputs.entries()) {
      await prisma().$executeRaw`INSERT INTO metric_input (metric_id, input_metric_id, position)
        VALUES (${uuidV5(org.id, key)}::uuid, ${uuidV5(org.id, input)}::uuid, ${position})`;
    }
  }
  await validate(org, Object.fromEntries(KEYS.map((key) => [key, 'passed'])));
  return org;
}

async function trustOf(org: TeamOrg, key: string) {
  const res = await t.get(`/api/v1/metrics/${uuidV5(org.id, key)}/contract`, org.key);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.trust;
}

async function eventsAfter(org: TeamOrg, seq: bigint) {
  const rows = await prisma().changeEvent.findMany({
    where: { orgId: org.id, seq: { gt: seq }, type: 'metric.trust_changed' },
    orderBy: { seq: 'asc' },
  });
  return rows.map((row) => ({ key: (row.data as { key: string }).key, data: row.data as Record<string, unknown> }));
}

const lastSeq = async (org: TeamOrg) =>
  (await prisma().changeEvent.aggregate({ where: { orgId: org.id }, _max: { seq: true } }))._max.seq ?? 0n;

const use = { verdict: 'use', reasons: [], preferred_metric_id: null, untrusted_inputs: [] };

describe('trust follows inputs', () => {
  it('a deprecated input makes its dependents, however far down, use_with_caution naming it, with events', async () => {
    const org = await registry();
    for (const key of KEYS) expect(await trustOf(org, key), key).toEqual(use);
    const before = await lastSeq(org);

    await apply(org, { total_revenue: { lifecycle_status: 'DEPRECATED' } });
    const revenue = {
      id: uuidV5(org.id, 'total_revenue'),
      key: 'total_revenue',
      verdict: 'do_not_use',
      reasons: ['deprecated'],
    };
    const caution = { verdict: 'use_with_caution', reasons: ['untrusted_input'], preferred_metric_id: null };
    expect(await trustOf(org, 'total_profit')).toEqual({ ...caution, untrusted_inputs: [revenue] });
    // Margin reads revenue directly and through profit: named once.
    expect(await trustOf(org, 'profit_margin')).toEqual({ ...caution, untrusted_inputs: [revenue] });
    expect(await trustOf(org, 'total_expense')).toEqual(use);
    expect(await trustOf(org, 'unrelated')).toEqual(use);

    const events = await eventsAfter(org, before);
    expect(events.map((event) => event.key).sort()).toEqual(['profit_margin', 'total_profit', 'total_revenue']);
    const profit = events.find((event) => event.key === 'total_profit');
    expect(profit?.data).toMatchObject({
      from: { verdict: 'use', reasons: [] },
      to: { verdict: 'use_with_caution', reasons: ['untrusted_input'], untrusted_inputs: [revenue] },
    });

    // Released again: every dependent comes back, each with its event.
    const back = await lastSeq(org);
    await apply(org);
    for (const key of KEYS) expect(await trustOf(org, key), key).toEqual(use);
    expect((await eventsAfter(org, back)).map((event) => event.key).sort()).toEqual([
      'profit_margin',
      'total_profit',
      'total_revenue',
    ]);
  });

  it('a failed validation of an input carries over; a pass brings the dependents back', async () => {
    const org = await registry();
    const before = await lastSeq(org);
    await validate(org, { total_expense: 'failed' });
    const expense = {
      id: uuidV5(org.id, 'total_expense'),
      key: 'total_expense',
      verdict: 'use_with_caution',
      reasons: ['failed_validation'],
    };
    expect((await trustOf(org, 'total_profit')).untrusted_inputs).toEqual([expense]);
    // Not a direct input of margin, named through profit.
    expect((await trustOf(org, 'profit_margin')).untrusted_inputs).toEqual([expense]);
    expect((await eventsAfter(org, before)).map((event) => event.key).sort()).toEqual([
      'profit_margin',
      'total_expense',
      'total_profit',
    ]);

    await validate(org, { total_expense: 'passed' });
    expect(await trustOf(org, 'total_profit')).toEqual(use);
    expect(await trustOf(org, 'profit_margin')).toEqual(use);
  });

  it('stale evidence or a draft input stays with the input', async () => {
    const org = await registry();
    await apply(org, { total_expense: { lifecycle_status: 'DRAFT' } });
    expect((await trustOf(org, 'total_expense')).reasons).toEqual(['pre_release']);
    expect(await trustOf(org, 'total_profit')).toEqual(use);
  });

  it('GraphQL names the input and why', async () => {
    const org = await registry();
    await apply(org, { total_revenue: { lifecycle_status: 'DEPRECATED' } });
    const res = await t.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
      payload: {
        query:
          'query ($id: ID!) { metric(id: $id) { trust { verdict reasons untrustedInputs { key verdict reasons } } } }',
        variables: { id: uuidV5(org.id, 'total_profit') },
      },
    });
    expect(res.json().data.metric.trust).toEqual({
      verdict: 'use_with_caution',
      reasons: ['untrusted_input'],
      untrustedInputs: [{ key: 'total_revenue', verdict: 'do_not_use', reasons: ['deprecated'] }],
    });
  });
});
