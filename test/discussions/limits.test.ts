/**
 * The discussion routes under bad and hostile input (docs/discussions.md,
 * "Limits"): every refusal a 400 naming its field (or 413, 415), the same on
 * GraphQL, and nothing written; the write budget per member and per token,
 * on one instance and shared through Redis by two; concurrent writes that
 * lose nothing; and every answer, success or refusal, as the OpenAPI
 * document describes it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DISCUSSION_BODY_LIMIT,
  MAX_BODY_CHARACTERS,
  MAX_REASON_CHARACTERS,
  MAX_TITLE_CHARACTERS,
} from '../../src/discussions/limits.js';
import { errors } from '../../src/errors.js';
import { operationCost } from '../../src/graphql-cost.js';
import { createKeyRateLimiter } from '../../src/limits/key-rate-limiter.js';
import { openApiDocument } from '../../src/openapi/document.js';
import { schema } from '../../src/schema/index.js';
import { buildTestInstance, silentLogger, startTestApp, type TestApp } from '../helpers/app.js';
import { lacks, REDIS } from '../helpers/needs.js';
import { createConformance } from '../openapi/conformance.js';
import { type As, client, contract, type DiscussionOrg, discussionOrg, feed } from './support.js';

let t: TestApp;
let base: string;
let c: ReturnType<typeof client>;
let org: DiscussionOrg;
let orders: string;
beforeAll(async () => {
  t = await startTestApp();
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  c = client(base);
  org = await discussionOrg(t, 'limits');
  orders = org.metrics.orders as string;
});
afterAll(() => t?.close());

const { expectConforms } = createConformance(openApiDocument());

/** The document's path template of a request path. */
function template(path: string): string {
  return path
    .split('?')[0]
    ?.replace(/\/(metrics|threads|messages|challenges)\/[^/]+/, (_all, kind: string) => `/${kind}/{id}`) as string;
}

/** A REST call whose answer must conform to the OpenAPI document. */
async function call(method: string, path: string, as: As, body?: unknown) {
  const res = await c.rest(method, path, as, body);
  const headers = Object.fromEntries(res.headers.entries());
  expectConforms(method, template(path), { statusCode: res.status, headers, body: res.text });
  return res;
}

const member = () => ({ session: org.member });

describe('bad input', () => {
  it('is 400 naming the field, on REST and GraphQL alike, and writes nothing', async () => {
    const before = (await feed(t, org)).length;
    const long = (n: number) => 'x'.repeat(n);
    const thread = (fields: Record<string, unknown>) => ({
      intent: 'objection',
      title: 'A title',
      body: 'A body',
      ...fields,
    });
    const cases: [Record<string, unknown>, unknown][] = [
      [thread({ body: long(MAX_BODY_CHARACTERS + 1) }), errors.inputTooLong('body', MAX_BODY_CHARACTERS).body],
      [thread({ title: long(MAX_TITLE_CHARACTERS + 1) }), errors.inputTooLong('title', MAX_TITLE_CHARACTERS).body],
      // Counted in characters (code points), not UTF-16 units: 200 emoji are a title.
      [
        thread({ title: '😀'.repeat(MAX_TITLE_CHARACTERS + 1) }),
        errors.inputTooLong('title', MAX_TITLE_CHARACTERS).body,
      ],
      [thread({ title: '   ' }), { error: 'title must not be empty' }],
      [thread({ body: ' \n\t ' }), { error: 'body must not be empty' }],
      [thread({ title: 'two\nlines' }), { error: 'title must be one line' }],
      [thread({ body: 'bell \u0007' }), errors.invalidCharacters('body').body],
      [thread({ title: 'escape \u001b[31m' }), errors.invalidCharacters('title').body],
      [thread({ body: 'half \ud800 a pair' }), errors.invalidCharacters('body').body],
      [
        thread({ intent: 'rant' }),
        { error: 'intent must be one of objection, proposal, clarification, decision_rationale, question' },
      ],
      [thread({ pinned: true }), { error: 'unknown member(s): pinned' }],
      [thread({ body: 42 }), { error: 'body: Invalid input: expected string, received number' }],
    ];
    for (const [body, error] of cases) {
      const res = await call('POST', `/api/metrics/${orders}/threads`, member(), body);
      expect([res.status, res.json], JSON.stringify(body).slice(0, 80)).toEqual([400, error]);
    }
    // A maximal body and title are accepted, emoji and all.
    const maximal = await call(
      'POST',
      `/api/metrics/${orders}/threads`,
      member(),
      thread({ intent: 'question', title: '😀'.repeat(MAX_TITLE_CHARACTERS), body: '😀'.repeat(MAX_BODY_CHARACTERS) }),
    );
    expect(maximal.status).toBe(201);
    const threadId = maximal.json.data.id as string;
    const messageId = maximal.json.data.messages.items[0].id as string;
    const after = (await feed(t, org)).length;
    expect(after).toBe(before + 1);

    const more: [string, string, unknown, unknown][] = [
      [
        'POST',
        `/api/threads/${threadId}/messages`,
        { body: long(MAX_BODY_CHARACTERS + 1) },
        errors.inputTooLong('body', MAX_BODY_CHARACTERS).body,
      ],
      ['PATCH', `/api/messages/${messageId}`, { body: '' }, { error: 'body must not be empty' }],
      [
        'POST',
        `/api/metrics/${orders}/challenges`,
        { reason: long(MAX_REASON_CHARACTERS + 1) },
        errors.inputTooLong('reason', MAX_REASON_CHARACTERS).body,
      ],
      ['POST', `/api/threads/${threadId}/resolve`, { why: 'x' }, { error: 'unknown member(s): why' }],
      ['POST', `/api/metrics/not-a-uuid/threads`, thread({}), errors.invalidMetricId.body],
      ['POST', `/api/threads/not-a-uuid/messages`, { body: 'x' }, { error: 'Invalid thread ID format' }],
      ['PATCH', `/api/messages/${messageId}?force=1`, { body: 'x' }, errors.unknownQueryParameter('force', []).body],
    ];
    for (const [method, path, body, error] of more) {
      const res = await call(method, path, member(), body);
      expect([res.status, res.json], `${method} ${path}`).toEqual([400, error]);
    }
    const list = await call('GET', `/api/metrics/${orders}/threads?limit=5`, member());
    expect([list.status, list.json]).toEqual([400, errors.unknownQueryParameter('limit', ['page', 'pageSize']).body]);
    const decision = await call(
      'POST',
      `/api/challenges/${randomUUID()}/decision`,
      { session: org.admin },
      { decision: 'maybe', reason: 'x' },
    );
    expect([decision.status, decision.json]).toEqual([400, { error: 'decision must be one of accepted, rejected' }]);

    // Not JSON, not UTF-8, too large: refused before any write.
    const text = await fetch(new URL(`/api/metrics/${orders}/threads`, base), {
      method: 'POST',
      headers: { cookie: `session=${org.member}`, 'content-type': 'text/plain' },
      body: 'objection: refunds',
    });
    expect([text.status, await text.json()]).toEqual([415, errors.jsonContentTypeRequired.body]);
    const latin1 = await fetch(new URL(`/api/metrics/${orders}/threads`, base), {
      method: 'POST',
      headers: { cookie: `session=${org.member}`, 'content-type': 'application/json' },
      body: Buffer.concat([
        Buffer.from('{"intent":"question","title":"caf'),
        Buffer.from([0xe9]),
        Buffer.from('","body":"x"}'),
      ]),
    });
    expect([latin1.status, await latin1.json()]).toEqual([400, errors.bodyNotUtf8.body]);
    const broken = await call('POST', `/api/metrics/${orders}/threads`, member(), '{"intent": ');
    expect(broken.status).toBe(400);
    const huge = await call(
      'POST',
      `/api/metrics/${orders}/threads`,
      member(),
      thread({ body: long(DISCUSSION_BODY_LIMIT) }),
    );
    expect([huge.status, huge.json]).toEqual([413, errors.bodyTooLarge.body]);

    // GraphQL answers the same messages, whatever the size of the value.
    const gqlCases: [Record<string, string>, string][] = [
      [{ body: long(200_000) }, `body must be at most ${MAX_BODY_CHARACTERS} characters`],
      [{ title: long(MAX_TITLE_CHARACTERS + 1) }, `title must be at most ${MAX_TITLE_CHARACTERS} characters`],
      [{ body: 'nul \u0000' }, String(errors.invalidCharacters('body').body.error)],
      [{ title: '' }, 'title must not be empty'],
    ];
    for (const [variables, message] of gqlCases) {
      const res = await c.gql(
        member(),
        'mutation($m: ID!, $title: String!, $body: String!) { openThread(metricId: $m, intent: question, title: $title, body: $body) { id } }',
        { m: orders, title: 'A title', body: 'A body', ...variables },
      );
      expect(res.errors?.[0], message).toMatchObject({ message, extensions: { code: 'BAD_USER_INPUT' } });
    }
    expect((await feed(t, org)).length).toBe(after);
    expect((await contract(t, org, orders)).data).toMatchObject({ discussion_thread_count: 1, challenges_count: 0 });
  });
});

describe('answers conform to the OpenAPI document', () => {
  it('every route, success and refusal', async () => {
    const owner = { session: org.ownerSession };
    const made = await call('POST', `/api/metrics/${orders}/threads`, member(), {
      intent: 'proposal',
      title: 'Conform',
      body: 'Body.',
    });
    expect(made.status).toBe(201);
    const thread = made.json.data.id as string;
    const reply = await call('POST', `/api/threads/${thread}/messages`, { bearer: org.bot }, { body: 'From a bot.' });
    expect(reply.status).toBe(201);
    const message = reply.json.data.id as string;
    const challenge = (await call('POST', `/api/metrics/${orders}/challenges`, member(), { reason: 'Why?' })).json.data
      .id as string;
    const unknown = randomUUID();
    const calls: [string, string, As, unknown, number][] = [
      ['GET', `/api/metrics/${orders}/threads?page=1&pageSize=5`, { session: org.viewer }, undefined, 200],
      ['GET', `/api/threads/${thread}?pageSize=1`, { bearer: org.bot }, undefined, 200],
      ['PATCH', `/api/messages/${message}`, { bearer: org.bot }, { body: 'Edited by the bot.' }, 200],
      ['POST', `/api/messages/${message}/pin`, owner, {}, 200],
      ['DELETE', `/api/messages/${message}/pin`, owner, undefined, 200],
      ['POST', `/api/threads/${thread}/resolve`, member(), {}, 200],
      ['POST', `/api/threads/${thread}/reopen`, member(), {}, 200],
      ['GET', `/api/metrics/${orders}/challenges`, member(), undefined, 200],
      ['POST', `/api/challenges/${challenge}/decision`, owner, { decision: 'accepted', reason: 'Fair.' }, 200],
      ['POST', `/api/challenges/${challenge}/decision`, owner, { decision: 'accepted', reason: 'Again.' }, 409],
      ['DELETE', `/api/messages/${message}`, { bearer: org.bot }, undefined, 200],
      ['PATCH', `/api/messages/${message}`, owner, { body: 'x' }, 409],
      ['POST', `/api/messages/${message}/pin`, owner, {}, 409],
      ['POST', `/api/messages/${message}/pin`, member(), {}, 403],
      ['POST', `/api/threads/${thread}/messages`, { session: org.viewer }, { body: 'x' }, 403],
      ['POST', `/api/threads/${thread}/messages`, { bearer: org.key }, { body: 'x' }, 403],
      ['GET', `/api/metrics/${orders}/threads`, { bearer: org.key }, undefined, 403],
      ['POST', `/api/threads/${thread}/messages`, { bearer: org.token }, { body: 'x' }, 403],
      ['POST', `/api/threads/${unknown}/messages`, member(), { body: 'x' }, 404],
      ['GET', `/api/threads/${unknown}`, member(), undefined, 404],
      ['DELETE', `/api/messages/${unknown}`, member(), undefined, 404],
      ['GET', `/api/metrics/${unknown}/challenges`, member(), undefined, 404],
      ['POST', `/api/threads/${thread}/messages`, { session: 'not-a-session' }, { body: 'x' }, 401],
      ['POST', `/api/threads/${thread}/messages`, { bearer: `cls_${'0'.repeat(40)}` }, { body: 'x' }, 401],
    ];
    for (const [method, path, as, body, status] of calls) {
      const res = await call(method, path, as, body);
      expect(res.status, `${method} ${path}: ${res.text}`).toBe(status);
    }
  });
});

describe('the write budget', () => {
  const OPEN = `mutation($m: ID!) { a: openThread(metricId: $m, intent: question, title: "a", body: "a") { id }
    b: openThread(metricId: $m, intent: question, title: "b", body: "b") { id }
    c: openThread(metricId: $m, intent: question, title: "c", body: "c") { id } }`;

  it('DISCUSSION_WRITES_PER_MINUTE per member and per token: 429 with Retry-After, each mutation counted', async () => {
    const limited = await buildTestInstance(t.database, { discussionWritesPerMinute: 3 });
    try {
      const other = client(await limited.listen({ port: 0, host: '127.0.0.1' }));
      const small = await discussionOrg(t, 'budget');
      const metric = small.metrics.orders as string;
      const post = (as: As) =>
        other.rest('POST', `/api/metrics/${metric}/threads`, as, { intent: 'question', title: 't', body: 'b' });
      for (let i = 0; i < 3; i++) expect((await post({ session: small.member })).status).toBe(201);
      const refused = await post({ session: small.member });
      expect([refused.status, refused.json]).toEqual([429, errors.discussionWritesLimited(3, 1).body]);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Every session of the member shares the budget; another member and the bot have their own.
      expect((await other.gql({ session: small.member }, OPEN, { m: metric })).errors?.[0]).toMatchObject({
        extensions: { code: 'RATE_LIMITED' },
      });
      expect((await post({ session: small.otherMember })).status).toBe(201);
      expect((await post({ bearer: small.bot })).status).toBe(201);
      // Three mutations of one operation spend three writes: the bot's budget has two left.
      const batch = await other.gql({ bearer: small.bot }, OPEN, { m: metric });
      expect(batch.status).toBe(429);
      expect(Object.entries(batch.data ?? {}).filter(([, value]) => value !== null)).toHaveLength(2);
      expect(batch.errors).toHaveLength(1);
      // Three, one, one and two: seven threads, none past a budget.
      expect((await contract(t, small, metric)).data.discussion_thread_count).toBe(7);
    } finally {
      await limited.close();
    }
  });

  it.skipIf(lacks(REDIS))('is shared by the instances through Redis', async () => {
    const keyPrefix = `mg:test:${randomBytes(4).toString('hex')}`;
    const limiters = [0, 1].map(() =>
      createKeyRateLimiter({ redisUrl: process.env.REDIS_URL, keyPrefix, logger: silentLogger }),
    );
    const apps = await Promise.all(
      limiters.map((rateLimiter) => buildTestInstance(t.database, { rateLimiter, discussionWritesPerMinute: 3 })),
    );
    try {
      await Promise.all(limiters.map((limiter) => limiter.ready()));
      const [a, b] = await Promise.all(
        apps.map(async (app) => client(await app.listen({ port: 0, host: '127.0.0.1' }))),
      );
      const shared = await discussionOrg(t, 'shared');
      const metric = shared.metrics.orders as string;
      const post = (on: typeof a) =>
        on?.rest(
          'POST',
          `/api/metrics/${metric}/threads`,
          { session: shared.member },
          { intent: 'question', title: 't', body: 'b' },
        );
      expect((await post(a))?.status).toBe(201);
      expect((await post(b))?.status).toBe(201);
      expect((await post(a))?.status).toBe(201);
      expect((await post(b))?.status).toBe(429);
    } finally {
      await Promise.all(apps.map((app) => app.close()));
      await Promise.all(limiters.map((limiter) => limiter.close()));
    }
  });
});

describe('concurrent writes', () => {
  it('lose nothing: replies, pins and objections at once each counted once, verdicts announced once', async () => {
    const busy = await discussionOrg(t, 'busy');
    const metric = busy.metrics.revenue as string;
    const start = (await feed(t, busy)).length;
    const opened = await c.rest(
      'POST',
      `/api/metrics/${metric}/threads`,
      { session: busy.member },
      {
        intent: 'question',
        title: 'Busy',
        body: 'First.',
      },
    );
    const thread = opened.json.data.id as string;
    const authors = [busy.member, busy.otherMember, busy.admin, busy.ownerSession];
    const replies = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        c.rest(
          'POST',
          `/api/threads/${thread}/messages`,
          { session: authors[i % 4] as string },
          { body: `Reply ${i}` },
        ),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(12).fill(201));
    // Twelve pins at once: every one kept; the contract serves the newest ten.
    const pins = await Promise.all(
      replies.map((r) => c.rest('POST', `/api/messages/${r.json.data.id}/pin`, { session: busy.admin }, {})),
    );
    expect(pins.map((r) => r.status)).toEqual(Array(12).fill(200));
    const newest = pins
      .map((r) => r.json.data as { id: string; pinned_at: string })
      .sort((x, y) => y.pinned_at.localeCompare(x.pinned_at) || y.id.localeCompare(x.id))
      .slice(0, 10)
      .map((m) => m.id);
    const served = await contract(t, busy, metric);
    expect(served.data.discussion_message_count).toBe(13);
    expect(served.data.agent_context_notes.map((n: { message_id: string }) => n.message_id)).toEqual(newest);
    expect(await t.database.prisma.message.count({ where: { threadId: thread, pinnedAt: { not: null } } })).toBe(12);

    // Five objections opened at once move the verdict once; resolved at once, it comes back once.
    const objections = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        c.rest(
          'POST',
          `/api/metrics/${metric}/threads`,
          { bearer: busy.bot },
          {
            intent: 'objection',
            title: `Check ${i} failed`,
            body: 'Failed.',
          },
        ),
      ),
    );
    expect(objections.map((r) => r.status)).toEqual(Array(5).fill(201));
    expect((await contract(t, busy, metric)).data.discourse_summary.open_objections_count).toBe(5);
    await Promise.all(
      objections.map((r) => c.rest('POST', `/api/threads/${r.json.data.id}/resolve`, { bearer: busy.bot }, {})),
    );
    const events = (await feed(t, busy)).slice(start);
    const discussed = events.filter((e) => e.type === 'metric.discussion_changed').map((e) => e.data.action);
    expect(discussed.filter((a) => a === 'replied')).toHaveLength(12);
    expect(discussed.filter((a) => a === 'pinned')).toHaveLength(12);
    expect(discussed.filter((a) => a === 'thread_opened')).toHaveLength(6);
    expect(discussed.filter((a) => a === 'resolved')).toHaveLength(5);
    const verdicts = events
      .filter((e) => e.type === 'metric.trust_changed')
      .map((e) => [(e.data.from as { verdict: string }).verdict, (e.data.to as { verdict: string }).verdict]);
    expect(verdicts).toEqual([
      ['use', 'use_with_caution'],
      ['use_with_caution', 'use'],
    ]);
    expect((await contract(t, busy, metric)).data.trust.verdict).toBe('use');
  });
});

describe('GraphQL cost of reading threads', () => {
  it('one unit per 100 messages a page of threads may list', () => {
    const cost = (query: string) => operationCost(schema, parse(query), null, {});
    const id = randomUUID();
    expect(cost(`{ threads(metricId: "${id}", pageSize: 20) { items { id } } }`)).toBe(4);
    expect(cost(`{ threads(metricId: "${id}", pageSize: 500) { items { id } } }`)).toBe(4);
    expect(cost(`{ threads(metricId: "${id}") { items { id } } }`)).toBe(2);
    expect(cost(`{ threads(metricId: "${id}", pageSize: 1) { items { id } } }`)).toBe(1);
    expect(cost(`{ thread(id: "${id}") { id } challenges(metricId: "${id}") { items { id } } }`)).toBe(2);
  });
});
