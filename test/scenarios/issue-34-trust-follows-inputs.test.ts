/**
 * Issue 34, "Done when" 1, end to end over a listening socket: the scenario
 * of the issue replayed on a dbt semantic manifest imported through
 * `PUT /api/registry?format=dbt` (docs/importers.md). `total_revenue` is
 * deprecated through `config.meta.governance`, `total_profit` (derived:
 * revenue - expense) released, everything validated from CI: `total_profit`
 * is `use_with_caution` with `untrusted_input` naming `total_revenue` on the
 * REST contract, GraphQL and MCP, with a `metric.trust_changed` event in the
 * feed and at a webhook (signed). Releasing `total_revenue` again, or its
 * validation passing again after a failure, brings `total_profit` back to
 * `use`, each with its event (docs/trust.md#inputs, docs/changes.md). The
 * steps are one story: they run in order, on one organization.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.js';
import { newTeamOrg, type TeamOrg, uuidV5 } from '../registry/support.js';
import { type FinanceGovernance, financeManifest } from './finance-manifest.js';
import { SocketClient, toolResult } from './over-socket.js';

const fixtures = new URL('../../../shared/fixtures/dbt/', import.meta.url);
const hasFixtures = existsSync(fixtures);

let t: TestApp;
let http: SocketClient;
let org: TeamOrg;
let receiver: Receiver;
let mcp: Client;
/** A metric's id: the UUIDv5 of its organization's id and its key (docs/registry-document.md). */
const id = (key: string) => uuidV5(org.id, key);

beforeAll(async () => {
  t = await startTestApp({
    // Deliveries to a receiver on 127.0.0.1 over http, retried fast.
    webhooks: { allowHttp: true, allowPrivateNetworks: true, retryScheduleMs: [100, 200, 300], timeoutMs: 2000 },
    webhookWorker: { pollIntervalMs: 100, leaseMs: 5000 },
  });
  http = new SocketClient(await t.app.listen({ port: 0, host: '127.0.0.1' }));
  org = await newTeamOrg(t.database.prisma, 'dbt-trust');
  receiver = await startReceiver();
  // An admin subscribes the organization's BI cache to verdict changes.
  const hook = await http.send('POST', '/api/webhooks', {
    session: org.ownerSession,
    body: { url: receiver.url, types: ['metric.trust_changed'], description: 'BI cache' },
  });
  expect(hook.status, hook.text).toBe(201);
  receiver.secret = hook.body.data.secret;
  mcp = await http.mcp(org);
});
afterAll(async () => {
  await mcp?.close();
  await receiver?.close();
  await t?.close();
});

const OWNER = { owner_team: 'Finance Analytics' };

/** Imports the manifest with this governance; metrics without a lifecycle of their own start RELEASED. */
async function importManifest(governance: FinanceGovernance) {
  return http.apply(org, financeManifest(governance), 'format=dbt&default_lifecycle=RELEASED');
}

const revenueAs = (lifecycle_status: string): FinanceGovernance => ({
  total_revenue: { ...OWNER, lifecycle_status },
  total_expense: OWNER,
  total_profit: { ...OWNER, lifecycle_status: 'RELEASED' },
});

const use = { verdict: 'use', reasons: [], preferred_metric_id: null, untrusted_inputs: [] };

/** The trust of total_profit when `input` (one of its inputs, as `{ key, verdict, reasons }`) is untrusted. */
function cautionFor(input: { key: string; verdict: string; reasons: string[] }) {
  return {
    verdict: 'use_with_caution',
    reasons: ['untrusted_input'],
    preferred_metric_id: null,
    untrusted_inputs: [{ id: id(input.key), ...input }],
  };
}

const PROFIT_TRUST = `query ($id: ID!) {
  metric(id: $id) { key trust { verdict reasons preferredMetricId untrustedInputs { id key verdict reasons } } }
}`;

/** total_profit's trust as GraphQL answers it, in the REST contract's names. */
async function graphqlTrust() {
  const { metric } = await http.graphql(org, PROFIT_TRUST, { id: id('total_profit') });
  expect(metric.key).toBe('total_profit');
  const { verdict, reasons, preferredMetricId, untrustedInputs } = metric.trust;
  return { verdict, reasons, preferred_metric_id: preferredMetricId, untrusted_inputs: untrustedInputs };
}

/** total_profit's trust on REST, GraphQL and both MCP tools that read one metric: all must say `expected`. */
async function everyTransportSays(expected: Record<string, unknown>) {
  expect(await http.contractTrust(org, id('total_profit')), 'REST contract').toEqual(expected);
  expect(await graphqlTrust(), 'GraphQL').toEqual(expected);
  const byContract = (await toolResult(mcp, 'get_metric_contract', { key: 'total_profit' })).trust;
  const byMetric = (await toolResult(mcp, 'get_metric', { key: 'total_profit' })).trust;
  for (const [tool, trust] of [
    ['get_metric_contract', byContract],
    ['get_metric', byMetric],
  ]) {
    const { explanations, ...codes } = trust;
    expect(codes, `MCP ${tool}`).toEqual(expected);
    expect(explanations, `MCP ${tool}`).toHaveLength((expected.reasons as string[]).length);
  }
  return byContract.explanations as string[];
}

let cursor: string | null = null;

/** The metric.trust_changed events since the last call, by metric key. */
async function newTrustEvents() {
  const { events, cursor: next } = await http.changesAfter(org, cursor);
  cursor = next;
  return events.filter((event) => event.type === 'metric.trust_changed');
}

/** Waits for the webhook deliveries of `events` (by event id) and checks they are the same events, signed. */
async function deliveredToWebhook(events: { id: string }[]) {
  const wanted = new Set(events.map((event) => event.id));
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if ([...wanted].every((eventId) => receiver.received.some((request) => request.event.id === eventId))) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  for (const event of events) {
    const request = receiver.received.find((candidate) => candidate.event.id === event.id);
    expect(request, `delivery of ${event.id}`).toBeDefined();
    expect(request?.verified, 'signature').toBe(true);
    expect(request?.headers['webhook-id']).toBe(event.id);
    expect(request?.event).toEqual(event);
  }
}

describe('issue 34: trust follows the inputs of an imported dbt manifest', () => {
  it.skipIf(!hasFixtures)('the generated manifest has the members of a real one (shared/fixtures/dbt)', () => {
    // biome-ignore lint/suspicious/noExplicitAny: manifests are plain JSON
    const real: any = JSON.parse(readFileSync(new URL('synthetic-legacy.semantic_manifest.json', fixtures), 'utf8'));
    const ours = financeManifest({ total_revenue: OWNER });
    const members = (value: object) => Object.keys(value).sort();
    const realSimple = real.metrics.find((metric: { type: string }) => metric.type === 'simple');
    const realDerived = real.metrics.find((metric: { type: string }) => metric.type === 'derived');
    const [revenue, , profit] = ours.metrics;
    const pairs: [string, object, object][] = [
      ['manifest', ours, real],
      ['semantic model', ours.semantic_models[0], real.semantic_models[0]],
      ['measure', ours.semantic_models[0].measures[0], real.semantic_models[0].measures[0]],
      ['entity', ours.semantic_models[0].entities[0], real.semantic_models[0].entities[0]],
      ['time dimension', ours.semantic_models[0].dimensions[0], real.semantic_models[0].dimensions[0]],
      ['simple metric', revenue, realSimple],
      ['simple type_params', revenue.type_params, realSimple.type_params],
      ['measure input', revenue.type_params.measure, realSimple.type_params.measure],
      ['derived metric', profit, realDerived],
      ['derived type_params', profit.type_params, realDerived.type_params],
      ['metric input', profit.type_params.metrics[0], realDerived.type_params.metrics[0]],
      ['project_configuration', ours.project_configuration, real.project_configuration],
    ];
    for (const [what, mine, theirs] of pairs) expect(members(mine), what).toEqual(members(theirs));
  });

  it('a deprecated input makes the released, validated total_profit use_with_caution on every transport, with its event', async () => {
    cursor = (await http.changesAfter(org, null)).cursor;
    const imported = await importManifest(revenueAs('DEPRECATED'));
    expect(imported.totals).toMatchObject({ created: 3, updated: 0 });
    await http.validate(org, { total_revenue: 'passed', total_expense: 'passed', total_profit: 'passed' });

    const revenue = { key: 'total_revenue', verdict: 'do_not_use', reasons: ['deprecated'] };
    const expected = cautionFor(revenue);
    const explanations = await everyTransportSays(expected);
    // The one explanation says which input, by key and id, and why, in a sentence.
    expect(explanations).toHaveLength(1);
    expect(explanations[0]).toContain('total_revenue');
    expect(explanations[0]).toContain(id('total_revenue'));
    expect(explanations[0]).toContain('do_not_use');
    expect(explanations[0]).toContain('deprecated');
    expect(explanations[0]).toMatch(/^[a-z].*[a-z)]$/);
    // The input and the other input, for the record.
    expect(await http.contractTrust(org, id('total_revenue'))).toEqual({
      verdict: 'do_not_use',
      reasons: ['deprecated'],
      preferred_metric_id: null,
      untrusted_inputs: [],
    });
    expect(await http.contractTrust(org, id('total_expense'))).toEqual(use);

    // The validation moved total_profit from never validated to its current verdict: the event says where it is.
    const events = (await newTrustEvents()).filter((event) => event.subject === id('total_profit'));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'metric.trust_changed',
      subject: id('total_profit'),
      data: {
        id: id('total_profit'),
        key: 'total_profit',
        lifecycle_status: 'RELEASED',
        from: { verdict: 'use_with_caution', reasons: ['never_validated', 'untrusted_input'] },
        to: { verdict: 'use_with_caution', reasons: ['untrusted_input'], untrusted_inputs: expected.untrusted_inputs },
        preferred_metric_id: null,
      },
    });
    await deliveredToWebhook(events);
  });

  it('a manifest that releases total_revenue again brings total_profit back to use, with its event', async () => {
    const imported = await importManifest(revenueAs('RELEASED'));
    expect(imported.plan.filter((entry: { result: string }) => entry.result !== 'unchanged')).toEqual([
      {
        key: 'total_revenue',
        result: 'updated',
        changed_fields: ['lifecycle_status'],
        changes: [{ field: 'lifecycle_status', from: 'DEPRECATED', to: 'RELEASED' }],
      },
    ]);
    const explanations = await everyTransportSays(use);
    expect(explanations).toEqual([]);

    // Exactly the two verdicts that moved: the input's and its dependent's; total_expense did not move.
    const events = await newTrustEvents();
    expect(events.map((event) => event.data.key).sort()).toEqual(['total_profit', 'total_revenue']);
    const profit = events.find((event) => event.subject === id('total_profit'));
    expect(profit.data).toMatchObject({
      from: { verdict: 'use_with_caution', reasons: ['untrusted_input'] },
      to: { verdict: 'use', reasons: [] },
    });
    expect(profit.data.to.untrusted_inputs ?? []).toEqual([]);
    await deliveredToWebhook(events);
  });

  it('deprecated again, then released: the dependent follows each time', async () => {
    await importManifest(revenueAs('DEPRECATED'));
    const caution = cautionFor({ key: 'total_revenue', verdict: 'do_not_use', reasons: ['deprecated'] });
    await everyTransportSays(caution);
    const down = (await newTrustEvents()).find((event) => event.subject === id('total_profit'));
    expect(down?.data).toMatchObject({
      from: { verdict: 'use', reasons: [] },
      to: { verdict: 'use_with_caution', reasons: ['untrusted_input'], untrusted_inputs: caution.untrusted_inputs },
    });
    await importManifest(revenueAs('RELEASED'));
    expect(await http.contractTrust(org, id('total_profit'))).toEqual(use);
    const up = (await newTrustEvents()).find((event) => event.subject === id('total_profit'));
    expect(up?.data).toMatchObject({ to: { verdict: 'use', reasons: [] } });
    await deliveredToWebhook([down, up]);
  });

  it('a failed validation of total_revenue carries over; validating it again brings total_profit back, with events', async () => {
    await http.validate(org, { total_revenue: 'failed' });
    const failed = cautionFor({ key: 'total_revenue', verdict: 'use_with_caution', reasons: ['failed_validation'] });
    const [sentence] = await everyTransportSays(failed);
    expect(sentence).toContain('total_revenue');
    expect(sentence).toContain('failed_validation');
    const down = await newTrustEvents();
    expect(down.map((event) => event.data.key).sort()).toEqual(['total_profit', 'total_revenue']);

    await http.validate(org, { total_revenue: 'passed' }, new Date(Date.now() + 1000));
    await everyTransportSays(use);
    const up = await newTrustEvents();
    expect(up.map((event) => event.data.key).sort()).toEqual(['total_profit', 'total_revenue']);
    expect(up.find((event) => event.subject === id('total_profit')).data).toMatchObject({
      from: { verdict: 'use_with_caution', reasons: ['untrusted_input'] },
      to: { verdict: 'use', reasons: [] },
    });
    await deliveredToWebhook([...down, ...up]);
  });
});
