/**
 * The change feed for agents and GraphQL clients: the MCP tool list_changes
 * (the SDK's own client, on a real port) and `changes(after, first)` on
 * /graphql, both equal to what GET /api/v1/changes serves.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, putRegistry, type TeamOrg } from '../registry/support.js';

let t: TestApp;
let url: URL;
let org: TeamOrg;
let rest: { data: { id: string; type: string; subject: string; data: Record<string, unknown> }[]; next_cursor: string };

beforeAll(async () => {
  t = await startTestApp();
  url = new URL('/mcp', await t.app.listen({ port: 0, host: '127.0.0.1' }));
  org = await newTeamOrg(t.database.prisma, 'agents');
  const orders = docMetric('orders', { lifecycle_status: 'RELEASED' });
  expect((await putRegistry(t, doc(org.slug, [orders]), { token: org.token })).statusCode).toBe(200);
  const metrics = [
    orders,
    docMetric('orders_v2', { lifecycle_status: 'RELEASED', relationships: [{ kind: 'supersedes', target: 'orders' }] }),
    docMetric('long_named', { name: 'N'.repeat(200), description: 'x' }),
  ];
  expect((await putRegistry(t, doc(org.slug, metrics), { token: org.token })).statusCode).toBe(200);
  expect(
    (await putRegistry(t, doc(org.slug, metrics.slice(0, 2)), { token: org.token, query: 'prune=true' })).statusCode,
  ).toBe(200);
  rest = (await t.get('/api/v1/changes', org.key)).json();
});
afterAll(() => t?.close());

async function connect(secret: string): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${secret}` } } }),
  );
  return client;
}

describe('list_changes (MCP)', () => {
  it('answers the feed flattened for an agent, page by page with next_cursor', async () => {
    const client = await connect(org.key);
    const first = await client.callTool({ name: 'list_changes', arguments: { limit: 2 } });
    expect(first.isError).toBeFalsy();
    const page = first.structuredContent as {
      events: { id: string; type: string; metric_id: string; key: string; change: Record<string, unknown> }[];
      next_cursor: string;
    };
    expect(page.events.map((e) => e.id)).toEqual(rest.data.slice(0, 2).map((e) => e.id));
    expect(page.events[0]).toMatchObject({ type: 'created', key: 'orders', metric_id: rest.data[0]?.subject });
    const rest2 = await client.callTool({ name: 'list_changes', arguments: { after: page.next_cursor, limit: 50 } });
    const more = (
      rest2.structuredContent as { events: { id: string; type: string; change: Record<string, unknown> }[] }
    ).events;
    expect(more.map((e) => e.id)).toEqual(rest.data.slice(2).map((e) => e.id));
    const superseded = more.find((e) => e.type === 'trust_changed');
    expect(superseded?.change).toMatchObject({ to: { verdict: 'do_not_use', reasons: ['superseded'] } });
    expect((rest2.content as { text: string }[])[0]?.text).toContain('trust_changed');
    await client.close();
  });

  it('a bad cursor is a tool error with the feed’s message, not a failure', async () => {
    const client = await connect(org.key);
    const result = await client.callTool({ name: 'list_changes', arguments: { after: 'not-a-cursor' } });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]?.text).toBe('Invalid cursor');
    await client.close();
  });
});

describe('changes on /graphql', () => {
  it('serves the same events and cursors as the REST route', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({
        query:
          'query($after: String) { changes(after: $after, first: 3) { events { id type subject data } nextCursor } }',
        variables: { after: null },
      }),
    });
    expect(res.statusCode, res.body).toBe(200);
    const { changes } = res.json().data;
    expect(changes.events).toEqual(
      rest.data.slice(0, 3).map(({ id, type, subject, data }) => ({ id, type, subject, data })),
    );
    const next = await t.get(`/api/v1/changes?after=${changes.nextCursor}`, org.key);
    expect(next.json().data.map((e: { id: string }) => e.id)).toEqual(rest.data.slice(3).map((e) => e.id));
  });

  it('refuses a bad first and a bad cursor as BAD_USER_INPUT', async () => {
    for (const field of ['changes(first: 0)', 'changes(first: 501)', 'changes(after: "x")']) {
      const res = await t.inject({
        method: 'POST',
        url: '/graphql',
        headers: { authorization: `Bearer ${org.key}`, 'content-type': 'application/json' },
        payload: JSON.stringify({ query: `{ ${field} { nextCursor } }` }),
      });
      const body = res.json();
      expect(body.data, field).toBeNull();
      expect(
        body.errors.map((e: { extensions: { code: string } }) => e.extensions.code),
        field,
      ).toEqual(['BAD_USER_INPUT']);
    }
  });
});
