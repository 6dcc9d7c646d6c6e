/**
 * Removal is safe and reversible (issue 33, finding 6). A prune that removes
 * more than PRUNE_MAX_REMOVALS metrics, or every metric, is refused (400,
 * naming what would go, nothing written) unless `allow_removals` accepts at
 * least the plan's count; a dry run needs none and says what an apply would.
 * A removed metric is archived with everything that hung off it, and a later
 * document listing its key restores it whole, with its id, its evidence and
 * discussions, its trust verdict and contract as before, and a
 * `metric.restored` event; the sweep forgets it once retention has passed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { sweepOnce } from '../../src/changes/sweep.js';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import {
  type DocMetric,
  doc,
  docMetric,
  newTeamOrg,
  planOf,
  postValidations,
  putRegistry,
  type RegistryDoc,
  type Res,
  storedKeys,
  type TeamOrg,
  totals,
  uuidV5,
} from './support.js';

// A registry that existed before registry documents: a hand-made metric with
// evidence, a challenge and a discussion, and its approver.
const r = registry();
const acme = r.org();
const approver = acme.user({ email: 'approver@acme.example', role: 'admin' });
const revenue = acme.metric({ key: 'revenue', name: 'Revenue' });
acme.validation(revenue, { ran_at: '2026-01-05T00:00:00Z', status: 'failed', details: 'off by 2%' });
acme.challenge(revenue, { reason: 'Does not match finance.' });
acme.message(acme.thread(revenue, { intent: 'objection', title: 'Refunds' }), {
  body: 'Refunds are counted twice.',
  pinned_at: '2026-02-01T00:00:00Z',
});
acme.metric({ key: 'orders', name: 'Orders' });
const acmeKey = acme.key().secret;

let t: TestApp;
let acmeToken: string;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
  const scopes = ['registry:write', 'validations:write'];
  acmeToken = (await createServiceToken(t.database.prisma, { org: acme.slug, name: 'CI', scopes })).secret;
});
afterAll(() => t.close());

const prisma = () => t.database.prisma;

const apply = (org: { token: string }, body: RegistryDoc | string, query?: string) =>
  putRegistry(t, body, { token: org.token, query });

function expectStatus(res: Res, status: number) {
  expect(res.statusCode, res.body).toBe(status);
  return res;
}

async function eventCount(orgId: string): Promise<number> {
  return prisma().changeEvent.count({ where: { orgId } });
}

async function orgWith(keys: string[]): Promise<TeamOrg> {
  const org = await newTeamOrg(prisma(), 'removals');
  planOf(
    await apply(
      org,
      doc(
        org.slug,
        keys.map((key) => docMetric(key)),
      ),
    ),
  );
  return org;
}

const keys = (count: number, prefix = 'm') => Array.from({ length: count }, (_, i) => `${prefix}${i + 10}`);

describe('a prune that removes much needs its count confirmed', () => {
  it('an empty document with prune is refused naming every metric it would remove; allow_removals applies it', async () => {
    const org = await orgWith(['a', 'b', 'c']);
    const events = await eventCount(org.id);
    const refused = expectStatus(await apply(org, doc(org.slug, []), 'prune=true'), 400);
    expect(refused.json()).toEqual({
      error:
        'this prune would remove every metric of the organization (3); nothing was written. ' +
        'Review the plan (a dry run) and confirm with allow_removals=3',
      details: [
        'this prune would remove every metric of the organization (3); nothing was written. ' +
          'Review the plan (a dry run) and confirm with allow_removals=3',
        'would remove: a',
        'would remove: b',
        'would remove: c',
      ],
    });
    expect(await storedKeys(prisma(), org.id)).toEqual(['a', 'b', 'c']);
    expect(await eventCount(org.id)).toBe(events);
    expect(await prisma().removedMetric.count({ where: { orgId: org.id } })).toBe(0);

    const pruned = planOf(await apply(org, doc(org.slug, []), 'prune=true&allow_removals=3'));
    expect(pruned.totals).toEqual(totals({ removed: 3 }));
    expect(await storedKeys(prisma(), org.id)).toEqual([]);
  });

  it('one metric of one is every metric: refused without allow_removals=1', async () => {
    const org = await orgWith(['only']);
    const refused = expectStatus(await apply(org, doc(org.slug, []), 'prune=true'), 400);
    expect(refused.json().error).toMatch(/every metric of the organization \(1\).*allow_removals=1$/);
    expect(planOf(await apply(org, doc(org.slug, []), 'prune=true&allow_removals=1')).totals.removed).toBe(1);
  });

  it('allow_removals fewer than the plan removes is refused naming the count, even under the threshold', async () => {
    const org = await orgWith(['a', 'b', 'c', 'd']);
    const document = doc(org.slug, [docMetric('a'), docMetric('b')]);
    const refused = expectStatus(await apply(org, document, 'prune=true&allow_removals=1'), 400);
    expect(refused.json().error).toBe(
      'allow_removals=1 is fewer than the 2 metrics this prune would remove; nothing was written. ' +
        'Review the plan (a dry run) and confirm with allow_removals=2',
    );
    expect(refused.json().details.slice(1)).toEqual(['would remove: c', 'would remove: d']);
    expect(await storedKeys(prisma(), org.id)).toEqual(['a', 'b', 'c', 'd']);
    // More than the plan removes is accepted; without allow_removals two of four need none.
    expect(planOf(await apply(org, document, 'prune=true&allow_removals=5')).totals.removed).toBe(2);
    expect(await storedKeys(prisma(), org.id)).toEqual(['a', 'b']);
  });

  it('a dry run needs none: it lists each metric that would go and says what applying needs', async () => {
    const org = await orgWith(['a', 'b']);
    const dry = expectStatus(await apply(org, doc(org.slug, []), 'prune=true&dry_run=true'), 200);
    expect(dry.json().data).toEqual({
      organization: org.slug,
      source: 'registry',
      plan: [
        { key: 'a', result: 'removed', changed_fields: [] },
        { key: 'b', result: 'removed', changed_fields: [] },
      ],
      totals: totals({ removed: 2 }),
      trust_policy: 'unchanged',
      dry_run: true,
      applied: false,
      allow_removals_required: 2,
      impact: [
        { key: 'a', change: 'removed', dependents: { count: 0, keys: [] }, readers: { count: 0, keys: [] } },
        { key: 'b', change: 'removed', dependents: { count: 0, keys: [] }, readers: { count: 0, keys: [] } },
      ],
    });
    expect(await storedKeys(prisma(), org.id)).toEqual(['a', 'b']);
    // A plan that needs no confirmation says so.
    const small = planOf(await apply(org, doc(org.slug, [docMetric('a')]), 'prune=true&dry_run=true'));
    expect(small.totals.removed).toBe(1);
    const smallBody = expectStatus(await apply(org, doc(org.slug, [docMetric('a')]), 'prune=true&dry_run=true'), 200);
    expect(smallBody.json().data.allow_removals_required).toBeNull();
  });

  it('more than PRUNE_MAX_REMOVALS (10 by default) is refused, the first 20 named and the rest counted', async () => {
    const org = await orgWith([...keys(25), 'kept']);
    const document = doc(org.slug, [docMetric('kept')]);
    const refused = expectStatus(await apply(org, document, 'prune=true'), 400);
    const body = refused.json();
    expect(body.error).toBe(
      'this prune would remove 25 metrics, more than the 10 removed without confirmation; nothing was written. ' +
        'Review the plan (a dry run) and confirm with allow_removals=25',
    );
    expect(body.details.slice(1)).toEqual([
      ...keys(20).map((key) => `would remove: ${key}`),
      "and 5 more (the dry run's plan lists them all)",
    ]);
    expect(await storedKeys(prisma(), org.id)).toHaveLength(26);
    // Ten are removed without confirmation.
    const ten = await orgWith([...keys(10), 'kept']);
    expect(planOf(await apply(ten, doc(ten.slug, [docMetric('kept')]), 'prune=true')).totals.removed).toBe(10);
  });

  it('the threshold is a setting (PRUNE_MAX_REMOVALS)', async () => {
    const strict = await buildTestInstance(t.database, { pruneMaxRemovals: 1 });
    try {
      const org = await orgWith(['a', 'b', 'c']);
      const document = doc(org.slug, [docMetric('a')]);
      const refused = await putRegistry(strict, document, { token: org.token, query: 'prune=true' });
      expectStatus(refused, 400);
      expect(refused.json().error).toMatch(/^this prune would remove 2 metrics, more than the 1 removed without/);
      expect(await storedKeys(prisma(), org.id)).toEqual(['a', 'b', 'c']);
      // The default instance (10) applies the same request.
      expect(planOf(await apply(org, document, 'prune=true')).totals.removed).toBe(2);
    } finally {
      await strict.close();
    }
  });

  it('an empty dbt manifest with prune, as the source of every metric, plans to remove them all: refused the same way', async () => {
    const org = await orgWith(['a', 'b']);
    const manifest = JSON.stringify({ semantic_models: [], metrics: [] });
    // As its own source (dbt), the import has nothing to remove: the metrics are the registry document's.
    const own = await putRegistry(t, manifest, {
      token: org.token,
      query: 'format=dbt&prune=true&dry_run=true',
      contentType: 'application/json',
    });
    expect(expectStatus(own, 200).json().data.totals).toMatchObject({ removed: 0, absent: 2 });
    const refused = await putRegistry(t, manifest, {
      token: org.token,
      query: 'format=dbt&prune=true&source=registry',
      contentType: 'application/json',
    });
    expectStatus(refused, 400);
    expect(refused.json().error).toMatch(/every metric of the organization \(2\).*allow_removals=2$/);
    expect(await storedKeys(prisma(), org.id)).toEqual(['a', 'b']);
  });

  it('allow_removals that is not a whole number is 400 and writes nothing', async () => {
    const org = await orgWith(['a', 'b']);
    for (const value of ['-1', 'all', '1.5', '', '99999999']) {
      const res = expectStatus(await apply(org, doc(org.slug, []), `prune=true&allow_removals=${value}`), 400);
      expect(res.json()).toEqual({ error: 'allow_removals must be a whole number of metrics (0 or more)' });
    }
    expect(await storedKeys(prisma(), org.id)).toEqual(['a', 'b']);
  });

  it('over a real connection: refused without allow_removals, applied with it', async () => {
    // The suite's app, listening: closed with it.
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const org = await newTeamOrg(prisma(), 'socket');
    const put = (document: RegistryDoc, query: string) =>
      fetch(`${address}/api/registry${query}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${org.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(document),
      });
    expect((await put(doc(org.slug, [docMetric('a'), docMetric('b')]), '')).status).toBe(200);
    const refused = await put(doc(org.slug, []), '?prune=true');
    expect(refused.status).toBe(400);
    expect((await refused.json()).details).toEqual([
      expect.stringMatching(/allow_removals=2$/),
      'would remove: a',
      'would remove: b',
    ]);
    const applied = await put(doc(org.slug, []), '?prune=true&allow_removals=2');
    expect(applied.status).toBe(200);
    expect((await applied.json()).data.totals.removed).toBe(2);
  });
});

/** What a reader sees of a metric, less what an apply's writing changes by itself. */
async function served(id: string) {
  const contract = expectStatus(await t.get(`/api/v1/metrics/${id}/contract`, acmeKey), 200).json().data;
  const detail = expectStatus(await t.get(`/api/v1/metrics/${id}`, acmeKey), 200).json().data;
  return { contract: withoutWriteTimes(contract), detail: withoutWriteTimes(detail) };
}

/** `updated_at` and anything derived from it: a restore is a write. */
function withoutWriteTimes(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, member) => (key === 'updated_at' ? undefined : member));
}

async function historyOf(metricId: string) {
  const [validations, challenges, threads, messages, versions, approvals, trust] = await Promise.all([
    prisma().validation.findMany({ where: { metricId }, orderBy: { id: 'asc' } }),
    prisma().challenge.findMany({ where: { metricId }, orderBy: { id: 'asc' } }),
    prisma().thread.findMany({ where: { metricId }, orderBy: { id: 'asc' } }),
    prisma().message.findMany({ where: { metricId }, orderBy: { id: 'asc' } }),
    prisma().metricVersion.findMany({ where: { metricId }, orderBy: { id: 'asc' } }),
    prisma().approval.findMany({ where: { metricId }, orderBy: { id: 'asc' } }),
    prisma().metricTrustState.findUnique({ where: { metricId } }),
  ]);
  return { validations, challenges, threads, messages, versions, approvals, trust };
}

describe('a removed metric comes back whole', () => {
  const acmeCaller = () => ({ token: acmeToken });
  const revenueEntry = (fields: Record<string, unknown> = {}): DocMetric =>
    docMetric('revenue', {
      name: 'Revenue',
      lifecycle_status: 'RELEASED',
      versions: [{ definition_version: '1.0.0', status: 'released', released_at: '2026-01-01T00:00:00Z' }],
      approvals: [
        {
          definition_version: '1.0.0',
          approver: approver.email,
          approver_role: 'finance_controller',
          decision: 'approved',
          decided_at: '2026-01-02T00:00:00Z',
        },
      ],
      ...fields,
    });

  it('with its id, versions, approvals, evidence, challenge and discussion; trust and contract as before; metric.restored', async () => {
    const both = doc(acme.slug, [revenueEntry(), docMetric('orders', { name: 'Orders' })]);
    planOf(await apply(acmeCaller(), both));
    const recorded = await postValidations(
      t,
      { results: [{ metric_key: 'revenue', ran_at: new Date().toISOString(), status: 'passed', source: 'ci' }] },
      { token: acmeToken },
    );
    expectStatus(recorded, 200);
    const before = await served(revenue.id);
    const history = await historyOf(revenue.id);
    expect(history.validations).toHaveLength(2);
    expect(history.threads).toHaveLength(1);
    expect(history.messages).toHaveLength(1);
    expect(history.challenges).toHaveLength(1);
    expect(history.versions).toHaveLength(1);
    expect(history.approvals).toHaveLength(1);
    expect(history.trust).not.toBeNull();

    const ordersOnly = doc(acme.slug, [docMetric('orders', { name: 'Orders' })]);
    expect(planOf(await apply(acmeCaller(), ordersOnly, 'prune=true')).totals).toEqual(
      totals({ unchanged: 1, removed: 1 }),
    );
    expectStatus(await t.get(`/api/v1/metrics/${revenue.id}`, acmeKey), 404);
    expect(await prisma().validation.count({ where: { metricId: revenue.id } })).toBe(0);
    const listed = expectStatus(await t.get('/api/v1/metrics?pageSize=100', acmeKey), 200).json();
    expect(listed.pagination.total).toBe(1);
    expect(await prisma().removedMetric.count({ where: { orgId: acme.id } })).toBe(1);

    // The dry run says restored, and writes nothing.
    const dry = planOf(await apply(acmeCaller(), both, 'dry_run=true'));
    expect(dry.plan).toEqual([
      { key: 'revenue', result: 'restored', changed_fields: [] },
      { key: 'orders', result: 'unchanged', changed_fields: [] },
    ]);
    expect(await prisma().removedMetric.count({ where: { orgId: acme.id } })).toBe(1);

    const events = await eventCount(acme.id);
    expect(planOf(await apply(acmeCaller(), both))).toEqual({
      plan: [
        { key: 'revenue', result: 'restored', changed_fields: [] },
        { key: 'orders', result: 'unchanged', changed_fields: [] },
      ],
      totals: totals({ restored: 1, unchanged: 1 }),
    });
    // The fixture's own id, not the one an apply would derive for a new key.
    expect(revenue.id).not.toBe(uuidV5(acme.id, 'revenue'));
    expect(await served(revenue.id)).toEqual(before);
    expect(await historyOf(revenue.id)).toEqual(history);
    expect(await prisma().removedMetric.count({ where: { orgId: acme.id } })).toBe(0);
    const feed = expectStatus(await t.get('/api/v1/changes?limit=500', acmeKey), 200).json().data;
    const fresh = feed.slice(events) as { type: string; subject: string; data: Record<string, unknown> }[];
    expect(fresh.map((event) => event.type)).toEqual(['metric.restored']);
    expect(fresh[0]).toMatchObject({
      subject: revenue.id,
      data: { id: revenue.id, key: 'revenue', name: 'Revenue', lifecycle_status: 'RELEASED' },
    });
    // And again: nothing to do.
    expect(planOf(await apply(acmeCaller(), both)).totals).toEqual(totals({ unchanged: 2 }));
  });

  it('restored as the document now says it, with its evidence; a relationship may point at it again', async () => {
    const org = await orgWith(['a', 'b']);
    await postValidations(
      t,
      { results: [{ metric_key: 'b', ran_at: new Date().toISOString(), status: 'passed' }] },
      { token: org.token },
    );
    planOf(await apply(org, doc(org.slug, [docMetric('a')]), 'prune=true'));
    const back = doc(org.slug, [
      docMetric('a', { relationships: [{ kind: 'related_to', target: 'b' }] }),
      docMetric('b', { name: 'B renamed' }),
    ]);
    expect(planOf(await apply(org, back)).totals).toEqual(totals({ restored: 1, updated: 1 }));
    const id = uuidV5(org.id, 'b');
    const detail = expectStatus(await t.get(`/api/v1/metrics/${id}`, org.key), 200).json().data;
    expect(detail.metric).toMatchObject({ id, name: 'B renamed' });
    expect(await prisma().validation.count({ where: { metricId: id } })).toBe(1);
  });

  it('a relationship to a removed key that the document does not list again is still refused', async () => {
    const org = await orgWith(['a', 'b']);
    planOf(await apply(org, doc(org.slug, [docMetric('a')]), 'prune=true'));
    const res = expectStatus(
      await apply(org, doc(org.slug, [docMetric('a', { relationships: [{ kind: 'related_to', target: 'b' }] })])),
      400,
    );
    expect(res.json().error).toMatch(/no metric with key "b"/);
  });

  it('the sweep forgets removed metrics past retention: the key listed again is created anew', async () => {
    const org = await orgWith(['a', 'b', 'c']);
    await postValidations(
      t,
      { results: [{ metric_key: 'c', ran_at: new Date().toISOString(), status: 'passed' }] },
      { token: org.token },
    );
    planOf(await apply(org, doc(org.slug, [docMetric('a')]), 'prune=true'));
    const sweep = { intervalMs: 1000, retentionDays: 30, trust: { staleValidationDays: 30 } };
    const day = 24 * 3600 * 1000;
    // Within retention it is kept.
    await sweepOnce(prisma(), sweep, new Date(Date.now() + 29 * day));
    expect(await prisma().removedMetric.count({ where: { orgId: org.id } })).toBe(2);
    await sweepOnce(prisma(), sweep, new Date(Date.now() + 31 * day));
    expect(await prisma().removedMetric.count({ where: { orgId: org.id } })).toBe(0);
    const again = planOf(await apply(org, doc(org.slug, [docMetric('a'), docMetric('c')])));
    expect(again.plan[1]).toEqual({ key: 'c', result: 'created', changed_fields: [] });
    expect(await prisma().validation.count({ where: { metricId: uuidV5(org.id, 'c') } })).toBe(0);
  });
});
