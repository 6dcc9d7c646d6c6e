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

type Trust = {
  verdict: string;
  reasons: string[];
  preferred_metric_id: string | null;
  untrusted_inputs: unknown[];
  explanations?: string[];
};
const use: Trust = { verdict: 'use', reasons: [], preferred_metric_id: null, untrusted_inputs: [] };
const caution = (...reasons: string[]): Trust => ({
  verdict: 'use_with_caution',
  reasons,
  preferred_metric_id: null,
  untrusted_inputs: [],
});
const doNotUse = (preferred: string | null, ...reasons: string[]): Trust => ({
  verdict: 'do_not_use',
  reasons,
  preferred_metric_id: preferred,
  untrusted_inputs: [],
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

/** The sentence each reason carries on the MCP tools, for the metrics above (exact). */
const said = {
  deprecated: 'lifecycle status is DEPRECATED and no replacement is recorded; ask the owner team which metric to use',
  deprecatedFor: (id: string) => `lifecycle status is DEPRECATED; use metric ${id} (preferred_metric_id) instead`,
  superseded: (id: string) => `metric ${id} supersedes this one; use it instead (get_metric_contract with that id)`,
  preRelease: (status: string) =>
    `lifecycle status is ${status}, not APPROVED or RELEASED; the definition may still change, so say that figures are provisional`,
  oneObjection:
    '1 open objection disputes this definition; read the pinned notes and mention the objection when reporting figures',
  neverValidated: 'no validation run is recorded; check the figures against a trusted source before relying on them',
  stale: (days: number, limit: number) =>
    `latest validation evidence is ${days} days old; the limit is ${limit} days, so ask the owner team to re-validate or say the figures are unverified`,
  conflicting:
    'another metric of the organization conflicts with this definition; confirm which one is meant (resolve_metric lists the candidates)',
};

const EXPLANATIONS = new Map<MetricJson, string[]>([
  [deprecated, [said.deprecated]],
  [chainStart, [said.superseded(chainEnd.id)]],
  [chainMiddle, [said.superseded(chainEnd.id)]],
  [deprecatedAndSuperseded, [said.deprecatedFor(chainEnd.id), said.superseded(chainEnd.id)]],
  [cycleA, [said.superseded(cycleB.id)]],
  [draft, [said.preRelease('DRAFT')]],
  [candidate, [said.preRelease('CANDIDATE')]],
  [objected, [said.oneObjection]],
  [neverValidated, [said.neverValidated]],
  [stale, [said.stale(31, 30)]],
  [conflictSource, [said.conflicting]],
  [conflictTarget, [said.conflicting]],
  [everyCaution, [said.preRelease('VALIDATED'), said.oneObjection, said.neverValidated, said.conflicting]],
]);

// Size bounds: ten pinned notes of 1,000 characters; 25 metrics with long descriptions.
const noted = metric({ key: 'noted', name: 'Noted' });
const notes = org.thread(noted, { intent: 'decision_rationale', resolution_status: 'resolved' });
for (let i = 0; i < 10; i++) {
  org.message(notes, {
    body: `${i}`.repeat(1000),
    pinned_at: new Date(Date.UTC(2026, 0, 2 + i)).toISOString(),
  });
}
// A definition of twenty sentences, with three pinned notes of 1,500 characters.
const sentence = 'All Northwind orders invoiced and paid in the period, net of refunds and credits issued in it. ';
const defined = metric({
  key: 'defined',
  name: 'Defined',
  business_definition: {
    included: sentence.repeat(8).trim(),
    excluded: sentence.repeat(6).trim(),
    time_window: 'Calendar month, UTC.',
    caveats: sentence.repeat(6).trim(),
    legacy_description: '',
  },
});
const definedNotes = org.thread(defined, { intent: 'decision_rationale', resolution_status: 'resolved' });
for (let i = 0; i < 3; i++) {
  org.message(definedNotes, { body: `${i}`.repeat(1500), pinned_at: new Date(Date.UTC(2026, 0, 2 + i)).toISOString() });
}
// A definition that alone passes 4 KB, with a note and a discussion to summarize.
const longDefined = metric({
  key: 'long_defined',
  name: 'Long defined',
  business_definition: {
    included: sentence.repeat(20).trim(),
    excluded: sentence.repeat(20).trim(),
    time_window: 'Calendar month, UTC.',
    caveats: sentence.repeat(10).trim(),
    legacy_description: '',
  },
});
org.message(org.thread(longDefined, { intent: 'decision_rationale', resolution_status: 'resolved' }), {
  body: 'We count refunds in the month they are issued.',
  pinned_at: new Date(Date.UTC(2026, 0, 2)).toISOString(),
});
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
      'query ($id: ID!) { metric(id: $id) { trust { verdict reasons preferredMetricId untrustedInputs { id } } } }',
      {
        id: m.id,
      },
    );
    const { preferred_metric_id, untrusted_inputs, ...rest } = expected;
    expect(data.metric.trust).toStrictEqual({
      ...rest,
      preferredMetricId: preferred_metric_id,
      untrustedInputs: untrusted_inputs,
    });

    // The MCP tools add one sentence per reason, in the reasons' order.
    const explained = { ...expected, explanations: EXPLANATIONS.get(m) ?? [] };
    expect(explained.explanations).toHaveLength(expected.reasons.length);
    const client = await connect(key.secret);
    const byTool = (await client.callTool({ name: 'get_metric', arguments: { id: m.id } })).structuredContent as {
      trust: Trust;
    };
    expect(byTool.trust).toStrictEqual(explained);
    const byContract = (await client.callTool({ name: 'get_metric_contract', arguments: { id: m.id } }))
      .structuredContent as { trust: Trust };
    expect(byContract.trust).toStrictEqual(explained);
    const resolved = (await client.callTool({ name: 'resolve_metric', arguments: { name: m.key } }))
      .structuredContent as { match: { trust: Trust } };
    expect(resolved.match.trust).toStrictEqual(explained);
    await client.close();
  });

  it('TRUST_STALE_VALIDATION_DAYS moves the threshold', async () => {
    const strict = await startTestApp({ fixture: r.build(), staleValidationDays: 7 });
    try {
      const res = await strict.get(`/api/v1/metrics/${fresh.id}/contract`, key.secret);
      expect(res.json().data.trust).toStrictEqual(caution('stale_validation'));
      // The sentence names the age and the configured limit.
      const client = new Client({ name: 'trust-test', version: '1.0.0' });
      const strictUrl = new URL('/mcp', await strict.app.listen({ port: 0, host: '127.0.0.1' }));
      await client.connect(
        new StreamableHTTPClientTransport(strictUrl, {
          requestInit: { headers: { authorization: `Bearer ${key.secret}` } },
        }),
      );
      const byTool = (await client.callTool({ name: 'get_metric', arguments: { id: fresh.id } })).structuredContent as {
        trust: Trust;
      };
      expect(byTool.trust.explanations).toEqual([said.stale(29, 7)]);
      await client.close();
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
  it('get_metric_contract stays within 4 KB by leaving out the oldest notes whole; REST keeps them all', async () => {
    const client = await connect(key.secret);
    const result = await client.callTool({ name: 'get_metric_contract', arguments: { key: 'noted' } });
    const content = result.structuredContent as Record<string, unknown> & {
      agent_context_notes: { body: string }[];
      agent_context_notes_omitted: number;
    };
    const bytes = Buffer.byteLength(JSON.stringify(content));
    expect(bytes).toBeLessThanOrEqual(4096);
    const full = (await t.get(`/api/v1/metrics/${noted.id}/contract`, key.secret)).json().data;
    expect(full.agent_context_notes).toHaveLength(10);
    // The newest two, whole (a third does not fit); the eight oldest are counted, not cut.
    expect(content.agent_context_notes).toStrictEqual(full.agent_context_notes.slice(0, 2));
    expect(content.agent_context_notes.map((note) => note.body[0])).toEqual(['9', '8']);
    expect(content.agent_context_notes_omitted).toBe(8);
    const { agent_context_notes_omitted: _omitted, ...rest } = content;
    const { dependents_count: _dependents, ...fullFacts } = full;
    expect({ ...rest, agent_context_notes: full.agent_context_notes, trust: full.trust }).toStrictEqual(fullFacts);
    await client.close();
  });

  it('get_metric_contract never cuts the business definition: notes and summary go first, then the limit gives way', async () => {
    const client = await connect(key.secret);
    // The finding: a definition of a few sentences with pinned notes came back cut; now the notes give way.
    const shortContent = (await client.callTool({ name: 'get_metric_contract', arguments: { key: 'defined' } }))
      .structuredContent as Record<string, unknown> & { agent_context_notes: { body: string }[] };
    const shortFull = (await t.get(`/api/v1/metrics/${defined.id}/contract`, key.secret)).json().data;
    expect(shortContent.business_definition).toStrictEqual(shortFull.business_definition);
    expect(shortContent.name).toBe(shortFull.name);
    expect(Buffer.byteLength(JSON.stringify(shortContent))).toBeLessThanOrEqual(4096);
    // One note is left, its body cut to fit; the others are counted.
    expect(shortContent.agent_context_notes).toHaveLength(1);
    expect(shortContent.agent_context_notes_omitted).toBe(2);
    const [kept] = shortContent.agent_context_notes as { body: string }[];
    expect(kept?.body.endsWith(MARKER)).toBe(true);
    expect(shortFull.agent_context_notes[0].body.startsWith(kept?.body.slice(0, -MARKER.length))).toBe(true);

    // A definition that alone passes 4 KB is served whole, without notes and with the summary cut.
    const long = await client.callTool({
      name: 'get_metric_contract',
      arguments: { key: 'long_defined', summary: true },
    });
    const longContent = long.structuredContent as Record<string, unknown> & { agent_context_notes: unknown[] };
    const longFull = (await t.get(`/api/v1/metrics/${longDefined.id}/contract`, key.secret)).json().data;
    expect(longContent.business_definition).toStrictEqual(longFull.business_definition);
    expect(Buffer.byteLength(JSON.stringify(longContent))).toBeGreaterThan(4096);
    expect(longContent.agent_context_notes).toEqual([]);
    expect(longContent.agent_context_notes_omitted).toBe(1);
    expect(longContent.discussion_summary).toBe(MARKER);
    for (const field of [
      'metric_id',
      'name',
      'canonical_url',
      'last_validated_at',
      'discourse_summary',
      'discussion_summary_meta',
    ]) {
      expect(longContent[field], field).toStrictEqual(longFull[field] ?? longContent[field]);
    }
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
