/**
 * Who reads what of the change feed, on all three transports over a real
 * socket: the trust and evidence events need the contract's scope, as the
 * contract's fields do; a forged or malformed cursor is the caller's error
 * (400, BAD_USER_INPUT, a tool error), never a failure.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/admin/api-keys.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, postValidations, putRegistry, type TeamOrg } from '../registry/support.js';

let t: TestApp;
let base: string;
let org: TeamOrg;
let definitionOnly: string;

interface FeedEvent {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

beforeAll(async () => {
  t = await startTestApp();
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  org = await newTeamOrg(t.database.prisma, 'feed-access');
  // Keys are created with the Agent Contract pair; a key of definition:read alone is a legacy one.
  const key = await createApiKey(t.database.prisma, { org: org.slug, name: 'definitions', rateLimitPerMinute: 1e6 });
  await t.database.prisma.apiKey.update({ where: { id: key.id }, data: { scopes: ['definition:read'] } });
  definitionOnly = key.secret;
  const orders = docMetric('orders', { lifecycle_status: 'RELEASED' });
  expect((await putRegistry(t, doc(org.slug, [orders]), { token: org.token })).statusCode).toBe(200);
  const validated = await postValidations(
    t,
    { results: [{ metric_key: 'orders', ran_at: new Date().toISOString(), status: 'passed', source: 'ci' }] },
    { token: org.token },
  );
  expect(validated.statusCode, validated.body).toBe(200);
  const superseding = docMetric('orders_v2', {
    lifecycle_status: 'RELEASED',
    relationships: [{ kind: 'supersedes', target: 'orders' }],
  });
  expect((await putRegistry(t, doc(org.slug, [orders, superseding]), { token: org.token })).statusCode).toBe(200);
});
afterAll(() => t?.close());

function get(path: string, key: string): Promise<Response> {
  return fetch(new URL(path, base), { headers: { authorization: `Bearer ${key}` } });
}

function graphql(key: string, query: string, variables: Record<string, unknown> = {}): Promise<Response> {
  return fetch(new URL('/graphql', base), {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
}

async function mcp<T>(key: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL('/mcp', base), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

const CONTRACT_TYPES = ['metric.validated', 'metric.trust_changed'];
/** What only the contract's scope reads, wherever it appears in an event. */
const CONTRACT_MEMBERS = ['verdict', 'reasons', 'preferred_metric_id', 'ran_at'];

describe('trust and evidence events need the contract scope', () => {
  let all: FeedEvent[];
  beforeAll(async () => {
    all = (await (await get('/api/v1/changes?limit=500', org.key)).json()).data;
  });

  it('a contract key reads them; a definition:read key reads the feed without them (REST)', async () => {
    expect(all.filter((e) => CONTRACT_TYPES.includes(e.type)).length).toBeGreaterThanOrEqual(3);
    const res = await get('/api/v1/changes?limit=500', definitionOnly);
    expect(res.status).toBe(200);
    const page = await res.json();
    const expected = all.filter((e) => !CONTRACT_TYPES.includes(e.type));
    expect(page.data.map((e: FeedEvent) => e.id)).toEqual(expected.map((e) => e.id));
    for (const member of CONTRACT_MEMBERS) expect(JSON.stringify(page.data)).not.toContain(`"${member}"`);
    // The cursor is past the events left out: nothing more to read, and a long-poll would wait for new ones.
    const contractCursor = (await (await get('/api/v1/changes?limit=500', org.key)).json()).next_cursor;
    expect(page.next_cursor).toBe(contractCursor);
  });

  it('pages of a definition:read key are full and resume where they stop', async () => {
    const expected = all.filter((e) => !CONTRACT_TYPES.includes(e.type)).map((e) => e.id);
    const seen: string[] = [];
    let cursor = '';
    for (let pages = 0; pages < expected.length + 1; pages++) {
      const body = await (
        await get(`/api/v1/changes?limit=1${cursor ? `&after=${cursor}` : ''}`, definitionOnly)
      ).json();
      if (!body.data.length) break;
      seen.push(...body.data.map((e: FeedEvent) => e.id));
      cursor = body.next_cursor;
    }
    expect(seen).toEqual(expected);
  });

  it('GraphQL changes: the same events per key', async () => {
    const query = '{ changes(first: 500) { events { id type data } nextCursor } }';
    const limited = await (await graphql(definitionOnly, query)).json();
    expect(limited.errors).toBeUndefined();
    expect(limited.data.changes.events.map((e: FeedEvent) => e.type)).not.toEqual(
      expect.arrayContaining(['metric.trust_changed']),
    );
    expect(limited.data.changes.events.map((e: FeedEvent) => e.id)).toEqual(
      all.filter((e) => !CONTRACT_TYPES.includes(e.type)).map((e) => e.id),
    );
    const full = await (await graphql(org.key, query)).json();
    expect(full.data.changes.events.map((e: FeedEvent) => e.id)).toEqual(all.map((e) => e.id));
  });

  it('MCP list_changes: the same events per key', async () => {
    type Page = { events: { id: string; type: string }[] };
    const limited = await mcp(definitionOnly, (c) => c.callTool({ name: 'list_changes', arguments: { limit: 50 } }));
    expect(limited.isError).toBeFalsy();
    const ids = (limited.structuredContent as Page).events.map((e) => e.id);
    expect(ids).toEqual(all.filter((e) => !CONTRACT_TYPES.includes(e.type)).map((e) => e.id));
    expect(JSON.stringify(limited.content)).not.toContain('trust_changed');
    const full = await mcp(org.key, (c) => c.callTool({ name: 'list_changes', arguments: { limit: 50 } }));
    expect((full.structuredContent as Page).events.map((e) => e.type)).toContain('trust_changed');
  });
});

/** A cursor of the organization's feed at `position` (its layout: version, organization, position). */
function forgedCursor(orgId: string, position: bigint): string {
  const bytes = Buffer.alloc(25);
  bytes.writeUInt8(1, 0);
  Buffer.from(orgId.replaceAll('-', ''), 'hex').copy(bytes, 1);
  bytes.writeBigUInt64BE(position, 17);
  return bytes.toString('base64url');
}

describe('cursors out of range', () => {
  const positions = [2n ** 63n, 2n ** 63n - 1n, 2n ** 64n - 1n, 10n ** 12n];

  it('REST: 400 Invalid cursor', async () => {
    for (const position of positions) {
      const res = await get(`/api/v1/changes?after=${forgedCursor(org.id, position)}`, org.key);
      expect(res.status, String(position)).toBe(400);
      expect(await res.json()).toEqual({ error: 'Invalid cursor' });
    }
  });

  it('GraphQL: BAD_USER_INPUT', async () => {
    for (const position of positions) {
      const res = await graphql(org.key, 'query($after: String) { changes(after: $after) { nextCursor } }', {
        after: forgedCursor(org.id, position),
      });
      const body = await res.json();
      expect(body.errors?.map((e: { message: string; extensions: { code: string } }) => e.extensions.code)).toEqual([
        'BAD_USER_INPUT',
      ]);
      expect(body.errors[0].message).toBe('Invalid cursor');
    }
  });

  it('MCP: a tool error with the feed’s message', async () => {
    const results = await mcp(org.key, (client) =>
      Promise.all(
        positions.map((position) =>
          client.callTool({ name: 'list_changes', arguments: { after: forgedCursor(org.id, position) } }),
        ),
      ),
    );
    for (const result of results) {
      expect(result.isError).toBe(true);
      expect((result.content as { text: string }[])[0]?.text).toBe('Invalid cursor');
    }
  });

  it('metricsConnection: forged and malformed cursors are BAD_USER_INPUT', async () => {
    const forged = [
      'x',
      Buffer.from('GPC:S:not-a-uuid').toString('base64'),
      Buffer.from(`GPC:N:${2 ** 63}`).toString('base64'),
      Buffer.from('GPC:').toString('base64'),
      '%%%',
    ];
    for (const cursor of forged) {
      for (const direction of ['after', 'before']) {
        const res = await graphql(
          org.key,
          `query($c: String) { metricsConnection(first: 2, ${direction}: $c) { edges { cursor } } }`,
          { c: cursor },
        );
        expect(res.status, cursor).toBeLessThan(500);
        const body = await res.json();
        expect(body.errors?.[0]?.extensions.code, `${direction} ${cursor}`).toBe('BAD_USER_INPUT');
      }
    }
  });

  it('offset pages: the largest page numbers are empty pages or 400, never a failure', async () => {
    for (const page of ['2147483647', '2147483648', '9223372036854775808', '-1', '1e400']) {
      const res = await get(`/api/v1/metrics?page=${page}&pageSize=100`, org.key);
      expect([200, 400], page).toContain(res.status);
    }
    const res = await graphql(org.key, '{ metrics(page: 2147483647, pageSize: 100) { items { id } } }');
    const body = await res.json();
    expect(body.errors).toBeUndefined();
    expect(body.data.metrics.items).toEqual([]);
    const search = await mcp(org.key, (c) =>
      c.callTool({ name: 'search_metrics', arguments: { page: 2147483647, page_size: 25 } }),
    );
    expect(search.isError).toBeFalsy();
  });
});
