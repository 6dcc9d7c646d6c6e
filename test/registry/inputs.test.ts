/**
 * Inputs are links (issue 34, item 1, docs/registry-document.md "Inputs"):
 * `inputs: [key, ...]` in a registry document becomes metric_input edges in
 * the list's order; re-applying plans nothing; a change of the list plans
 * `inputs` and replaces the edges; an input that names no metric, or one a
 * prune would remove, is a problem at its place; a cycle, in the document
 * or through the stored inputs of metrics it does not list, is refused
 * naming it, however long the chain. And the organization's `trust_policy`:
 * validated with its place, stored, kept by a document without one, cleared
 * by `{}`, and its change re-evaluates every verdict of the organization.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_METRICS, MAX_METRIC_INPUTS } from '../../src/registry/limits.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../rest/expectations.js';
import {
  type DocMetric,
  doc,
  docMetric,
  newTeamOrg,
  planOf,
  putRegistry,
  type RegistryDoc,
  type Res,
  storedInputs as storedInputsOf,
  type TeamOrg,
  totals,
  uuidV5,
} from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const prisma = () => t.database.prisma;

const apply = (org: TeamOrg, body: RegistryDoc, query?: string) => putRegistry(t, body, { token: org.token, query });

function dataOf(res: Res) {
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as ReturnType<typeof planOf> & { trust_policy: string; applied: boolean };
}

/** The stored inputs of the organization's metrics, by key. */
const storedInputs = (org: TeamOrg) => storedInputsOf(prisma(), org.id);

async function refused(org: TeamOrg, body: RegistryDoc, expected: unknown, query?: string) {
  const before = await storedInputs(org);
  expectError(await apply(org, body, query), 400, expected);
  expect(await storedInputs(org)).toEqual(before);
}

const profit = (inputs: string[]) => docMetric('profit', { metric_type: 'derived', inputs });

describe('inputs as edges', () => {
  it('an apply stores them in the list’s order; the same document again plans nothing', async () => {
    const org = await newTeamOrg(prisma(), 'inputs');
    const document = doc(org.slug, [profit(['revenue', 'expense']), docMetric('revenue'), docMetric('expense')]);
    expect(planOf(await apply(org, document)).totals).toEqual(totals({ created: 3 }));
    expect(await storedInputs(org)).toEqual({ profit: ['revenue', 'expense'] });
    const rows = await prisma().metricInput.findMany({ where: { metricId: uuidV5(org.id, 'profit') } });
    expect(rows.map(({ inputMetricId, position }) => [inputMetricId, position]).sort()).toEqual(
      [
        [uuidV5(org.id, 'revenue'), 0],
        [uuidV5(org.id, 'expense'), 1],
      ].sort(),
    );

    const again = dataOf(await apply(org, document));
    expect(again.totals).toEqual(totals({ unchanged: 3 }));
    expect(again.applied).toBe(false);
  });

  it('a changed list (order, one more, one fewer) plans `inputs` and replaces the edges', async () => {
    const org = await newTeamOrg(prisma(), 'inputs');
    const others = [docMetric('revenue'), docMetric('expense'), docMetric('tax')];
    planOf(await apply(org, doc(org.slug, [profit(['revenue', 'expense']), ...others])));
    for (const inputs of [['expense', 'revenue'], ['expense', 'revenue', 'tax'], ['tax'], []]) {
      const { plan } = planOf(await apply(org, doc(org.slug, [profit(inputs), ...others])));
      expect(plan[0]).toEqual({
        key: 'profit',
        result: 'updated',
        changed_fields: ['inputs'],
        changes: expect.any(Array),
      });
      expect(plan.slice(1).map((entry) => entry.result)).toEqual(['unchanged', 'unchanged', 'unchanged']);
      expect((await storedInputs(org)).profit ?? []).toEqual(inputs);
    }
  });

  it('an input already in the registry and not in the document is linked; the metric is kept', async () => {
    const org = await newTeamOrg(prisma(), 'inputs');
    planOf(await apply(org, doc(org.slug, [docMetric('revenue')])));
    const { plan } = planOf(await apply(org, doc(org.slug, [profit(['revenue'])])));
    expect(plan).toEqual([
      { key: 'profit', result: 'created', changed_fields: [] },
      { key: 'revenue', result: 'absent', changed_fields: [] },
    ]);
    expect(await storedInputs(org)).toEqual({ profit: ['revenue'] });
  });

  it('`inputs: []` is the same entry as no inputs: unchanged, the stored hash kept', async () => {
    const org = await newTeamOrg(prisma(), 'inputs');
    planOf(await apply(org, doc(org.slug, [docMetric('a')])));
    const { appliedHash } = await prisma().metric.findUniqueOrThrow({ where: { id: uuidV5(org.id, 'a') } });
    // An entry without inputs hashes without them (as before inputs existed), whether the list is left out or empty.
    const withEmpty = planOf(await apply(org, doc(org.slug, [docMetric('a', { inputs: [] })])));
    expect(withEmpty.totals).toEqual(totals({ unchanged: 1 }));
    expect((await prisma().metric.findUniqueOrThrow({ where: { id: uuidV5(org.id, 'a') } })).appliedHash).toBe(
      appliedHash,
    );
  });

  it('a change of inputs alone is a metric.updated event naming `inputs`', async () => {
    const org = await newTeamOrg(prisma(), 'inputs');
    planOf(await apply(org, doc(org.slug, [profit([]), docMetric('revenue')])));
    const events = await prisma().changeEvent.findMany({
      where: { orgId: org.id, type: 'metric.updated' },
      select: { subject: true },
    });
    expect(events).toEqual([]);
    planOf(await apply(org, doc(org.slug, [profit(['revenue']), docMetric('revenue')])));
    const updated = await prisma().changeEvent.findMany({
      where: { orgId: org.id, type: 'metric.updated' },
      select: { subject: true, data: true },
    });
    expect(updated.map((event) => event.subject)).toEqual([uuidV5(org.id, 'profit')]);
    expect(JSON.stringify(updated[0]?.data)).toContain('"changed_fields":["inputs"]');
  });
});

describe('inputs that cannot be', () => {
  it('an input that names no metric of the document or the registry: a problem at its place', async () => {
    const org = await newTeamOrg(prisma(), 'inputs');
    planOf(await apply(org, doc(org.slug, [docMetric('revenue')])));
    await refused(org, doc(org.slug, [docMetric('revenue'), profit(['revenue', 'ghost'])]), {
      error: 'metrics[1].inputs[1]: no metric with key "ghost" in the document or the registry',
    });
  });

  it('the same input twice, the metric itself, more than the limit: problems of the document, with places', async () => {
    const org = await newTeamOrg(prisma(), 'inputs');
    const metrics = [docMetric('revenue'), profit(['revenue', 'profit', 'revenue'])];
    await refused(org, doc(org.slug, metrics), {
      error: 'metrics[1].inputs[2]: duplicate input: also [0]',
      details: [
        'metrics[1].inputs[2]: duplicate input: also [0]',
        'metrics[1].inputs[1]: a metric cannot be its own input',
      ],
    });
    const many = Array.from({ length: MAX_METRIC_INPUTS + 1 }, (_, i) => `m${i}`);
    await refused(org, doc(org.slug, [profit(many)]), {
      error: `metrics[0].inputs: at most ${MAX_METRIC_INPUTS} inputs a metric`,
    });
    await refused(org, doc(org.slug, [profit(['Not A Key'])]), {
      error:
        'metrics[0].inputs[0]: expected lowercase letters, digits, "_", "." and "-", starting with a letter or digit',
    });
  });

  it('an input a prune would remove: a problem at its place; without prune the same document applies', async () => {
    const org = await newTeamOrg(prisma(), 'inputs');
    planOf(await apply(org, doc(org.slug, [docMetric('revenue'), docMetric('orders')])));
    await refused(
      org,
      doc(org.slug, [docMetric('orders'), profit(['orders', 'revenue'])]),
      { error: 'metrics[1].inputs[1]: metric "revenue" is not in the document, so prune would remove it' },
      'prune=true',
    );
    planOf(await apply(org, doc(org.slug, [docMetric('orders'), profit(['orders', 'revenue'])])));
    expect(await storedInputs(org)).toEqual({ profit: ['orders', 'revenue'] });
  });

  it('a prune removes a metric with its inputs; listing it again restores them from the document', async () => {
    const org = await newTeamOrg(prisma(), 'inputs');
    const metrics = [docMetric('revenue'), docMetric('expense'), profit(['revenue', 'expense'])];
    planOf(await apply(org, doc(org.slug, metrics)));
    const pruned = planOf(await apply(org, doc(org.slug, metrics.slice(0, 2)), 'prune=true'));
    expect(pruned.totals).toEqual(totals({ unchanged: 2, removed: 1 }));
    expect(await storedInputs(org)).toEqual({});
    // The archive keeps the removed metric's edges with the rest of what hung off it.
    const archived = await prisma().removedMetric.findUniqueOrThrow({
      where: { orgId_key: { orgId: org.id, key: 'profit' } },
    });
    const snapshot = archived.snapshot as { metric_input: { input_metric_id: string; position: number }[] };
    expect(snapshot.metric_input.map((edge) => [edge.input_metric_id, edge.position]).sort()).toEqual(
      [
        [uuidV5(org.id, 'revenue'), 0],
        [uuidV5(org.id, 'expense'), 1],
      ].sort(),
    );
    const restored = planOf(
      await apply(org, doc(org.slug, [...metrics.slice(0, 2), profit(['expense'])]), 'prune=true'),
    );
    expect(restored.plan[2]).toEqual({ key: 'profit', result: 'restored', changed_fields: [] });
    expect(await storedInputs(org)).toEqual({ profit: ['expense'] });
  });
});

describe('cycles', () => {
  it('a cycle in the document is refused naming it, at the input that closes it', async () => {
    const org = await newTeamOrg(prisma(), 'cycles');
    await refused(
      org,
      doc(org.slug, [
        docMetric('a', { inputs: ['b'] }),
        docMetric('b', { inputs: ['c'] }),
        docMetric('c', { inputs: ['x', 'a'] }),
        docMetric('x'),
      ]),
      { error: 'metrics[2].inputs[1]: inputs form a cycle: c -> a -> b -> c' },
    );
    expect(await prisma().metric.count({ where: { orgId: org.id } })).toBe(0);
  });

  it('a 2-cycle split between a stored input and the document is refused; a metric it does not list keeps its inputs', async () => {
    const org = await newTeamOrg(prisma(), 'cycles');
    planOf(await apply(org, doc(org.slug, [docMetric('a', { inputs: ['b'] }), docMetric('b')])));
    // The document lists b alone: a keeps its stored input b, and b -> a would close a -> b.
    await refused(org, doc(org.slug, [docMetric('b', { inputs: ['a'] })]), {
      error: 'metrics[0].inputs[0]: inputs form a cycle: b -> a -> b',
    });
    // Listing a too, without its input, replaces its edges: no cycle after the apply.
    planOf(await apply(org, doc(org.slug, [docMetric('b', { inputs: ['a'] }), docMetric('a')])));
    expect(await storedInputs(org)).toEqual({ b: ['a'] });
    // With prune, the metrics the document does not list go, and their inputs with them.
    planOf(await apply(org, doc(org.slug, [docMetric('c', { inputs: ['b'] }), docMetric('b')]), 'prune=true'));
    expect(await storedInputs(org)).toEqual({ c: ['b'] });
  });

  it('a chain of 1,000 stored metrics closed by a one-metric document is refused, its long cycle shortened', async () => {
    const org = await newTeamOrg(prisma(), 'cycles');
    const n = 1000;
    const chain = Array.from({ length: n }, (_, i) => docMetric(`m${i}`, { inputs: i === 0 ? [] : [`m${i - 1}`] }));
    planOf(await apply(org, doc(org.slug, chain)));
    const res = await apply(org, doc(org.slug, [docMetric('m0', { inputs: [`m${n - 1}`] })]), 'dry_run=true');
    const shown = ['m0', ...Array.from({ length: 9 }, (_, i) => `m${n - 1 - i}`), '...'];
    const tail = Array.from({ length: 10 }, (_, i) => `m${10 - i}`);
    expectError(res, 400, {
      error: `metrics[0].inputs[0]: inputs form a cycle: ${[...shown, ...tail, 'm0'].join(' -> ')} (${n} metrics)`,
    });
  });

  it(`a chain as deep as a document holds (${MAX_DOCUMENT_METRICS.toLocaleString('en-US')} metrics) plans, and closed is refused`, async () => {
    const org = await newTeamOrg(prisma(), 'cycles');
    const n = MAX_DOCUMENT_METRICS;
    // The deepest chain first in the document: the walk goes down it from its top.
    const chain: DocMetric[] = Array.from({ length: n }, (_, i) => ({
      key: `m${n - 1 - i}`,
      name: 'M',
      description: '',
      sql_expression: 'x',
      inputs: i === n - 1 ? [] : [`m${n - 2 - i}`],
    }));
    const open = dataOf(await apply(org, doc(org.slug, chain), 'dry_run=true'));
    expect(open.totals).toEqual(totals({ created: n }));
    (chain[n - 1] as DocMetric).inputs = [`m${n - 1}`];
    const closed = await apply(org, doc(org.slug, chain), 'dry_run=true');
    expect(closed.statusCode, closed.body).toBe(400);
    const { error } = closed.json() as { error: string };
    expect(error).toMatch(
      new RegExp(
        `^metrics\\[${n - 1}\\]\\.inputs\\[0\\]: inputs form a cycle: m0 -> m${n - 1} -> .* \\(${n} metrics\\)$`,
      ),
    );
  }, 120_000);
});

describe('trust_policy', () => {
  const policy = { tier_1: { failed_validation: 'do_not_use', stale_after_days: 7, use_requires: ['owner_team'] } };

  it('problems of the policy are refused with their place under trust_policy', async () => {
    const org = await newTeamOrg(prisma(), 'policy');
    const bad = (trust_policy: unknown) => ({ ...doc(org.slug, [docMetric('a')]), trust_policy }) as RegistryDoc;
    expectError(await apply(org, bad({ tier_1: { failed_validation: 'never' } })), 400, {
      error: 'trust_policy.tier_1.failed_validation: Invalid option: expected one of "use_with_caution"|"do_not_use"',
    });
    expectError(await apply(org, bad({ tier_1: { stale_after_days: 0 } })), 400, {
      error: 'trust_policy.tier_1.stale_after_days: Too small: expected number to be >0',
    });
    expectError(await apply(org, bad({ tier_1: { failed_validaton: 'do_not_use' } })), 400, {
      error: 'trust_policy.tier_1.failed_validaton: unknown field "failed_validaton"',
    });
    expectError(await apply(org, bad([])), 400, {
      error: 'trust_policy: Invalid input: expected record, received array',
    });
    expect(await prisma().metric.count({ where: { orgId: org.id } })).toBe(0);
  });

  it('stored when it changes, kept by a document without one, cleared by {} and null', async () => {
    const org = await newTeamOrg(prisma(), 'policy');
    const stored = async () =>
      (await prisma().organization.findUniqueOrThrow({ where: { id: org.id } })).trustPolicy as unknown;
    const metrics = [docMetric('a')];
    const withPolicy = (trust_policy: unknown) => ({ ...doc(org.slug, metrics), trust_policy }) as RegistryDoc;

    const dry = dataOf(await apply(org, withPolicy(policy), 'dry_run=true'));
    expect([dry.trust_policy, await stored()]).toEqual(['changed', null]);
    const first = dataOf(await apply(org, withPolicy(policy)));
    expect([first.trust_policy, first.applied]).toEqual(['changed', true]);
    expect(await stored()).toEqual(policy);

    // The same policy, written in another order: unchanged, nothing written.
    const reordered = {
      tier_1: { use_requires: ['owner_team'], stale_after_days: 7, failed_validation: 'do_not_use' },
    };
    const same = dataOf(await apply(org, withPolicy(reordered)));
    expect([same.trust_policy, same.applied]).toEqual(['unchanged', false]);
    // A document without one (an import never carries one) leaves it as it is.
    const without = dataOf(await apply(org, doc(org.slug, metrics)));
    expect([without.trust_policy, without.applied]).toEqual(['unchanged', false]);
    expect(await stored()).toEqual(policy);

    for (const cleared of [{}, null]) {
      dataOf(await apply(org, withPolicy(policy)));
      const reset = dataOf(await apply(org, withPolicy(cleared)));
      expect([reset.trust_policy, reset.applied]).toEqual(['changed', true]);
      expect(await stored()).toBeNull();
      expect(dataOf(await apply(org, withPolicy(cleared))).trust_policy).toBe('unchanged');
    }
  });

  it('a policy change re-evaluates every verdict of the organization, with its events, and changes every ETag', async () => {
    const org = await newTeamOrg(prisma(), 'policy');
    const metrics = [
      docMetric('a', { lifecycle_status: 'RELEASED' }),
      docMetric('b', { lifecycle_status: 'RELEASED' }),
    ];
    planOf(await apply(org, doc(org.slug, metrics)));
    const announced = async (key: string) =>
      (await prisma().metricTrustState.findUniqueOrThrow({ where: { metricId: uuidV5(org.id, key) } })).verdict;
    expect(await announced('a')).toBe('use_with_caution');
    // Evidence written behind the service's back: the verdict moves, and nothing has announced it.
    await prisma().validation.create({
      data: {
        id: uuidV5(org.id, 'validation'),
        metricId: uuidV5(org.id, 'a'),
        ranAt: new Date(Date.now() - 60 * 60 * 1000),
        status: 'passed',
      },
    });
    const etag = async (key: string) =>
      String((await t.get(`/api/v1/metrics/${uuidV5(org.id, key)}`, org.key)).headers.etag);
    const before = [await etag('a'), await etag('b')];

    // Only the policy changes (a tier no metric here has): no metric is updated, yet every verdict is evaluated.
    const res = dataOf(await apply(org, { ...doc(org.slug, metrics), trust_policy: policy } as RegistryDoc));
    expect([res.totals, res.trust_policy]).toEqual([totals({ unchanged: 2 }), 'changed']);
    expect(await announced('a')).toBe('use');
    const events = await prisma().changeEvent.findMany({
      where: { orgId: org.id, type: 'metric.trust_changed' },
      select: { subject: true },
    });
    expect(events).toEqual([{ subject: uuidV5(org.id, 'a') }]);
    const after = [await etag('a'), await etag('b')];
    expect(after[0]).not.toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
  });
});
