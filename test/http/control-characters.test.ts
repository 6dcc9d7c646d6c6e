/**
 * Control characters (NUL first: PostgreSQL refuses it in text) and unpaired
 * surrogates in any text input are bad input on every transport: REST 400
 * naming the parameter, GraphQL BAD_USER_INPUT naming the argument, an MCP
 * tool error naming the tool's argument. Never a 500, an error log line or a
 * dependency error counted (the audit found `q=abc%00def` a 500
 * `Failed to fetch metric` with a logged stack and a database error counted).
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/http/metrics.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ plan: 'team' });
const key = org.key({ rate_limit_per_minute: 100_000 });
const metric = org.metric({ name: 'Net Revenue', key: 'net_revenue', policy_tier: 'tier_1' });

/** Values each refused wherever text is taken (tab, line feed and carriage return are allowed). */
const BAD = {
  nul: 'abc\u0000def',
  bell: '\u0007',
  escape: 'a\u001bb',
  delete: 'x\u007f',
  c1: 'next\u0085line',
  loneHigh: 'a\uD800b',
  loneLow: '\uDC00',
  reversedPair: '\uDC00\uD800',
};
/** Values that pass the character check (found or not found, never refused for their characters). */
const FINE = ['net revenue', 'tab\there', 'line\nbreak', '\uD83D\uDCC8 emoji', 'Ünïcödé'];

const message = (name: string) =>
  `${name} must not contain control characters (other than tab and line breaks) or unpaired surrogates`;

const errorLines: unknown[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString().split('\n').filter(Boolean)) {
      const entry = JSON.parse(line);
      if (entry.level >= 50) errorLines.push(entry);
    }
    done();
  },
});
const metrics = createMetrics();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build(), logger: pino({ level: 'warn' }, sink), metrics });
});
afterAll(() => t.close());

async function dependencyErrors(): Promise<number> {
  const { values } = await metrics.dependencyErrors.get();
  return values.reduce((sum, { value }) => sum + value, 0);
}

function graphql(query: string, variables: Record<string, unknown>) {
  return t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ query, variables }),
  });
}

let rpcId = 0;
async function callTool(name: string, args: Record<string, unknown>) {
  const res = await t.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      authorization: `Bearer ${key.secret}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    payload: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } }),
  });
  expect(res.statusCode, res.body).toBe(200);
  // The stateless transport answers a single request as JSON or as one server-sent event.
  const json = res.body.startsWith('{') ? res.body : (res.body.match(/^data: (.*)$/m)?.[1] ?? '');
  return JSON.parse(json).result as { isError?: boolean; content: { type: string; text: string }[] };
}

const REST_PARAMETERS = ['q', 'lifecycle_status', 'status', 'policy_tier', 'scope', 'type'];

const GRAPHQL_CASES: { name: string; query: string; variables: (bad: string) => Record<string, unknown> }[] = [
  {
    name: 'search',
    query: 'query($v: String) { metrics(search: $v) { items { id } } }',
    variables: (v) => ({ v }),
  },
  ...['lifecycleStatus', 'status', 'policyTier', 'scope', 'type'].map((field) => ({
    name: `filter.${field}`,
    query: 'query($f: MetricFilter) { metrics(filter: $f) { items { id } } }',
    variables: (v: string) => ({ f: { [field]: v } }),
  })),
  { name: 'key', query: 'query($v: String!) { metricByKey(key: $v) { id } }', variables: (v) => ({ v }) },
  { name: 'name', query: 'query($v: String!) { metricByName(name: $v) { id } }', variables: (v) => ({ v }) },
  { name: 'id', query: 'query($v: ID!) { metric(id: $v) { id } }', variables: (v) => ({ v }) },
  {
    name: 'ids[1]',
    query: 'query($v: ID!) { metricsByIds(ids: ["00000000-0000-4000-8000-000000000000", $v]) { id } }',
    variables: (v) => ({ v }),
  },
  {
    name: 'after',
    query: 'query($v: String) { metricsConnection(first: 1, after: $v) { edges { cursor } } }',
    variables: (v) => ({ v }),
  },
  {
    name: 'filter.policyTier',
    query: 'query($v: String) { metricsConnection(first: 1, filter: { policyTier: $v }) { edges { cursor } } }',
    variables: (v) => ({ v }),
  },
];

const MCP_CASES: { tool: string; name: string; args: (bad: string) => Record<string, unknown> }[] = [
  { tool: 'search_metrics', name: 'query', args: (v) => ({ query: v }) },
  { tool: 'search_metrics', name: 'policy_tier', args: (v) => ({ policy_tier: v }) },
  { tool: 'get_metric', name: 'key', args: (v) => ({ key: v }) },
  { tool: 'get_metric', name: 'id', args: (v) => ({ id: v }) },
  { tool: 'get_metric_contract', name: 'key', args: (v) => ({ key: v }) },
  { tool: 'resolve_metric', name: 'name', args: (v) => ({ name: v }) },
];

describe('control characters and unpaired surrogates in text input', () => {
  it('REST: every list parameter is a 400 naming it; a metric id is the 400 of a malformed id', async () => {
    // A URL carries UTF-8: an unpaired surrogate has no encoding there (below, its WTF-8 bytes).
    const controls = Object.entries(BAD).filter(([label]) => !/lone|reversed/.test(label));
    for (const [label, bad] of controls) {
      for (const name of REST_PARAMETERS) {
        const res = await t.get(`/api/v1/metrics?${name}=${encodeURIComponent(bad)}`, key.secret);
        expect(res.statusCode, `${name} ${label}: ${res.body}`).toBe(400);
        expect(res.json()).toEqual({ error: message(name) });
      }
      for (const path of [
        `/api/v1/metrics/${encodeURIComponent(bad)}`,
        `/api/v1/metrics/${encodeURIComponent(bad)}/contract`,
      ]) {
        const res = await t.get(path, key.secret);
        expect(res.statusCode, `${path}: ${res.body}`).toBe(400);
        expect(res.json()).toEqual({ error: 'Invalid metric ID format' });
      }
    }
    // The audit's own requests.
    for (const url of ['/api/v1/metrics?q=abc%00def', '/api/v1/metrics?policy_tier=%00']) {
      expect((await t.get(url, key.secret)).statusCode).toBe(400);
    }
    // Surrogates' bytes decode to replacement characters, which are text: a 200, never a 500.
    for (const bytes of ['%ED%A0%80', '%ED%B0%80', '%ED%B0%80%ED%A0%80']) {
      const res = await t.get(`/api/v1/metrics?q=a${bytes}b`, key.secret);
      expect(res.statusCode, bytes).toBe(200);
    }
  });

  it('GraphQL: every text argument is BAD_USER_INPUT naming it', async () => {
    for (const [label, bad] of Object.entries(BAD)) {
      for (const { name, query, variables } of GRAPHQL_CASES) {
        const res = await graphql(query, variables(bad));
        expect(res.statusCode, `${name} ${label}: ${res.body}`).toBe(200);
        const [error, ...more] = res.json().errors ?? [];
        expect(more, `${name} ${label}`).toEqual([]);
        expect(error?.message, `${name} ${label}`).toBe(message(name));
        expect(error?.extensions, `${name} ${label}`).toEqual({ code: 'BAD_USER_INPUT' });
      }
    }
  });

  it('MCP: every text argument of a tool is a tool error naming it', async () => {
    for (const [label, bad] of Object.entries(BAD)) {
      for (const { tool, name, args } of MCP_CASES) {
        const result = await callTool(tool, args(bad));
        expect(result.isError, `${tool} ${name} ${label}`).toBe(true);
        expect(result.content, `${tool} ${name} ${label}`).toEqual([{ type: 'text', text: message(name) }]);
      }
    }
  });

  it('tab, line breaks, emoji and letters pass: the same requests are answered', async () => {
    for (const fine of FINE) {
      expect((await t.get(`/api/v1/metrics?q=${encodeURIComponent(fine)}`, key.secret)).statusCode).toBe(200);
      const res = await graphql('query($v: String!) { metricByKey(key: $v) { id } }', { v: fine });
      expect(res.json()).toEqual({ data: { metricByKey: null } });
      expect((await callTool('resolve_metric', { name: fine })).isError, fine).toBeUndefined();
    }
    const found = await graphql('query($v: String!) { metricByKey(key: $v) { id } }', { v: 'net_revenue' });
    expect(found.json()).toEqual({ data: { metricByKey: { id: metric.id } } });
  });

  it('none of it logged an error or counted a dependency error', async () => {
    expect(errorLines).toEqual([]);
    expect(await dependencyErrors()).toBe(0);
  });
});
