/**
 * POST /mcp with the SDK's own client (Client + StreamableHTTPClientTransport)
 * against the app listening on a real port: the tools, their results against
 * the REST routes, authentication and scopes, sandbox, rate limit, isolation
 * between organizations, and the size bounds for agents.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MetricJson, registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const DAY = 24 * 60 * 60 * 1000;
const daysAgo = (days: number) => new Date(Date.now() - days * DAY).toISOString();

const r = registry();
const acme = r.org({ plan: 'team' });
const agentKey = acme.key();
const definitionOnlyKey = acme.key({ scopes: ['definition:read'] });
const legacyKey = acme.key({ scopes: ['metrics:read'] });
const noScopeKey = acme.key({ scopes: ['other:read'] });
const sandboxKey = acme.key({ sandbox: true });
const revokedKey = acme.key({ revoked_at: '2026-01-02T00:00:00Z' });

const netRevenue = acme.metric({
  key: 'net_revenue',
  name: 'Net Revenue',
  description: 'Revenue net of refunds and discounts.',
  lifecycle_status: 'RELEASED',
  tags: ['finance'],
});
acme.validation(netRevenue, { ran_at: daysAgo(1) });
const grossRevenue = acme.metric({ key: 'gross_revenue', name: 'Gross Revenue', lifecycle_status: 'APPROVED' });
acme.validation(grossRevenue, { ran_at: daysAgo(2) });
acme.relate(grossRevenue, 'variant_of', netRevenue);
// A chain: revenue_v1 ← revenue_v2 ← net_revenue (each supersedes the one before).
const revenueV2 = acme.metric({ key: 'revenue_v2', name: 'Revenue V2', lifecycle_status: 'RELEASED' });
acme.validation(revenueV2, { ran_at: daysAgo(1) });
const revenueV1 = acme.metric({ key: 'revenue_v1', name: 'Old Revenue', lifecycle_status: 'RELEASED' });
acme.validation(revenueV1, { ran_at: daysAgo(1) });
acme.relate(netRevenue, 'supersedes', revenueV2);
acme.relate(revenueV2, 'supersedes', revenueV1);

// A metric with a discussion, for the billed summary.
const acmeDiscussed: MetricJson = acme.metric({ key: 'discussed', name: 'Discussed' });
acme.message(acme.thread(acmeDiscussed, { intent: 'decision_rationale', resolution_status: 'resolved' }), {
  body: 'We count refunds in the month they are issued.',
});

const limitedKey = acme.key({ rate_limit_per_minute: 4 });
const batchKey = acme.key({ rate_limit_per_minute: 4 });

const other = r.org();
const otherKey = other.key();
const otherMetric = other.metric({ key: 'net_revenue', name: 'Net Revenue', description: 'Theirs.' });

let t: TestApp;
let url: URL;

beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
  const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
  url = new URL('/mcp', address);
});
afterAll(() => t?.close());

async function connect(secret: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { authorization: `Bearer ${secret}`, ...headers } },
  });
  await client.connect(transport);
  return client;
}

type ToolResult = Awaited<ReturnType<Client['callTool']>>;

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return client.callTool({ name, arguments: args });
}

function textOf(result: ToolResult): string {
  const [first] = result.content as { type: string; text: string }[];
  return first?.text ?? '';
}

async function rest(path: string, secret = agentKey.secret) {
  const res = await t.get(path, secret);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data;
}

/** Raw JSON-RPC over HTTP, for what the SDK client would not send or would hide. */
function post(body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

describe('tools/list', () => {
  it('lists the five read-only tools with input and output schemas', async () => {
    const client = await connect(agentKey.secret);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'get_metric',
      'get_metric_contract',
      'list_changes',
      'resolve_metric',
      'search_metrics',
    ]);
    for (const tool of tools) {
      expect(tool.annotations?.readOnlyHint, tool.name).toBe(true);
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type, tool.name).toBe('object');
    }
    const search = tools.find((tool) => tool.name === 'search_metrics');
    expect(Object.keys(search?.inputSchema.properties ?? {}).sort()).toEqual(
      ['lifecycle_status', 'page', 'page_size', 'policy_tier', 'query', 'scope'].sort(),
    );
    expect(search?.inputSchema.properties?.page_size).toMatchObject({ minimum: 1, maximum: 25 });
    const contract = tools.find((tool) => tool.name === 'get_metric_contract');
    expect(Object.keys(contract?.outputSchema?.properties ?? {})).toEqual(
      expect.arrayContaining(['metric_id', 'agent_context_notes', 'trust', 'discussion_summary_meta']),
    );
    await client.close();
  });
});

describe('tools/list size', () => {
  it('is at most 8 KB on the wire, and the contract’s output schema names every field once', async () => {
    const res = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { authorization: `Bearer ${agentKey.secret}`, 'mcp-protocol-version': '2025-06-18' },
    );
    expect(res.status).toBe(200);
    const body = await res.text();
    const bytes = Buffer.byteLength(body);
    // 8 KB read either way (8,000 or 8,192 bytes).
    expect(bytes).toBeLessThanOrEqual(8000);
    const { tools } = (JSON.parse(body) as { result: { tools: { name: string; outputSchema: unknown }[] } }).result;
    const client = await connect(agentKey.secret);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(tools.map((tool) => tool.name));
    await client.close();
    const contract = tools.find((tool) => tool.name === 'get_metric_contract')?.outputSchema as {
      properties: Record<string, { description?: string; properties?: Record<string, unknown> }>;
    };
    expect(Object.keys(contract.properties)).toEqual([
      'metric_id',
      'name',
      'business_definition',
      'business_definition_status',
      'current_approved_version',
      'last_validated_at',
      'lifecycle_status',
      'challenges_count',
      'open_challenges_count',
      'requires_disambiguation',
      'canonical_url',
      'discussion_thread_count',
      'discussion_message_count',
      'agent_context_notes',
      'agent_context_notes_omitted',
      'discourse_summary',
      'trust',
      'inputs',
      'inputs_omitted',
      'discussion_summary',
      'discussion_summary_meta',
    ]);
    expect(Object.keys(contract.properties.trust?.properties ?? {})).toEqual([
      'verdict',
      'reasons',
      'explanations',
      'preferred_metric_id',
      'untrusted_inputs',
    ]);
  });
});

describe('JSON-RPC framing', () => {
  const auth = () => ({ authorization: `Bearer ${agentKey.secret}` });
  const parseError = { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Invalid JSON' }, id: null };

  it('a body that is not JSON is the JSON-RPC parse error -32700, not the REST { error }', async () => {
    for (const body of ['{"jsonrpc": "2.0", "id": 1, "method": ', 'not json', '']) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth() },
        body,
      });
      expect(res.status, body).toBe(400);
      expect(res.headers.get('content-type'), body).toMatch(/^application\/json/);
      expect(await res.json(), body).toEqual(parseError);
    }
  });

  it('a body that is not application/json is the SDK’s 415 in JSON-RPC', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', accept: 'application/json, text/event-stream', ...auth() },
      body: '{}',
    });
    expect([res.status, await res.json()]).toEqual([
      415,
      {
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Unsupported Media Type: Content-Type must be application/json' },
        id: null,
      },
    ]);
  });

  it('a body over the 1 MiB limit is the SDK’s 413 in JSON-RPC', async () => {
    const res = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(1024 * 1024) } },
      auth(),
    );
    expect([res.status, await res.json()]).toEqual([
      413,
      {
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Payload Too Large: Request body must not exceed 1048576 bytes' },
        id: null,
      },
    ]);
  });

  it('authentication still answers before parsing: no key and a bad body is the contract’s 401', async () => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'not json' });
    expect([res.status, await res.json()]).toEqual([401, { error: 'Missing Authorization header' }]);
  });

  it('initialize does not advertise tools.listChanged (a stateless server never sends it)', async () => {
    const res = await post(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      },
      auth(),
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { result: { capabilities: Record<string, unknown> } };
    expect(body.result.capabilities.tools).toEqual({});
    const client = await connect(agentKey.secret);
    expect(client.getServerCapabilities()?.tools?.listChanged).toBeUndefined();
    await client.close();
  });
});

describe('search_metrics', () => {
  it('answers the list route’s search, with keys and trust verdicts', async () => {
    const client = await connect(agentKey.secret);
    const result = await call(client, 'search_metrics', { query: 'revenue' });
    expect(result.isError).toBeFalsy();
    const page = result.structuredContent as {
      items: Record<string, unknown>[];
      total: number;
      page: number;
      page_size: number;
    };
    const listed = (await t.get('/api/v1/metrics?q=revenue&pageSize=10', agentKey.secret)).json();
    expect(page.total).toBe(listed.pagination.total);
    expect({ page: page.page, page_size: page.page_size }).toEqual({ page: 1, page_size: 10 });
    expect(page.items.map((item) => item.id)).toEqual(listed.data.map((item: { id: string }) => item.id));
    for (const [index, item] of page.items.entries()) {
      const restItem = listed.data[index];
      expect(item).toEqual({
        id: restItem.id,
        key: expect.any(String),
        name: restItem.name,
        description: restItem.description,
        lifecycle_status: restItem.lifecycle_status,
        scope: restItem.scope,
        policy_tier: restItem.policy_tier,
        owner_team: restItem.owner_team,
        trust: { verdict: (await rest(`/api/v1/metrics/${restItem.id}/contract`)).trust.verdict },
      });
    }
    expect(textOf(result)).toContain('Net Revenue (net_revenue, RELEASED): use');
    await client.close();
  });

  it('filters like the list route and rejects a page_size over 25', async () => {
    const client = await connect(agentKey.secret);
    const approved = await call(client, 'search_metrics', { lifecycle_status: 'APPROVED' });
    expect((approved.structuredContent as { items: { id: string }[] }).items.map((i) => i.id)).toEqual([
      grossRevenue.id,
    ]);
    const tooMany = await call(client, 'search_metrics', { page_size: 26 });
    expect(tooMany.isError).toBe(true);
    expect(textOf(tooMany)).toMatch(/Invalid arguments for tool search_metrics.*page_size/s);
    await client.close();
  });
});

describe('search_metrics hints', () => {
  it('says which words were corrected, and suggests close names when nothing is found, as the list’s meta does', async () => {
    const client = await connect(agentKey.secret);
    const corrected = await call(client, 'search_metrics', { query: 'net revnue' });
    expect(corrected.structuredContent).toMatchObject({
      items: [{ id: netRevenue.id }],
      total: 1,
      corrected: [{ from: 'revnue', to: 'revenue' }],
    });
    expect(corrected.structuredContent).not.toHaveProperty('did_you_mean');
    expect(textOf(corrected).split('\n').slice(0, 2)).toEqual([
      '1 metrics; page 1 (1 shown)',
      'Corrected: revnue → revenue',
    ]);
    const listed = (await t.get('/api/v1/metrics?q=net%20revnue&pageSize=10', agentKey.secret)).json();
    expect(listed.meta.corrected).toEqual([{ from: 'revnue', to: 'revenue' }]);

    // Quoted: taken as written, so nothing is found.
    const none = await call(client, 'search_metrics', { query: '"net revnue"' });
    expect(none.structuredContent).toEqual({
      items: [],
      total: 0,
      page: 1,
      page_size: 10,
      did_you_mean: ['Net Revenue'],
    });
    expect(textOf(none)).toBe('0 metrics; page 1 (0 shown)\nDid you mean: Net Revenue');
    await client.close();
  });
});

describe('get_metric', () => {
  it('answers the detail route’s fields and the contract’s trust, by id and by key', async () => {
    const client = await connect(agentKey.secret);
    const detail = (await rest(`/api/v1/metrics/${netRevenue.id}`)).metric;
    const { trust } = await rest(`/api/v1/metrics/${netRevenue.id}/contract`);
    const expected = {
      id: detail.id,
      key: 'net_revenue',
      name: detail.name,
      description: detail.description,
      lifecycle_status: detail.lifecycle_status,
      definition_version: detail.definition_version,
      sql_expression: detail.sql_expression,
      grains: detail.grains,
      default_grain: detail.default_grain,
      dimensions: detail.dimensions,
      filters: detail.filters,
      source_refs: detail.source_refs,
      owner_team: detail.owner_team,
      policy_tier: detail.policy_tier,
      scope: detail.scope,
      tags: ['finance'],
      trust: { ...trust, explanations: [] },
      inputs: [],
    };
    expect(trust).toEqual({ verdict: 'use', reasons: [], preferred_metric_id: null, untrusted_inputs: [] });
    expect((await call(client, 'get_metric', { id: netRevenue.id })).structuredContent).toStrictEqual(expected);
    expect((await call(client, 'get_metric', { key: 'net_revenue' })).structuredContent).toStrictEqual(expected);
    await client.close();
  });

  it('answers the contract’s errors as tool errors', async () => {
    const client = await connect(agentKey.secret);
    const cases: [Record<string, unknown>, string | RegExp][] = [
      [{ id: '00000000-0000-4000-8000-000000000000' }, 'Metric not found'],
      [{ id: otherMetric.id }, 'Metric not found'],
      [{ key: 'no_such_metric' }, 'Metric not found'],
      [{ id: 'not-a-uuid' }, 'Invalid metric ID format'],
      [{}, 'Invalid arguments: give exactly one of id or key'],
      [{ id: netRevenue.id, key: 'net_revenue' }, 'Invalid arguments: give exactly one of id or key'],
      [{ id: 42 }, /Invalid arguments for tool get_metric/],
    ];
    for (const tool of ['get_metric', 'get_metric_contract']) {
      for (const [args, message] of cases) {
        const result = await call(client, tool, args);
        expect(result.isError, `${tool} ${JSON.stringify(args)}`).toBe(true);
        expect(result.structuredContent).toBeUndefined();
        if (typeof message === 'string') expect(textOf(result)).toBe(message);
        else expect(textOf(result)).toMatch(tool === 'get_metric' ? message : /Invalid arguments for tool/);
      }
    }
    await client.close();
  });
});

describe('get_metric_contract', () => {
  it('equals the contract route’s data, trust included, by id and by key', async () => {
    const client = await connect(agentKey.secret);
    const explanations = new Map([
      [
        revenueV1.id,
        [`metric ${netRevenue.id} supersedes this one; use it instead (get_metric_contract with that id)`],
      ],
    ]);
    for (const metric of [netRevenue, revenueV1, grossRevenue]) {
      const { dependents_count: _dependents, ...data } = await rest(`/api/v1/metrics/${metric.id}/contract`);
      // The route's data but its dependents count, and a sentence for each trust reason.
      const expected = { ...data, trust: { ...data.trust, explanations: explanations.get(metric.id) ?? [] } };
      expect((await call(client, 'get_metric_contract', { id: metric.id })).structuredContent).toStrictEqual(expected);
      expect((await call(client, 'get_metric_contract', { key: metric.key })).structuredContent).toStrictEqual(
        expected,
      );
    }
    await client.close();
  });

  it('summary: true behaves as ?summary=true, and says whether it was billed', async () => {
    const client = await connect(agentKey.secret);
    const metric = acmeDiscussed;
    const first = (await call(client, 'get_metric_contract', { id: metric.id, summary: true })).structuredContent as {
      discussion_summary: string | null;
      discussion_summary_meta: { cache_hit: boolean; charged: boolean };
    };
    expect(first.discussion_summary_meta).toEqual({ cache_hit: false, charged: true });
    expect(first.discussion_summary).toEqual(expect.any(String));
    const again = await t.get(`/api/v1/metrics/${metric.id}/contract?summary=true`, agentKey.secret);
    expect(again.json().data.discussion_summary_meta).toEqual({ cache_hit: true, charged: false });
    expect(again.json().data.discussion_summary).toBe(first.discussion_summary);
    const plain = (await call(client, 'get_metric_contract', { id: metric.id })).structuredContent;
    expect(plain).not.toHaveProperty('discussion_summary_meta');
    await client.close();
  });
});

describe('resolve_metric', () => {
  it('by key: the match, its canonical metric and its disambiguation candidates', async () => {
    const client = await connect(agentKey.secret);
    const result = (await call(client, 'resolve_metric', { name: 'net_revenue' })).structuredContent as Resolved;
    expect(result.match?.id).toBe(netRevenue.id);
    expect(result.canonical?.id).toBe(netRevenue.id);
    expect(result.match).toEqual({
      id: netRevenue.id,
      key: 'net_revenue',
      name: 'Net Revenue',
      lifecycle_status: 'RELEASED',
      trust: { verdict: 'use', reasons: [], explanations: [], preferred_metric_id: null, untrusted_inputs: [] },
    });
    // Variants and supersession of the match, never the match itself.
    expect(result.candidates.map((c) => c.id).sort()).toEqual([grossRevenue.id, revenueV2.id].sort());
    await client.close();
  });

  it('by name regardless of case: the end of the supersession chain is canonical', async () => {
    const client = await connect(agentKey.secret);
    const result = (await call(client, 'resolve_metric', { name: 'OLD REVENUE' })).structuredContent as Resolved;
    expect(result.match?.id).toBe(revenueV1.id);
    expect(result.match?.trust).toEqual({
      verdict: 'do_not_use',
      reasons: ['superseded'],
      explanations: [`metric ${netRevenue.id} supersedes this one; use it instead (get_metric_contract with that id)`],
      preferred_metric_id: netRevenue.id,
      untrusted_inputs: [],
    });
    expect(result.canonical).toEqual({
      id: netRevenue.id,
      key: 'net_revenue',
      name: 'Net Revenue',
      lifecycle_status: 'RELEASED',
      trust: { verdict: 'use', reasons: [], explanations: [], preferred_metric_id: null, untrusted_inputs: [] },
    });
    expect(result.candidates.map((c) => c.id)).toEqual([revenueV2.id]);
    await client.close();
  });

  it('"net revenue" then its contract: two calls, the canonical definition and whether to use it', async () => {
    const client = await connect(agentKey.secret);
    const resolved = (await call(client, 'resolve_metric', { name: 'net revenue' })).structuredContent as Resolved;
    expect(resolved.canonical?.id).toBe(netRevenue.id);
    const contract = (await call(client, 'get_metric_contract', { id: resolved.canonical?.id })).structuredContent as {
      trust: { verdict: string };
    };
    expect(contract.trust.verdict).toBe('use');
    await client.close();
  });

  it('by search when nothing is called so: the best hit, then the next hits as candidates', async () => {
    const client = await connect(agentKey.secret);
    const result = (await call(client, 'resolve_metric', { name: 'revnue' })).structuredContent as Resolved;
    const hits = (await t.get('/api/v1/metrics?q=revnue&pageSize=7', agentKey.secret)).json().data as { id: string }[];
    expect(result.match?.id).toBe(hits[0]?.id);
    const canonical = result.canonical?.id;
    expect(result.candidates.map((c) => c.id)).toEqual(
      hits
        .slice(1)
        .map((h) => h.id)
        .filter((id) => id !== canonical)
        .slice(0, 5),
    );
    expect(result.candidates.length).toBeLessThanOrEqual(5);
    const none = (await call(client, 'resolve_metric', { name: 'zzqqxx' })).structuredContent;
    expect(none).toEqual({ match: null, canonical: null, candidates: [] });
    await client.close();
  });
});

type ResolvedMetric = { id: string; key: string; name: string; lifecycle_status: string; trust: unknown };
type Resolved = { match: ResolvedMetric | null; canonical: ResolvedMetric | null; candidates: ResolvedMetric[] };

describe('organizations are isolated', () => {
  it('another organization’s key sees only its own metrics, and another’s id is not found', async () => {
    const client = await connect(otherKey.secret);
    const resolved = (await call(client, 'resolve_metric', { name: 'net_revenue' })).structuredContent as Resolved;
    expect(resolved.match?.id).toBe(otherMetric.id);
    expect(resolved.candidates).toEqual([]);
    const search = (await call(client, 'search_metrics', { query: 'revenue' })).structuredContent as {
      items: { id: string }[];
    };
    expect(search.items.map((i) => i.id)).toEqual([otherMetric.id]);
    for (const tool of ['get_metric', 'get_metric_contract']) {
      const result = await call(client, tool, { id: netRevenue.id });
      expect([result.isError, textOf(result)]).toEqual([true, 'Metric not found']);
    }
    await client.close();
  });
});

describe('scopes', () => {
  it('a definition:read key searches but gets Insufficient scope from get_metric_contract', async () => {
    const client = await connect(definitionOnlyKey.secret);
    expect((await call(client, 'get_metric', { id: netRevenue.id })).isError).toBeFalsy();
    expect((await call(client, 'resolve_metric', { name: 'net_revenue' })).isError).toBeFalsy();
    const contract = await call(client, 'get_metric_contract', { id: netRevenue.id });
    expect([contract.isError, textOf(contract)]).toEqual([true, 'Insufficient scope']);
    await client.close();
  });

  it('a legacy metrics:read key reaches every tool, the contract included', async () => {
    const client = await connect(legacyKey.secret);
    const contract = await call(client, 'get_metric_contract', { key: 'net_revenue' });
    expect(contract.isError).toBeFalsy();
    expect((contract.structuredContent as { metric_id: string }).metric_id).toBe(netRevenue.id);
    await client.close();
  });
});

describe('authentication before any MCP processing', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  };

  it('answers the contract’s statuses and JSON bodies', async () => {
    const cases: [Record<string, string>, number, unknown][] = [
      [{}, 401, { error: 'Missing Authorization header' }],
      [
        { authorization: 'Basic abc' },
        401,
        { error: 'Invalid Authorization header format. Expected: Bearer <api_key>' },
      ],
      [{ authorization: 'Bearer cl_short' }, 401, { error: 'Invalid API key format' }],
      [{ authorization: `Bearer cl_${'0'.repeat(40)}` }, 401, { error: 'Invalid API key' }],
      [{ authorization: `Bearer ${revokedKey.secret}` }, 401, { error: 'API key has been revoked' }],
      [{ authorization: `Bearer ${noScopeKey.secret}` }, 403, { error: 'Insufficient scope' }],
      [
        { authorization: `Bearer ${sandboxKey.secret}` },
        403,
        {
          error: {
            code: 'sandbox_key_requires_sandbox',
            message: 'This API key is a sandbox key and can only be used with the header X-Service-Env: sandbox',
          },
        },
      ],
    ];
    for (const [headers, status, body] of cases) {
      const res = await post(initialize, headers);
      expect({ status: res.status, body: await res.json() }, JSON.stringify(headers)).toEqual({ status, body });
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    }
    // Not even a malformed body is looked at before the key is.
    const malformed = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    expect([malformed.status, await malformed.json()]).toEqual([401, { error: 'Missing Authorization header' }]);
  });

  it('the SDK client cannot connect without a valid key', async () => {
    await expect(connect(`cl_${'0'.repeat(40)}`)).rejects.toThrow(/401|Invalid API key/);
  });

  it('a sandbox key works with X-Service-Env: sandbox', async () => {
    const client = await connect(sandboxKey.secret, { 'x-service-env': 'sandbox' });
    const result = await call(client, 'get_metric', { key: 'net_revenue' });
    expect((result.structuredContent as { id: string }).id).toBe(netRevenue.id);
    await client.close();
  });

  it('GET and DELETE are 405 (stateless: no stream, no session)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(url, { method, headers: { authorization: `Bearer ${agentKey.secret}` } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
  });
});

describe('rate limit', () => {
  it('each tool call spends one request of the key’s budget; past it, 429 with Retry-After before MCP', async () => {
    const auth = { authorization: `Bearer ${limitedKey.secret}` };
    const first = await post(toolCall(1, 'get_metric', { key: 'net_revenue' }), auth);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    expect(first.headers.get('ratelimit-limit')).toBe('4');
    expect(first.headers.get('ratelimit-remaining')).toBe('3');
    expect(
      ((await first.json()) as { result: { structuredContent: { id: string } } }).result.structuredContent.id,
    ).toBe(netRevenue.id);
    for (const id of [2, 3, 4]) {
      const next = await post(toolCall(id, 'get_metric', { key: 'net_revenue' }), auth);
      expect(next.status).toBe(200);
      expect(next.headers.get('ratelimit-remaining')).toBe(String(4 - id));
    }
    const after = await post(toolCall(6, 'get_metric', { key: 'net_revenue' }), auth);
    expect([after.status, await after.json()]).toEqual([429, { error: 'Rate limit exceeded' }]);
    expect(Number(after.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('a JSON-RPC batch is refused with the SDK’s Invalid Request error and costs one unit, whatever it holds', async () => {
    const auth = { authorization: `Bearer ${batchKey.secret}` };
    const listTools = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list' });
    const refused = await post(
      Array.from({ length: 100 }, (_, i) => listTools(i + 1)),
      auth,
    );
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(refused.headers.get('ratelimit-remaining')).toBe('3');
    expect(await refused.json()).toEqual({
      jsonrpc: '2.0',
      error: {
        code: -32600,
        message:
          'Invalid Request: JSON-RPC batches are not supported (removed in MCP 2025-06-18); send one message per request',
      },
      id: null,
    });
    // Tool calls in a batch run nothing and are not charged.
    const calls = await post(
      Array.from({ length: 10 }, (_, i) => toolCall(i + 1, 'get_metric', { key: 'net_revenue' })),
      auth,
    );
    expect(calls.status).toBe(400);
    expect(((await calls.json()) as { error: { code: number } }).error.code).toBe(-32600);
    expect(calls.headers.get('ratelimit-remaining')).toBe('2');
    const next = await post(toolCall(11, 'get_metric', { key: 'net_revenue' }), auth);
    expect(next.status).toBe(200);
    expect(next.headers.get('ratelimit-remaining')).toBe('1');
  });
});
