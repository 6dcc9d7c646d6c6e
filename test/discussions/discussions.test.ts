/**
 * Discussions written by members and bots, read by agents (issue 36), over
 * a real socket with real sessions, tokens and keys: an objection opened
 * through GraphQL and through REST moves the contract's discourse_summary,
 * counts and verdict (and the verdict of the metric built on it), the feed
 * and a webhook carry the events, resolving brings it all back; pins reach
 * the MCP contract and leave it; the roles, another organization, API keys
 * and bots; challenges; the ETag and the discussion summary's cache.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errors } from '../../src/errors.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/webhook-receiver.js';
import { type As, client, contract, type DiscussionOrg, discussionOrg, feed } from './support.js';

let t: TestApp;
let base: string;
let c: ReturnType<typeof client>;
beforeAll(async () => {
  t = await startTestApp({
    webhooks: { allowHttp: true, allowPrivateNetworks: true, timeoutMs: 5000 },
    webhookWorker: { pollIntervalMs: 100, leaseMs: 5000 },
  });
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  c = client(base);
});
afterAll(() => t?.close());

const THREAD_FIELDS = `id metricId intent title resolutionStatus messageCount createdAt resolvedAt
  author { kind id displayName } resolvedBy { kind id displayName }
  messages { items { id body author { kind displayName } } pagination { total } }`;
const MESSAGE_FIELDS = 'id threadId body editedAt deletedAt pinnedAt pinnedBy { kind id displayName }';

const OPEN = `mutation Open($metricId: ID!, $intent: DiscussionIntent!, $title: String!, $body: String!) {
  openThread(metricId: $metricId, intent: $intent, title: $title, body: $body) { ${THREAD_FIELDS} } }`;
const RESOLVE = `mutation Resolve($id: ID!) { resolveThread(threadId: $id) { ${THREAD_FIELDS} } }`;
const REPLY = `mutation Reply($id: ID!, $body: String!) { reply(threadId: $id, body: $body) { ${MESSAGE_FIELDS} } }`;
const PIN = `mutation Pin($id: ID!) { pinMessage(messageId: $id) { ${MESSAGE_FIELDS} } }`;
const EDIT = `mutation Edit($id: ID!, $body: String!) { editMessage(messageId: $id, body: $body) { ${MESSAGE_FIELDS} } }`;
const DECIDE = `mutation Decide($id: ID!, $decision: ChallengeDecision!, $reason: String!) {
  decideChallenge(challengeId: $id, decision: $decision, reason: $reason) {
    id status decision decisionReason decidedAt decidedBy { kind id displayName } } }`;

type Thread = { id: string; createdAt: string; messages: { items: { id: string }[] } };

/** A GraphQL mutation that must succeed: its one root field's value. */
async function mutate<T = Record<string, unknown>>(as: As, query: string, variables: Record<string, unknown>) {
  const res = await c.gql(as, query, variables);
  expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
  return Object.values(res.data ?? {})[0] as T;
}

/** A REST call that must answer `status`: its `data`. */
async function rest(status: number, method: string, path: string, as: As, body?: unknown) {
  const res = await c.rest(method, path, as, body);
  expect(res.status, `${method} ${path}: ${res.text}`).toBe(status);
  return res.json?.data;
}

/** A webhook of the organization delivering every event to a new receiver from now on. */
async function webhookOf(org: DiscussionOrg): Promise<Receiver> {
  const receiver = await startReceiver();
  const data = await rest(201, 'POST', '/api/webhooks', { session: org.ownerSession }, { url: receiver.url });
  receiver.secret = data.secret;
  return receiver;
}

const use = { verdict: 'use', reasons: [], preferred_metric_id: null, untrusted_inputs: [] };
const metricOf = (org: DiscussionOrg, key: string) => org.metrics[key] as string;

/** The events recorded since `from` events, as type and what they say. */
async function eventsSince(org: DiscussionOrg, from: number) {
  return (await feed(t, org)).slice(from);
}

describe('an objection through GraphQL', () => {
  it('moves discourse_summary, counts, verdict and ETag, with events in the feed and a webhook; resolving brings them back', async () => {
    const org = await discussionOrg(t, 'gql');
    const revenue = metricOf(org, 'revenue');
    const receiver = await webhookOf(org);
    try {
      const start = (await feed(t, org)).length;
      const before = await contract(t, org, revenue);
      expect(before.data).toMatchObject({
        discussion_thread_count: 0,
        discussion_message_count: 0,
        discourse_summary: null,
        agent_context_notes: [],
        trust: use,
      });

      const version = async () =>
        (await t.database.prisma.organization.findUniqueOrThrow({ where: { id: org.id } })).metricsVersion;
      const listVersion = await version();
      const body = 'Refunds are netted in the month **issued**, not the month of sale.\n\n- see <b>finance</b>';
      const thread = await mutate<Thread & Record<string, unknown>>({ session: org.member }, OPEN, {
        metricId: revenue,
        intent: 'objection',
        title: '  Refund timing  ',
        body,
      });
      expect(thread).toMatchObject({
        metricId: revenue,
        intent: 'objection',
        title: 'Refund timing',
        resolutionStatus: 'open',
        messageCount: 1,
        resolvedAt: null,
        resolvedBy: null,
        author: { kind: 'user', id: org.memberId, displayName: 'Mia Member' },
        // Markdown (and the HTML in it) served as written.
        messages: { items: [{ body, author: { kind: 'user', displayName: 'Mia Member' } }], pagination: { total: 1 } },
      });

      const opened = await contract(t, org, revenue);
      expect(opened.etag).not.toBe(before.etag);
      // The verdict moved: list totals by verdict are keyed anew.
      expect(await version()).toBeGreaterThan(listVersion);
      expect(opened.data).toMatchObject({
        discussion_thread_count: 1,
        discussion_message_count: 1,
        discourse_summary: { open_objections_count: 1, open_proposals_count: 0, last_activity_at: thread.createdAt },
        trust: { verdict: 'use_with_caution', reasons: ['open_objections'] },
      });

      const events = await eventsSince(org, start);
      expect(events).toHaveLength(2);
      const [discussed, trusted] = events;
      expect(discussed).toMatchObject({ type: 'metric.discussion_changed', subject: revenue });
      expect(discussed?.data).toEqual({
        id: revenue,
        key: 'revenue',
        name: 'Metric revenue',
        lifecycle_status: 'RELEASED',
        action: 'thread_opened',
        thread_id: thread.id,
        message_id: thread.messages.items[0]?.id,
        intent: 'objection',
      });
      expect(trusted).toMatchObject({
        type: 'metric.trust_changed',
        subject: revenue,
        data: {
          from: { verdict: 'use', reasons: [] },
          to: { verdict: 'use_with_caution', reasons: ['open_objections'] },
        },
      });
      // The metric built on it is not moved: an objection is the metric's own caution.
      expect((await contract(t, org, metricOf(org, 'profit'))).data.trust).toEqual(use);

      const resolved = await mutate({ session: org.member }, RESOLVE, { id: thread.id });
      expect(resolved).toMatchObject({
        resolutionStatus: 'resolved',
        resolvedBy: { kind: 'user', id: org.memberId },
        resolvedAt: expect.any(String),
      });
      const back = await contract(t, org, revenue);
      expect(back.etag).not.toBe(opened.etag);
      expect(back.data).toMatchObject({
        discussion_thread_count: 1,
        discussion_message_count: 1,
        // Still an objection thread on the metric: the summary stays, with nothing open.
        discourse_summary: { open_objections_count: 0, open_proposals_count: 0 },
        trust: use,
      });
      const all = await eventsSince(org, start);
      expect(all.slice(2).map((e) => [e.type, e.data.action ?? (e.data.to as { verdict: string }).verdict])).toEqual([
        ['metric.discussion_changed', 'resolved'],
        ['metric.trust_changed', 'use'],
      ]);
      expect(all[2]?.data).toMatchObject({ thread_id: thread.id, intent: 'objection' });

      // The webhook delivered the same events, signed, in order.
      const received = await receiver.waitFor(4);
      expect(received.every((r) => r.verified)).toBe(true);
      expect(received.map((r) => r.event)).toEqual(all);

      // Resolving again finds nothing to do: no event, no new ETag.
      await mutate({ session: org.member }, RESOLVE, { id: thread.id });
      expect((await feed(t, org)).length).toBe(start + 4);
      expect((await contract(t, org, revenue)).etag).toBe(back.etag);
    } finally {
      await receiver.close();
    }
  });
});

describe('an objection through REST', () => {
  it('moves the verdict of the metric and, under a decisive tier policy, of the metric built on it; resolving brings both back', async () => {
    const org = await discussionOrg(t, 'rest');
    await t.database.prisma.organization.update({
      where: { id: org.id },
      data: { trustPolicy: { tier_1: { open_objections: 'do_not_use' } } },
    });
    const [revenue, profit] = [metricOf(org, 'revenue'), metricOf(org, 'profit')];
    const receiver = await webhookOf(org);
    try {
      const start = (await feed(t, org)).length;
      const thread = await rest(
        201,
        'POST',
        `/api/metrics/${revenue}/threads`,
        { session: org.member },
        { intent: 'objection', title: 'Refund timing', body: 'Refunds are netted late.' },
      );
      expect(thread).toMatchObject({
        metric_id: revenue,
        intent: 'objection',
        resolution_status: 'open',
        author: { kind: 'user', id: org.memberId, display_name: 'Mia Member' },
        message_count: 1,
        messages: { items: [{ body: 'Refunds are netted late.' }], pagination: { total: 1, page: 1 } },
      });
      expect((await contract(t, org, revenue)).data).toMatchObject({
        discussion_thread_count: 1,
        discussion_message_count: 1,
        discourse_summary: { open_objections_count: 1, open_proposals_count: 0 },
        trust: { verdict: 'do_not_use', reasons: ['open_objections'] },
      });
      expect((await contract(t, org, profit)).data.trust).toMatchObject({
        verdict: 'use_with_caution',
        reasons: ['untrusted_input'],
        untrusted_inputs: [{ id: revenue, key: 'revenue', verdict: 'do_not_use', reasons: ['open_objections'] }],
      });
      // The write's event, then the verdicts it moved (in the order of their metrics' ids).
      const keysOf = (events: Awaited<ReturnType<typeof eventsSince>>) =>
        events.map((e) => [e.type, e.data.key, e.data.action ?? null]);
      const events = await eventsSince(org, start);
      expect(keysOf(events.slice(0, 1))).toEqual([['metric.discussion_changed', 'revenue', 'thread_opened']]);
      expect(keysOf(events.slice(1)).sort()).toEqual([
        ['metric.trust_changed', 'profit', null],
        ['metric.trust_changed', 'revenue', null],
      ]);

      const resolved = await rest(200, 'POST', `/api/threads/${thread.id}/resolve`, { session: org.admin }, {});
      expect(resolved).toMatchObject({ resolution_status: 'resolved', resolved_by: { kind: 'user', id: org.adminId } });
      expect((await contract(t, org, revenue)).data.trust).toEqual(use);
      expect((await contract(t, org, profit)).data.trust).toEqual(use);
      const all = await eventsSince(org, start);
      expect(keysOf(all.slice(3, 4))).toEqual([['metric.discussion_changed', 'revenue', 'resolved']]);
      expect(keysOf(all.slice(4)).sort()).toEqual([
        ['metric.trust_changed', 'profit', null],
        ['metric.trust_changed', 'revenue', null],
      ]);
      expect((await receiver.waitFor(6)).map((r) => r.event)).toEqual(all);

      // Reopened by its author: the objection is open again.
      await rest(200, 'POST', `/api/threads/${thread.id}/reopen`, { session: org.member }, {});
      expect((await contract(t, org, revenue)).data.trust.verdict).toBe('do_not_use');
      expect((await eventsSince(org, start)).slice(6).map((e) => e.data.action ?? e.type)).toEqual([
        'reopened',
        'metric.trust_changed',
        'metric.trust_changed',
      ]);
    } finally {
      await receiver.close();
    }
  });

  it('lists threads with their messages, newest first, paginated; a thread pages its messages', async () => {
    const org = await discussionOrg(t, 'list');
    const orders = metricOf(org, 'orders');
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const made = await rest(
        201,
        'POST',
        `/api/metrics/${orders}/threads`,
        { session: org.member },
        { intent: 'question', title: `Question ${n}`, body: `Body ${n}` },
      );
      ids.push(made.id);
    }
    for (const n of [1, 2, 3]) {
      await rest(201, 'POST', `/api/threads/${ids[0]}/messages`, { session: org.otherMember }, { body: `Reply ${n}` });
    }
    const page = await c.rest('GET', `/api/metrics/${orders}/threads?page=1&pageSize=2`, { session: org.viewer });
    expect(page.status, page.text).toBe(200);
    expect(page.json.data.map((thread: { title: string }) => thread.title)).toEqual(['Question 3', 'Question 2']);
    expect(page.json.pagination).toEqual({ page: 1, page_size: 2, total: 3, total_pages: 2 });
    const last = (await c.rest('GET', `/api/metrics/${orders}/threads?page=2&pageSize=2`, { session: org.viewer }))
      .json;
    expect(last.data).toHaveLength(1);
    expect(last.data[0]).toMatchObject({ title: 'Question 1', message_count: 4 });
    expect(last.data[0].messages.items.map((m: { body: string }) => m.body)).toEqual([
      'Body 1',
      'Reply 1',
      'Reply 2',
      'Reply 3',
    ]);
    const second = await rest(200, 'GET', `/api/threads/${ids[0]}?page=2&pageSize=3`, { session: org.viewer });
    expect(second.messages.items.map((m: { body: string }) => m.body)).toEqual(['Reply 3']);
    expect(second.messages.pagination).toEqual({ page: 2, page_size: 3, total: 4, total_pages: 2 });
    // The same through GraphQL, for a bot too.
    const listed = await c.gql(
      { bearer: org.bot },
      `query($m: ID!) { threads(metricId: $m, pageSize: 1) { items { title messages(pageSize: 1) { items { body } } }
        pagination { total } } }`,
      { m: orders },
    );
    expect(listed.errors).toBeUndefined();
    expect(listed.data?.threads).toEqual({
      items: [{ title: 'Question 3', messages: { items: [{ body: 'Body 3' }] } }],
      pagination: { total: 3 },
    });
  });
});

describe('bots (a service token with discussions:write)', () => {
  it('open an objection through REST and GraphQL, and resolve their own threads only', async () => {
    const org = await discussionOrg(t, 'bot');
    const orders = metricOf(org, 'orders');
    const bot = { bearer: org.bot };
    const viaRest = await rest(201, 'POST', `/api/metrics/${orders}/threads`, bot, {
      intent: 'objection',
      title: 'Check failed: orders_not_null',
      body: 'CI run 4182 failed: 12 null order ids.',
    });
    expect(viaRest.author).toEqual({ kind: 'service_token', id: org.botId, display_name: 'Checks bot' });
    expect((await contract(t, org, orders)).data.trust).toMatchObject({ verdict: 'use_with_caution' });
    const viaGraphql = await mutate<Thread & { author: unknown }>(bot, OPEN, {
      metricId: orders,
      intent: 'objection',
      title: 'Check failed again',
      body: 'CI run 4183 failed.',
    });
    expect(viaGraphql.author).toEqual({ kind: 'service_token', id: org.botId, displayName: 'Checks bot' });
    expect((await contract(t, org, orders)).data.discourse_summary.open_objections_count).toBe(2);

    // A member's thread is not the bot's to resolve; pins and decisions are for admins.
    const members = await rest(
      201,
      'POST',
      `/api/metrics/${orders}/threads`,
      { session: org.member },
      { intent: 'objection', title: 'Mine', body: 'Mine.' },
    );
    expect((await c.rest('POST', `/api/threads/${members.id}/resolve`, bot, {})).status).toBe(403);
    expect((await c.rest('POST', `/api/messages/${viaRest.messages.items[0].id}/pin`, bot, {})).status).toBe(403);

    // The check passes again: the bot closes its objections, and only the member's is left.
    await rest(200, 'POST', `/api/threads/${viaRest.id}/resolve`, bot, {});
    const resolved = await mutate(bot, RESOLVE, { id: viaGraphql.id });
    expect(resolved).toMatchObject({ resolvedBy: { kind: 'service_token', id: org.botId, displayName: 'Checks bot' } });
    expect((await contract(t, org, orders)).data.discourse_summary.open_objections_count).toBe(1);

    // A bot reads discussions, nothing else, on /graphql.
    const metrics = await c.gql(bot, '{ metrics { items { id } } }');
    expect(metrics.errors?.[0]).toMatchObject({
      message: errors.serviceTokenDiscussionsOnly.body.error,
      extensions: { code: 'FORBIDDEN' },
    });
    // A token without discussions:write is refused.
    const registryToken = await c.rest(
      'POST',
      `/api/metrics/${orders}/threads`,
      { bearer: org.token },
      { intent: 'question', title: 'x', body: 'y' },
    );
    expect(registryToken.status).toBe(403);
    expect(registryToken.json).toEqual(errors.insufficientScope.body);
    const graphqlRegistryToken = await c.gql({ bearer: org.token }, OPEN, {
      metricId: orders,
      intent: 'question',
      title: 'x',
      body: 'y',
    });
    expect(graphqlRegistryToken.status).toBe(403);
  });
});

describe('pinned notes', () => {
  it('an admin pins a message and the MCP get_metric_contract carries it as a note; unpinning removes it', async () => {
    const org = await discussionOrg(t, 'pins');
    const orders = metricOf(org, 'orders');
    const thread = await mutate<Thread>({ session: org.member }, OPEN, {
      metricId: orders,
      intent: 'clarification',
      title: 'What counts as an order',
      body: 'Do cancelled orders count?',
    });
    const answer = await mutate<{ id: string }>({ session: org.otherMember }, REPLY, {
      id: thread.id,
      body: 'Cancelled orders are **excluded**; refunds are not.',
    });
    // A member cannot pin.
    const refused = await c.gql({ session: org.member }, PIN, { id: answer.id });
    expect(refused.errors?.[0]).toMatchObject({ message: 'Forbidden', extensions: { code: 'FORBIDDEN' } });

    const pinned = await mutate<{ pinnedAt: string; pinnedBy: unknown }>({ session: org.admin }, PIN, {
      id: answer.id,
    });
    expect(pinned.pinnedBy).toEqual({ kind: 'user', id: org.adminId, displayName: 'Ada Admin' });

    const mcp = new Client({ name: 'agent', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', base), {
        requestInit: { headers: { authorization: `Bearer ${org.key}` } },
      }),
    );
    try {
      const notesOf = async () =>
        (
          (await mcp.callTool({ name: 'get_metric_contract', arguments: { id: orders } })).structuredContent as {
            agent_context_notes: unknown[];
          }
        ).agent_context_notes;
      expect(await notesOf()).toEqual([
        {
          message_id: answer.id,
          thread_id: thread.id,
          intent: 'clarification',
          author_display_name: 'Otto Other',
          body: 'Cancelled orders are **excluded**; refunds are not.',
          pinned_at: pinned.pinnedAt,
          created_at: expect.any(String),
        },
      ]);

      // A bot's message pinned is a note by the bot's name.
      const botReply = await rest(
        201,
        'POST',
        `/api/threads/${thread.id}/messages`,
        { bearer: org.bot },
        {
          body: 'Checked: 0 cancelled orders counted.',
        },
      );
      await rest(200, 'POST', `/api/messages/${botReply.id}/pin`, { session: org.ownerSession }, {});
      expect(await notesOf()).toEqual([
        expect.objectContaining({ message_id: botReply.id, author_display_name: 'Checks bot' }),
        expect.objectContaining({ message_id: answer.id }),
      ]);

      const unpinned = await rest(200, 'DELETE', `/api/messages/${answer.id}/pin`, { session: org.admin });
      expect(unpinned).toMatchObject({ pinned_at: null, pinned_by: null });
      await rest(200, 'DELETE', `/api/messages/${botReply.id}/pin`, { session: org.admin });
      expect(await notesOf()).toEqual([]);
    } finally {
      await mcp.close();
    }
    const actions = (await feed(t, org))
      .filter((e) => e.type === 'metric.discussion_changed')
      .map((e) => e.data.action);
    expect(actions).toEqual(['thread_opened', 'replied', 'pinned', 'replied', 'pinned', 'unpinned', 'unpinned']);
  });
});

describe('roles', () => {
  it('a viewer reads but every write is 403, on REST and GraphQL', async () => {
    const org = await discussionOrg(t, 'viewer');
    const orders = metricOf(org, 'orders');
    const thread = await rest(
      201,
      'POST',
      `/api/metrics/${orders}/threads`,
      { session: org.member },
      { intent: 'question', title: 'Q', body: 'B' },
    );
    const viewer = { session: org.viewer };
    const message = thread.messages.items[0].id;
    for (const [method, path, body] of [
      ['POST', `/api/metrics/${orders}/threads`, { intent: 'objection', title: 'x', body: 'y' }],
      ['POST', `/api/threads/${thread.id}/messages`, { body: 'y' }],
      ['POST', `/api/threads/${thread.id}/resolve`, {}],
      ['PATCH', `/api/messages/${message}`, { body: 'y' }],
      ['DELETE', `/api/messages/${message}`, undefined],
      ['POST', `/api/metrics/${orders}/challenges`, { reason: 'y' }],
    ] as const) {
      const res = await c.rest(method, path, viewer, body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.json).toEqual(errors.forbidden.body);
    }
    const gql = await c.gql(viewer, OPEN, { metricId: orders, intent: 'objection', title: 'x', body: 'y' });
    expect(gql.errors?.[0]).toMatchObject({ message: 'Forbidden', extensions: { code: 'FORBIDDEN' } });
    expect(gql.data).toEqual({ openThread: null });
    // Reading is a viewer's right.
    expect((await c.rest('GET', `/api/metrics/${orders}/threads`, viewer)).status).toBe(200);
    expect((await contract(t, org, orders)).data.discussion_thread_count).toBe(1);
  });

  it('authors edit and delete their own messages, admins anyone’s; a deleted message leaves the counts', async () => {
    const org = await discussionOrg(t, 'edits');
    const orders = metricOf(org, 'orders');
    const thread = await mutate<Thread>({ session: org.member }, OPEN, {
      metricId: orders,
      intent: 'proposal',
      title: 'Count returns separately',
      body: 'First draft.',
    });
    const first = thread.messages.items[0]?.id as string;
    const reply = await mutate<{ id: string }>({ session: org.otherMember }, REPLY, { id: thread.id, body: 'Agreed.' });

    const notMine = await c.gql({ session: org.member }, EDIT, { id: reply.id, body: 'Edited by someone else.' });
    expect(notMine.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await c.rest('DELETE', `/api/messages/${reply.id}`, { session: org.member })).status).toBe(403);

    const edited = await mutate<{ body: string; editedAt: string }>({ session: org.member }, EDIT, {
      id: first,
      body: 'Second draft.',
    });
    expect(edited).toMatchObject({ body: 'Second draft.', editedAt: expect.any(String) });
    expect(
      await rest(200, 'PATCH', `/api/messages/${reply.id}`, { session: org.admin }, { body: 'Agreed (edited).' }),
    ).toMatchObject({ body: 'Agreed (edited).' });

    const before = await contract(t, org, orders);
    expect(before.data.discussion_message_count).toBe(2);
    const deleted = await rest(200, 'DELETE', `/api/messages/${reply.id}`, { session: org.otherMember });
    expect(deleted).toMatchObject({ body: null, deleted_at: expect.any(String) });
    const after = await contract(t, org, orders);
    expect(after.etag).not.toBe(before.etag);
    expect(after.data).toMatchObject({ discussion_thread_count: 1, discussion_message_count: 1 });
    // Listed in its place, without its body.
    const listed = await rest(200, 'GET', `/api/threads/${thread.id}`, { session: org.viewer });
    expect(listed.messages.items.map((m: { body: string | null }) => m.body)).toEqual(['Second draft.', null]);
    expect(listed.message_count).toBe(2);

    const again = await c.rest('PATCH', `/api/messages/${reply.id}`, { session: org.admin }, { body: 'Back?' });
    expect(again.status).toBe(409);
    expect(again.json).toEqual({ error: 'A deleted message cannot be edited' });
    expect((await c.rest('POST', `/api/messages/${reply.id}/pin`, { session: org.admin }, {})).status).toBe(409);

    // The same body again writes nothing.
    const events = (await feed(t, org)).length;
    await mutate({ session: org.member }, EDIT, { id: first, body: 'Second draft.' });
    expect((await feed(t, org)).length).toBe(events);

    // Only its author or an admin resolves a thread.
    expect((await c.rest('POST', `/api/threads/${thread.id}/resolve`, { session: org.otherMember }, {})).status).toBe(
      403,
    );
    await rest(200, 'POST', `/api/threads/${thread.id}/resolve`, { session: org.ownerSession }, {});
    const actions = (await feed(t, org))
      .filter((e) => e.type === 'metric.discussion_changed')
      .map((e) => e.data.action);
    expect(actions).toEqual(['thread_opened', 'replied', 'edited', 'edited', 'deleted', 'resolved']);
  });
});

describe('another organization', () => {
  it('gets 404 for every metric, thread, message and challenge that is not its own', async () => {
    const org = await discussionOrg(t, 'mine');
    const other = await discussionOrg(t, 'theirs');
    const orders = metricOf(org, 'orders');
    const thread = await rest(
      201,
      'POST',
      `/api/metrics/${orders}/threads`,
      { session: org.member },
      { intent: 'question', title: 'Q', body: 'B' },
    );
    const message = thread.messages.items[0].id;
    const challenge = await rest(
      201,
      'POST',
      `/api/metrics/${orders}/challenges`,
      { session: org.member },
      {
        reason: 'The filter drops test orders.',
      },
    );
    for (const as of [{ session: other.admin }, { bearer: other.bot }] as As[]) {
      for (const [method, path, body, error] of [
        [
          'POST',
          `/api/metrics/${orders}/threads`,
          { intent: 'question', title: 'x', body: 'y' },
          errors.metricNotFound,
        ],
        ['GET', `/api/metrics/${orders}/threads`, undefined, errors.metricNotFound],
        ['GET', `/api/threads/${thread.id}`, undefined, errors.threadNotFound],
        ['POST', `/api/threads/${thread.id}/messages`, { body: 'y' }, errors.threadNotFound],
        ['POST', `/api/threads/${thread.id}/resolve`, {}, errors.threadNotFound],
        ['PATCH', `/api/messages/${message}`, { body: 'y' }, errors.messageNotFound],
        ['DELETE', `/api/messages/${message}`, undefined, errors.messageNotFound],
        ['POST', `/api/metrics/${orders}/challenges`, { reason: 'y' }, errors.metricNotFound],
        ['GET', `/api/metrics/${orders}/challenges`, undefined, errors.metricNotFound],
      ] as const) {
        if ('bearer' in as && method === 'GET' && path.endsWith('/challenges')) continue;
        const res = await c.rest(method, path, as, body);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.json).toEqual(error.body);
      }
    }
    // Pins and decisions: the other organization's admin finds nothing either.
    expect((await c.rest('POST', `/api/messages/${message}/pin`, { session: other.admin }, {})).json).toEqual(
      errors.messageNotFound.body,
    );
    const decided = await c.rest(
      'POST',
      `/api/challenges/${challenge.id}/decision`,
      { session: other.admin },
      { decision: 'accepted', reason: 'x' },
    );
    expect([decided.status, decided.json]).toEqual([404, errors.challengeNotFound.body]);
    const gql = await c.gql({ session: other.admin }, OPEN, {
      metricId: orders,
      intent: 'objection',
      title: 'x',
      body: 'y',
    });
    expect(gql.errors?.[0]).toMatchObject({ message: 'Metric not found', extensions: { code: 'NOT_FOUND' } });
    const read = await c.gql({ session: other.admin }, 'query($id: ID!) { thread(id: $id) { id } }', { id: thread.id });
    expect(read.data).toEqual({ thread: null });
    // Nothing was written to the first organization.
    expect((await contract(t, org, orders)).data).toMatchObject({
      discussion_thread_count: 1,
      discussion_message_count: 1,
      challenges_count: 1,
    });
  });
});

describe('API keys', () => {
  it('cannot write (a clear 403 on REST, FORBIDDEN on GraphQL) nor read threads', async () => {
    const org = await discussionOrg(t, 'keys');
    const orders = metricOf(org, 'orders');
    const key = { bearer: org.key };
    const res = await c.rest('POST', `/api/metrics/${orders}/threads`, key, {
      intent: 'objection',
      title: 'x',
      body: 'y',
    });
    expect([res.status, res.json]).toEqual([403, errors.readOnlyApiKey.body]);
    const list = await c.rest('GET', `/api/metrics/${orders}/threads`, key);
    expect([list.status, list.json]).toEqual([403, errors.threadsNotForApiKeys.body]);
    const gql = await c.gql(key, OPEN, { metricId: orders, intent: 'objection', title: 'x', body: 'y' });
    expect(gql.errors?.[0]).toMatchObject({
      message: errors.readOnlyApiKey.body.error,
      extensions: { code: 'FORBIDDEN' },
    });
    const threads = await c.gql(key, 'query($m: ID!) { threads(metricId: $m) { pagination { total } } }', {
      m: orders,
    });
    expect(threads.errors?.[0]?.message).toBe(errors.threadsNotForApiKeys.body.error);
    expect((await contract(t, org, orders)).data.discussion_thread_count).toBe(0);
  });

  it('a session from another site is refused (403) on REST and on /graphql', async () => {
    const org = await discussionOrg(t, 'csrf');
    const orders = metricOf(org, 'orders');
    const forged = { session: org.member, origin: 'https://evil.example' };
    const res = await c.rest('POST', `/api/metrics/${orders}/threads`, forged, {
      intent: 'objection',
      title: 'x',
      body: 'y',
    });
    expect([res.status, res.json]).toEqual([403, errors.forbidden.body]);
    const gql = await c.gql(forged, OPEN, { metricId: orders, intent: 'objection', title: 'x', body: 'y' });
    expect(gql.status).toBe(403);
    // A link cannot write either: mutations run on POST only.
    const query = `mutation { openThread(metricId: "${orders}", intent: objection, title: "x", body: "y") { id } }`;
    const viaGet = await fetch(new URL(`/graphql?query=${encodeURIComponent(query)}`, base), {
      headers: { cookie: `session=${org.member}`, accept: 'application/json' },
    });
    expect(viaGet.status).toBe(405);
    expect((await contract(t, org, orders)).data.discussion_thread_count).toBe(0);
  });
});

describe('challenges', () => {
  it('a member challenges, an admin decides once with a reason; the contract counts them', async () => {
    const org = await discussionOrg(t, 'challenge');
    const orders = metricOf(org, 'orders');
    const raised = await rest(
      201,
      'POST',
      `/api/metrics/${orders}/challenges`,
      { session: org.member },
      {
        reason: 'Test orders are counted.',
      },
    );
    expect(raised).toMatchObject({
      metric_id: orders,
      status: 'open',
      reason: 'Test orders are counted.',
      raised_by: { kind: 'user', id: org.memberId, display_name: 'Mia Member' },
      decision: null,
      decided_by: null,
    });
    expect((await contract(t, org, orders)).data).toMatchObject({ challenges_count: 1, open_challenges_count: 1 });
    const byMember = await c.gql({ session: org.member }, DECIDE, {
      id: raised.id,
      decision: 'accepted',
      reason: 'Mine to decide?',
    });
    expect(byMember.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    const decided = await mutate({ session: org.admin }, DECIDE, {
      id: raised.id,
      decision: 'rejected',
      reason: 'Test orders are filtered upstream.',
    });
    expect(decided).toMatchObject({
      status: 'resolved',
      decision: 'rejected',
      decisionReason: 'Test orders are filtered upstream.',
      decidedBy: { kind: 'user', id: org.adminId, displayName: 'Ada Admin' },
      decidedAt: expect.any(String),
    });
    expect((await contract(t, org, orders)).data).toMatchObject({ challenges_count: 1, open_challenges_count: 0 });
    const again = await c.rest(
      'POST',
      `/api/challenges/${raised.id}/decision`,
      { session: org.ownerSession },
      { decision: 'accepted', reason: 'Changed my mind.' },
    );
    expect([again.status, again.json]).toEqual([409, { error: 'The challenge was rejected already' }]);
    const listed = await rest(200, 'GET', `/api/metrics/${orders}/challenges`, { session: org.viewer });
    expect(listed).toEqual([expect.objectContaining({ id: raised.id, decision: 'rejected' })]);
    const events = (await feed(t, org)).filter((e) => e.type === 'metric.discussion_changed');
    expect(events.map((e) => e.data)).toEqual([
      expect.objectContaining({ action: 'challenge_opened', challenge_id: raised.id }),
      expect.objectContaining({ action: 'challenge_decided', challenge_id: raised.id, decision: 'rejected' }),
    ]);
  });
});

describe('caching', () => {
  it('the discussion summary is generated again only when what it summarizes changed', async () => {
    const org = await discussionOrg(t, 'summary');
    const orders = metricOf(org, 'orders');
    const summaryOf = async () => {
      const { data, etag } = await contract(t, org, orders, '?summary=true');
      return { ...data.discussion_summary_meta, text: data.discussion_summary as string | null, etag };
    };
    const generated = async () =>
      t.database.prisma.discussionSummary.count({ where: { orgId: org.id, metricId: orders } });

    const thread = await mutate<Thread>({ session: org.member }, OPEN, {
      metricId: orders,
      intent: 'question',
      title: 'Refunds',
      body: 'Are refunds netted?',
    });
    const first = await summaryOf();
    expect(first).toMatchObject({ cache_hit: false, text: expect.stringContaining('Refunds') });
    expect(await summaryOf()).toMatchObject({ cache_hit: true, charged: false });

    // A challenge is not summarized: the contract's ETag moves (its counts did), the summary is the cached one.
    await rest(201, 'POST', `/api/metrics/${orders}/challenges`, { session: org.member }, { reason: 'x' });
    const afterChallenge = await summaryOf();
    expect(afterChallenge).toMatchObject({ cache_hit: true, charged: false, text: first.text });
    expect(afterChallenge.etag).not.toBe(first.etag);
    expect(await generated()).toBe(1);

    // A reply, a pin, an edit, a resolution: each a new state, summarized once.
    const listVersion = (await t.database.prisma.organization.findUniqueOrThrow({ where: { id: org.id } }))
      .metricsVersion;
    const reply = await mutate<{ id: string }>({ session: org.otherMember }, REPLY, {
      id: thread.id,
      body: 'Yes, in the month issued.',
    });
    // A reply shows in the metric's own bodies only: the organization's list version stays.
    expect((await t.database.prisma.organization.findUniqueOrThrow({ where: { id: org.id } })).metricsVersion).toBe(
      listVersion,
    );
    for (const write of [
      () => Promise.resolve(),
      () => mutate({ session: org.admin }, PIN, { id: reply.id }),
      () => mutate({ session: org.otherMember }, EDIT, { id: reply.id, body: 'Yes, in the month they are issued.' }),
      () => mutate({ session: org.member }, RESOLVE, { id: thread.id }),
    ]) {
      const count = await generated();
      await write();
      expect(await summaryOf()).toMatchObject({ cache_hit: false });
      expect(await summaryOf()).toMatchObject({ cache_hit: true, charged: false });
      expect(await generated()).toBe(count + 1);
    }
    // Resolving again changes nothing: same ETag, same cached summary.
    const settled = await summaryOf();
    await mutate({ session: org.member }, RESOLVE, { id: thread.id });
    expect(await summaryOf()).toEqual(settled);
  });
});
