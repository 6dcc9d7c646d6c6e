/**
 * The detail and contract routes read their metric in the API key lookup's
 * own statement (src/rest/routes.ts, admitForMetric): one statement for the
 * admission and the metric with its parts. The bodies are those of the
 * route's own read (a conditional or `summary=true` request, which reads
 * the metric's state first and the metric after, and /graphql), a metric
 * of another organization stays a 404, and the order of checks is kept.
 */
import { randomUUID } from 'node:crypto';
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticateApiKey } from '../../src/auth/authenticate.js';
import { hashSecret } from '../../src/auth/secrets.js';
import { createContext } from '../../src/context.js';
import { createMetrics } from '../../src/http/metrics.js';
import { createReadCache } from '../../src/metric/read-cache.js';
import { contractEnvelope, detailEnvelope } from '../../src/rest/envelopes.js';
import { MetricContractDocument, MetricDetailDocument, runOperation } from '../../src/rest/execute.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, TEST_PUBLIC_APP_URL, TEST_SUMMARIES, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, statementCount } from './expectations.js';

const r = registry();
const acme = r.org({ fiscal_calendar_start_month: 4 });
const author = acme.user({ display_name: 'Ada Author' });
/** no relationships, but every other kind of surrounding data */
const lonely = acme.metric({
  name: 'Net Revenue',
  key: 'net_revenue',
  description: 'Gross revenue minus refunds.',
  lifecycle_status: 'APPROVED',
  tags: ['finance'],
  dimensions: [{ name: 'region', column: 'region_code' }],
});
const released = acme.version(lonely, { definition_version: '1.0.0', released_at: '2026-01-01T00:00:00Z' });
acme.approval(lonely, { version_id: released.id, comment: 'Reconciles.' });
acme.validation(lonely, { ran_at: '2026-01-02T00:00:00Z' });
acme.challenge(lonely, { status: 'open' });
acme.challenge(lonely, { status: 'resolved' });
const objection = acme.thread(lonely, { intent: 'objection', title: 'Refund timing' });
acme.message(objection, {
  author_user_id: author.id,
  body: 'Refunds net in the month issued.',
  pinned_at: '2026-03-01T00:00:00Z',
});
acme.message(objection, { body: 'Agreed.' });
acme.thread(lonely, { intent: 'proposal' });
/** with relationships to two other metrics */
const hub = acme.metric({ name: 'Margin', key: 'margin', lifecycle_status: 'RELEASED' });
const legacyMargin = acme.metric({
  name: 'Legacy Margin',
  key: 'legacy_margin',
  lifecycle_status: 'DEPRECATED',
  description: 'Margin before freight was allocated.',
});
const marginEmea = acme.metric({ name: 'Margin EMEA', key: 'margin_emea', lifecycle_status: 'CANDIDATE' });
acme.relate(hub, 'supersedes', legacyMargin);
acme.relate(hub, 'related_to', marginEmea);

const keys = {
  agent: acme.key(),
  legacy: acme.key({ scopes: ['metrics:read'] }),
  definitionOnly: acme.key({ scopes: ['definition:read'] }),
  revoked: acme.key({ revoked_at: '2026-02-01T00:00:00Z' }),
  sandbox: acme.key({ sandbox: true }),
  limited: acme.key({ rate_limit_per_minute: 2 }),
};
const globex = r.org();
const foreign = globex.metric({ name: 'Net Revenue', key: 'net_revenue' });
const globexKey = globex.key();

const detail = (id: string) => `/api/v1/metrics/${id}`;
const contract = (id: string) => `/api/v1/metrics/${id}/contract`;

const NOT_FOUND = { error: 'Metric not found' };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), serverTiming: true });
});
afterAll(() => t?.close());

const get = (url: string, secret = keys.agent.secret, headers: Record<string, string> = {}) =>
  t.get(url, secret, headers);

/**
 * The route's operation run in process with a context of its own: the
 * metric read by its resolver (loadMetricWithParts), nothing read ahead.
 */
async function ownRead<R, V extends Record<string, unknown>>(
  document: TypedDocumentNode<R, V>,
  variables: V,
): Promise<NonNullable<R>> {
  const admitted = await authenticateApiKey(t.database.sql, hashSecret(keys.agent.secret), undefined, 'metrics:read');
  if (!admitted.ok) throw new Error('the key is not admitted');
  const context = createContext(
    { prisma: t.database.prisma, sql: t.database.sql, reads: createReadCache() },
    admitted.principal,
    { publicAppUrl: TEST_PUBLIC_APP_URL, summaries: TEST_SUMMARIES, trust: { staleValidationDays: 30 } },
    createMetrics(),
  );
  const result = await runOperation(document, variables, context);
  expect(result.errors).toEqual([]);
  expect(result.data).not.toBeNull();
  return result.data as NonNullable<R>;
}

/** /graphql (at most 20 aliases: a selection of the fields, by their GraphQL names). */
async function graphqlMetric(id: string) {
  const res = await t.inject({
    method: 'POST',
    url: '/graphql',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: `Bearer ${keys.agent.secret}`,
    },
    payload: {
      query: `query ($id: ID!) {
        metric(id: $id) {
          id name description lifecycleStatus definitionVersion tags dimensions createdAt updatedAt
          challengesCount openChallengesCount discussionThreadCount discussionMessageCount
          agentContextNotes { messageId threadId body pinnedAt }
          relationships { kind targetMetricId target { key name lifecycleStatus } }
        }
      }`,
      variables: { id },
    },
  });
  const body = res.json();
  expect(res.statusCode, JSON.stringify(body)).toBe(200);
  expect(body.errors).toBeUndefined();
  expect(body.data.metric).not.toBeNull();
  return body.data.metric;
}

describe('one statement for the admission and the metric', () => {
  it('detail of a metric without relationships: 1 statement', async () => {
    const res = await get(detail(lonely.id));
    expect(expectOk(res).data.metric.id).toBe(lonely.id);
    expect(statementCount(res)).toBe(1);
  });

  it('contract of a metric without relationships: 1 statement', async () => {
    const res = await get(contract(lonely.id));
    const body = expectOk(res);
    expect(body.data.metric_id).toBe(lonely.id);
    // the parts are in that one statement
    expect(body.data.open_challenges_count).toBe(1);
    expect(body.data.challenges_count).toBe(2);
    expect(body.data.discussion_thread_count).toBe(2);
    expect(body.data.agent_context_notes).toHaveLength(1);
    expect(statementCount(res)).toBe(1);
  });

  it('detail of a metric with relationships: 1 (the relationships carry what the detail shows of their targets)', async () => {
    const res = await get(detail(hub.id));
    const body = expectOk(res);
    expect(body.data.relationships).toHaveLength(2);
    expect(body.data.relationships.map((rel: { target: { key: string } }) => rel.target.key).sort()).toEqual([
      'legacy_margin',
      'margin_emea',
    ]);
    expect(statementCount(res)).toBe(1);
  });

  it('a target field the relationship does not carry is read for it (/graphql)', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.agent.secret}` },
      payload: {
        query: 'query ($id: ID!) { metric(id: $id) { relationships { kind target { key description } } } }',
        variables: { id: hub.id },
      },
    });
    const body = res.json();
    expect(body.errors).toBeUndefined();
    // In the order of the relationship kinds (the schema's enum), then the target's id.
    expect(body.data.metric.relationships).toEqual([
      { kind: 'supersedes', target: { key: 'legacy_margin', description: 'Margin before freight was allocated.' } },
      { kind: 'related_to', target: { key: 'margin_emea', description: marginEmea.description ?? '' } },
    ]);
  });

  it('an id in capitals is the same metric, with the same body, in 1 statement', async () => {
    // The parts are primed under the metric's stored id, which their fields load by.
    for (const url of [detail, contract]) {
      const plain = expectOk(await get(url(lonely.id)));
      const res = await get(url(lonely.id.toUpperCase()));
      expect(expectOk(res)).toEqual(plain);
      expect(statementCount(res)).toBe(1);
    }
  });

  it('a sandbox key with X-Service-Env: sandbox is served the same, in 1 statement', async () => {
    const plain = expectOk(await get(detail(lonely.id)));
    const res = await get(detail(lonely.id), keys.sandbox.secret, { 'x-service-env': 'sandbox' });
    expect(expectOk(res)).toEqual(plain);
    expect(statementCount(res)).toBe(1);
  });

  it('a legacy metrics:read key reaches the contract, in 1 statement', async () => {
    const plain = expectOk(await get(contract(lonely.id)));
    const res = await get(contract(lonely.id), keys.legacy.secret);
    expect(expectOk(res)).toEqual(plain);
    expect(statementCount(res)).toBe(1);
  });
});

describe('the same bodies as the route’s own read', () => {
  it.each([
    ['detail', detail],
    ['contract', contract],
  ])('%s: a second identical request gets the same body and ETag', async (_name, url) => {
    for (const metric of [lonely, hub]) {
      const first = await get(url(metric.id));
      const second = await get(url(metric.id));
      expect(expectOk(second)).toEqual(expectOk(first));
      expect(second.headers.etag).toBe(first.headers.etag);
    }
  });

  it.each([
    ['detail', detail],
    ['contract', contract],
  ])('%s: a conditional request (If-None-Match that does not match) gets 200 and the same body', async (_name, url) => {
    for (const metric of [lonely, hub]) {
      const plain = await get(url(metric.id));
      const conditional = await get(url(metric.id), keys.agent.secret, { 'if-none-match': '"no-such-tag"' });
      expect(expectOk(conditional)).toEqual(expectOk(plain));
      expect(conditional.headers.etag).toBe(plain.headers.etag);
      // It reads the metric's state first, then the body: not read with the key.
      expect(statementCount(conditional)).toBeGreaterThan(statementCount(plain));
    }
  });

  it('a conditional request with the tag of the read-ahead 200 gets its 304', async () => {
    const plain = await get(detail(lonely.id));
    const tag = String(plain.headers.etag);
    const again = await get(detail(lonely.id), keys.agent.secret, { 'if-none-match': tag });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    const plainContract = await get(contract(lonely.id));
    const contractTag = String(plainContract.headers.etag);
    expect((await get(contract(lonely.id), keys.agent.secret, { 'if-none-match': contractTag })).statusCode).toBe(304);
  });

  it('contract?summary=true gets 200 and the same contract, with the summary besides', async () => {
    for (const metric of [lonely, hub]) {
      const plain = expectOk(await get(contract(metric.id)));
      const summary = await get(`${contract(metric.id)}?summary=true`);
      const body = expectOk(summary);
      expect(body.data).toHaveProperty('discussion_summary');
      expect(body.data).toHaveProperty('discussion_summary_meta');
      const { discussion_summary: _text, discussion_summary_meta: _meta, ...rest } = body.data;
      expect({ ...body, data: rest }).toEqual(plain);
      expect(statementCount(summary)).toBeGreaterThan(1);
    }
  });

  it('detail: the body equals the operation run with a context of its own (nothing read ahead)', async () => {
    for (const metric of [lonely, hub]) {
      const rest = expectOk(await get(detail(metric.id)));
      const own = await ownRead(MetricDetailDocument, { id: metric.id });
      expect(own.metric).not.toBeNull();
      // JSON as the route sends it (dates as ISO strings)
      expect(rest).toEqual(JSON.parse(JSON.stringify(detailEnvelope(own.metric as NonNullable<typeof own.metric>))));
    }
  });

  it('contract: the body equals the operation run with a context of its own (nothing read ahead)', async () => {
    for (const metric of [lonely, hub]) {
      const rest = expectOk(await get(contract(metric.id)));
      const own = await ownRead(MetricContractDocument, { id: metric.id, summary: false });
      expect(own.metric).not.toBeNull();
      const envelope = contractEnvelope(own.metric as NonNullable<typeof own.metric>);
      expect(rest).toEqual(JSON.parse(JSON.stringify(envelope.body)));
    }
  });

  it('detail and contract agree with /graphql on the metric and its parts', async () => {
    for (const metric of [lonely, hub]) {
      const gql = await graphqlMetric(metric.id);
      const { data } = expectOk(await get(detail(metric.id)));
      expect(data.metric).toMatchObject({
        id: gql.id,
        name: gql.name,
        description: gql.description,
        lifecycle_status: gql.lifecycleStatus,
        definition_version: gql.definitionVersion,
        tags: gql.tags,
        dimensions: gql.dimensions,
        created_at: gql.createdAt,
        updated_at: gql.updatedAt,
      });
      expect(data.relationships).toEqual(
        gql.relationships.map((rel: { kind: string; targetMetricId: string; target: Record<string, string> }) => ({
          kind: rel.kind,
          target_metric_id: rel.targetMetricId,
          target: { key: rel.target.key, name: rel.target.name, lifecycle_status: rel.target.lifecycleStatus },
        })),
      );
      const c = expectOk(await get(contract(metric.id))).data;
      expect(c).toMatchObject({
        metric_id: gql.id,
        name: gql.name,
        lifecycle_status: gql.lifecycleStatus,
        challenges_count: gql.challengesCount,
        open_challenges_count: gql.openChallengesCount,
        discussion_thread_count: gql.discussionThreadCount,
        discussion_message_count: gql.discussionMessageCount,
      });
      expect(
        c.agent_context_notes.map((n: Record<string, unknown>) => [n.message_id, n.thread_id, n.body, n.pinned_at]),
      ).toEqual(
        gql.agentContextNotes.map((n: Record<string, unknown>) => [n.messageId, n.threadId, n.body, n.pinnedAt]),
      );
    }
  });
});

describe('the key’s organization only', () => {
  it.each([
    ['detail', detail],
    ['contract', contract],
  ])('%s of another organization’s metric: 404, in 1 statement', async (_name, url) => {
    const res = await get(url(foreign.id));
    expectError(res, 404, NOT_FOUND);
    // The read with the key found nothing: that stands, the metric is not read again.
    expect(statementCount(res)).toBe(1);
    // Its own organization's key is served.
    expect(expectOk(await get(url(foreign.id), globexKey.secret)).data).toBeTruthy();
    // And that key gets a 404 for ours.
    expectError(await get(url(lonely.id), globexKey.secret), 404, NOT_FOUND);
  });

  it.each([
    ['detail', detail],
    ['contract', contract],
  ])('%s of no such metric: 404', async (_name, url) => {
    expectError(await get(url(randomUUID())), 404, NOT_FOUND);
  });

  it('a conditional request for another organization’s metric is a 404 too', async () => {
    expectError(await get(detail(foreign.id), keys.agent.secret, { 'if-none-match': '"x"' }), 404, NOT_FOUND);
    expectError(await get(`${contract(foreign.id)}?summary=true`), 404, NOT_FOUND);
  });
});

describe('order of checks', () => {
  it('a revoked key with an id that is no UUID: 401 revoked, not 400', async () => {
    for (const url of [detail('not-a-uuid'), contract('not-a-uuid')]) {
      expectError(await get(url, keys.revoked.secret), 401, { error: 'API key has been revoked' });
    }
    expectError(await get(detail(lonely.id), keys.revoked.secret), 401, { error: 'API key has been revoked' });
  });

  it('an admitted key with an id that is no UUID: 400', async () => {
    expectError(await get(detail('not-a-uuid')), 400, { error: 'Invalid metric ID format' });
    expectError(await get(contract('not-a-uuid')), 400, { error: 'Invalid metric ID format' });
  });

  it('a sandbox key without X-Service-Env: 403, whatever the id', async () => {
    const sandboxRequired = {
      error: {
        code: 'sandbox_key_requires_sandbox',
        message: 'This API key is a sandbox key and can only be used with the header X-Service-Env: sandbox',
      },
    };
    expectError(await get(detail(lonely.id), keys.sandbox.secret), 403, sandboxRequired);
    expectError(await get(contract('not-a-uuid'), keys.sandbox.secret), 403, sandboxRequired);
  });

  it('a key with rate_limit_per_minute 2: 200, 200, then 429 on the detail', async () => {
    const statuses: number[] = [];
    const bodies: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get(detail(lonely.id), keys.limited.secret);
      statuses.push(res.statusCode);
      bodies.push(res.json());
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(bodies[1]).toEqual(bodies[0]);
    expect(bodies[2]).toEqual({ error: 'Rate limit exceeded' });
    // Over its limit, a non-UUID id is still the 429, not the 400.
    expectError(await get(detail('not-a-uuid'), keys.limited.secret), 429, { error: 'Rate limit exceeded' });
  });

  it('a key whose scopes do not reach the contract: 403 there, served on the detail', async () => {
    expectError(await get(contract(lonely.id), keys.definitionOnly.secret), 403, { error: 'Insufficient scope' });
    expectError(await get(contract('not-a-uuid'), keys.definitionOnly.secret), 403, { error: 'Insufficient scope' });
    const res = await get(detail(lonely.id), keys.definitionOnly.secret);
    expect(expectOk(res).data.metric.id).toBe(lonely.id);
    expect(statementCount(res)).toBe(1);
  });
});
