/**
 * What the issue scenarios send, as a client outside the process sends it:
 * HTTP requests with `fetch` to the app listening on a port, and MCP through
 * the SDK's client over the same port.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'vitest';
import type { TeamOrg } from '../registry/support.js';

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: answers are plain JSON, checked by the tests
  body: any;
  text: string;
}

export interface SendOptions {
  /** an API key or service token (Authorization: Bearer) */
  bearer?: string;
  /** a session cookie value */
  session?: string;
  /** sent as JSON (or as is, when a string, with `contentType`) */
  body?: unknown;
  contentType?: string;
}

/** The client of one listening app. */
export class SocketClient {
  constructor(readonly base: string) {}

  async send(method: string, path: string, options: SendOptions = {}): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
    if (options.session) headers.cookie = `session=${options.session}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = options.contentType ?? 'application/json';
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    }
    const res = await fetch(new URL(path, this.base), { method, headers, body });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    return { status: res.status, body: parsed, text };
  }

  get(path: string, bearer?: string): Promise<Answer> {
    return this.send('GET', path, { bearer });
  }

  /** PUT /api/registry with the org's service token; `query` without `?`. */
  putRegistry(org: TeamOrg, document: unknown, query = ''): Promise<Answer> {
    return this.send('PUT', `/api/registry${query ? `?${query}` : ''}`, { bearer: org.token, body: document });
  }

  /** PUT /api/registry that must answer 200; its `data`. */
  async apply(org: TeamOrg, document: unknown, query = '') {
    const res = await this.putRegistry(org, document, query);
    expect(res.status, res.text).toBe(200);
    return res.body.data;
  }

  /** POST /api/validations with one result per key (`ran_at` now unless given), which must be recorded. */
  async validate(org: TeamOrg, results: Record<string, 'passed' | 'failed'>, ranAt = new Date()): Promise<void> {
    const body = {
      results: Object.entries(results).map(([metric_key, status]) => ({
        metric_key,
        status,
        ran_at: ranAt.toISOString(),
        source: 'dbt test',
      })),
    };
    const res = await this.send('POST', '/api/validations', { bearer: org.token, body });
    expect(res.status, res.text).toBe(200);
  }

  /** The contract route's `trust` of a metric, read with the org's key. */
  async contractTrust(org: TeamOrg, id: string) {
    const res = await this.get(`/api/v1/metrics/${id}/contract`, org.key);
    expect(res.status, res.text).toBe(200);
    return res.body.data.trust;
  }

  /** POST /graphql with the org's key; its `data` (no errors expected). */
  async graphql(org: TeamOrg, query: string, variables: Record<string, unknown> = {}) {
    const res = await this.send('POST', '/graphql', { bearer: org.key, body: { query, variables } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.errors, res.text).toBeUndefined();
    return res.body.data;
  }

  /** The org's change events after `cursor` (all pages), and the cursor after them. */
  async changesAfter(org: TeamOrg, cursor: string | null) {
    // biome-ignore lint/suspicious/noExplicitAny: CloudEvents as JSON
    const events: any[] = [];
    let after = cursor;
    for (;;) {
      const query = new URLSearchParams({ limit: '500', ...(after ? { after } : {}) });
      const res = await this.get(`/api/v1/changes?${query}`, org.key);
      expect(res.status, res.text).toBe(200);
      events.push(...res.body.data);
      after = res.body.next_cursor;
      if (res.body.data.length < 500) return { events, cursor: after };
    }
  }

  /** An MCP client connected with the org's key. */
  async mcp(org: TeamOrg): Promise<Client> {
    const client = new Client({ name: 'scenario-agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', this.base), {
        requestInit: { headers: { authorization: `Bearer ${org.key}` } },
      }),
    );
    return client;
  }
}

/** The `structuredContent` of an MCP tool call that must succeed. */
export async function toolResult(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  // biome-ignore lint/suspicious/noExplicitAny: tool results are plain JSON
  return result.structuredContent as any;
}
