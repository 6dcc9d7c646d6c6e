/**
 * The trust verdict on fixture metrics made for each reason, the same on the
 * REST contract, GraphQL and the MCP tools; batched on GraphQL lists; and the
 * size bounds of the MCP tools for agents.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetricJson, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { statementCount } from '../rest/expectations.js';

const DAY = 24 * 60 * 60 * 1000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY).toISOString();
const MARKER = '…[truncated]';

const r = registry();
const org = r.org();
const key = org.key();

/** A metric that is `use` unless the options say otherwise: released, validated yesterday. */
function metric(options: Partial<MetricJson> = {}, validatedDaysAgo: number | null = 1): MetricJson {
  const m = org.metric(options);
  if (validatedDaysAgo !== null) org.validation(m, { ran_at: daysAgo(validatedDaysAgo) });
  return m;
}

const clean = metric();
const approved = metric({ lifecycle_status: 'APPROVED' });
const deprecated = metric({ lifecycle_status: 'DEPRECATED' });
const chainEnd = metric();
const chainMiddle = metric();
const chainStart = metric();
org.relate(chainEnd, 'supersedes', chainMiddle);
org.relate(chainMiddle, 'supersedes', chainStart);
const deprecatedAndSuperseded = metric({ lifecycle_status: 'DEPRECATED' });
org.relate(chainEnd, 'supersedes', deprecatedAndSuperseded);
// A cycle of supersessions ends where the walk comes back.
const cycleA = metric();
const cycleB = metric();
org.relate(cycleA, 'supersedes', cycleB);
org.relate(cycleB, 'supersedes', cycleA);
const draft = metric({ lifecycle_status: 'DRAFT' });
const candidate = metric({ lifecycle_status: 'CANDIDATE' });
const objected = metric();
org.thread(objected, { intent: 'objection', resolution_status: 'open' });
const objectionResolved = metric();
org.thread(objectionResolved, { intent: 'objection', resolution_status: 'resolved' });
org.thread(objectionResolved, { intent: 'question', resolution_status: 'open' });
const neverValidated = metric({}, null);
const stale = metric({}, 31);
const fresh = metric({}, 29);
const conflictSource = metric();
const conflictTarget = metric();
org.relate(conflictSource, 'conflicts_with', conflictTarget);
const everyCaution = metric({ lifecycle_status: 'VALIDATED' }, null);
org.thread(everyCaution, { intent: 'objection', resolution_status: 'open' });
org.relate(conflictTarget, 'conflicts_with', everyCaution);
// variant_of and related_to are no cautions.
const variant = metric();
org.relate(variant, 'variant_of', clean);
org.relate(variant, 'related_to', approved);

type Trust = { verdict: string; reasons: string[]; preferred_metric_id: string | null };
const use: Trust = { verdict: 'use', reasons: [], preferred_metric_id: null };
const caution = (...reasons: string[]): Trust => ({ verdict: 'use_with_caution', reasons, preferred_metric_id: null });
const doNotUse = (preferred: string | null, ...reasons: string[]): Trust => ({
  verdict: 'do_not_use',
  reasons,
  preferred_metric_id: preferred,
});

const EXPECTED: [string, MetricJson, Trust][] = [
  ['released, validated yesterday', clean, use],
  ['approved', approved, use],
  ['deprecated, no successor', deprecated, doNotUse(null, 'deprecated')],
  ['superseded: the end of the chain is preferred', chainStart, doNotUse(chainEnd.id, 'superseded')],
  ['superseded once', chainMiddle, doNotUse(chainEnd.id, 'superseded')],
  ['deprecated and superseded', deprecatedAndSuperseded, doNotUse(chainEnd.id, 'deprecated', 'superseded')],
  ['the end of the chain', chainEnd, use],
  ['in a cycle', cycleA, doNotUse(cycleB.id, 'superseded')],
  ['draft', draft, caution('pre_release')],
  ['candidate', candidate, caution('pre_release')],
  ['an open objection', objected, caution('open_objections')],
  ['a resolved objection, an open question', objectionResolved, use],
  ['never validated', neverValidated, caution('never_validated')],
  ['validated 31 days ago', stale, caution('stale_validation')],
  ['validated 29 days ago', fresh, use],
  ['conflicts with another', conflictSource, caution('conflicting_definition')],
  ['another conflicts with it', conflictTarget, caution('conflicting_definition')],
  [
    'every caution, in order',
    everyCaution,
    caution('pre_release', 'open_objections', 'never_validated', 'conflicting_definition'),
  ],
  ['a variant and a related metric', variant, use],
];

// Size bounds: ten pinned notes of 1,000 characters; 25 metrics with long descriptions.
const noted = metric({ key: 'noted', name: 'Noted' });
const notes = org.thread(noted, { intent: 'decision_rationale', resolution_status: 'resolved' });
for (let i = 0; i < 10; i++) {
  org.message(notes, {
    body: `${i}`.repeat(1000),
    pinned_at: new Date(Date.UTC(2026, 0, 2 + i)).toISOString(),
  });
}
const wide = r.org();
const wideKey = wide.key();
for (let i = 0; i < 30; i++) {
  wide.metric({ key: `wide_${i}`, name: `Wide metric ${String(i).padStart(2, '0')}`, description: 'd'.repeat(2000) });
}

let t: TestApp;
let url: URL;

beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), serverTiming: true });
  url = new URL('/mcp', await t.app.listen({ port: 0, host: '127.0.0.1' }));
});
afterAll(() => t?.close());

async function connect(secret: string): Promise<Client> {
  const client = new Client({ name: 'trust-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${secret}` } } }),
  );
  return client;
}

async function graphql(query: string, variables: Record<string, unknown> = {}) {
  const res = await t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
    payload: { query, variables },
  });
  const body = res.json();
  expect(body.errors).toBeUndefined();
  return { data: body.data, statements: statementCount(res) };
}

describe('trust verdict on every surface', () => {
  it.each(EXPECTED)('%s', async (_label, m, expected) => {
    const contract = await t.get(`/api/v1/metrics/${m.id}/contract`, key.secret);
    expect(contract.json().data.trust).toStrictEqual(expected);

    const { data } = await graphql(
      'query ($id: ID!) { metric(id: $id) { trust { verdict reasons preferredMetricId } } }',
      {
        id: m.id,
      },
    );
    const { preferred_metric_id, ...rest } = expected;
    expect(data.metric.trust).toStrictEqual({ ...rest, preferredMetricId: preferred_metric_id });

    const client = await connect(key.secret);
    const byTool = (await client.callTool({ name: 'get_metric', arguments: { id: m.id } })).structuredContent as {
      trust: Trust;
    };
    expect(byTool.trust).toStrictEqual(expected);
    await client.close();
  });

  it('TRUST_STALE_VALIDATION_DAYS moves the threshold', async () => {
    const strict = await startTestApp({ fixture: r.build(), staleValidationDays: 7 });
    try {
      const res = await strict.get(`/api/v1/metrics/${fresh.id}/contract`, key.secret);
      expect(res.json().data.trust).toStrictEqual(caution('stale_validation'));
    } finally {
      await strict.close();
    }
  });

  it('a GraphQL list reads the verdict of every item with its page, whatever the page size', async () => {
    const query = '{ metrics(pageSize: $n) { items { id trust { verdict reasons preferredMetricId } } } }';
    const small = await graphql(query.replace('$n', '2'));
    const large = await graphql(query.replace('$n', '20'));
    expect(large.data.metrics.items).toHaveLength(20);
    expect(large.statements).toBe(small.statements);
    // Key lookup, then the page with its total and every item's verdict.
    expect(large.statements).toBe(2);
    const byId = new Map(EXPECTED.map(([, m, expected]) => [m.id, expected]));
    for (const item of large.data.metrics.items) {
      const expected = byId.get(item.id);
      if (expected) expect(item.trust.verdict).toBe(expected.verdict);
    }
  });
});

describe('size bounds for agents', () => {
  it('get_metric_contract stays within 4 KB with ten 1,000-character notes; REST keeps them whole', async () => {
    const client = await connect(key.secret);
    const result = await client.callTool({ name: 'get_metric_contract', arguments: { key: 'noted' } });
    const content = result.structuredContent as { agent_context_notes: { body: string }[] } & Record<string, unknown>;
    expect(Buffer.byteLength(JSON.stringify(content))).toBeLessThanOrEqual(4096);
    const full = (await t.get(`/api/v1/metrics/${noted.id}/contract`, key.secret)).json().data;
    expect(full.agent_context_notes).toHaveLength(10);
    expect(content.agent_context_notes).toHaveLength(10);
    for (const [index, note] of content.agent_context_notes.entries()) {
      const whole = full.agent_context_notes[index];
      expect(whole.body).toHaveLength(1000);
      expect(note.body.endsWith(MARKER)).toBe(true);
      expect(whole.body.startsWith(note.body.slice(0, -MARKER.length))).toBe(true);
      // Every other field of the note, and of the contract, as the route says.
      expect({ ...note, body: whole.body }).toStrictEqual(whole);
    }
    expect({ ...content, agent_context_notes: full.agent_context_notes }).toStrictEqual(full);
    await client.close();
  });

  it('a search_metrics page of 25 stays within 8 KB; REST keeps the descriptions whole', async () => {
    const client = await connect(wideKey.secret);
    const result = await client.callTool({ name: 'search_metrics', arguments: { page_size: 25 } });
    const page = result.structuredContent as { items: { description: string; id: string }[]; total: number };
    expect(page.items).toHaveLength(25);
    expect(page.total).toBe(30);
    expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThanOrEqual(8192);
    for (const item of page.items) expect(item.description).toMatch(/^d+…\[truncated\]$/);
    const listed = (await t.get('/api/v1/metrics?pageSize=25', wideKey.secret)).json().data;
    expect(listed.map((item: { id: string }) => item.id)).toEqual(page.items.map((item) => item.id));
    for (const item of listed) expect(item.description).toHaveLength(2000);
    await client.close();
  });
});
