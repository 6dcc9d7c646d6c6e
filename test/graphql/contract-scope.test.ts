/**
 * The fields the contract route serves (agentContextNotes, trust,
 * discussionSummary) need on /graphql what the route needs:
 * `canonical-metric-api:read` (or legacy `metrics:read`). A key of
 * `definition:read` alone satisfies `metrics:read` by compatibility and reads
 * every other field, but not these; and no summary is generated or billed
 * for it. The same key gets 403 on the REST contract.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { rowCounts } from '../summaries/helpers.js';

const fixture = registry();
const org = fixture.org({ plan: 'team' });
const metric = org.metric({ name: 'Net Revenue', key: 'net_revenue' });
const thread = org.thread(metric, { intent: 'objection' });
org.message(thread, { body: 'Refunds net in the month issued.', pinned_at: '2026-03-01T00:00:00Z' });
const definitionOnly = org.key({ scopes: ['definition:read'] });
const contractPair = org.key({ scopes: ['canonical-metric-api:read', 'definition:read'] });
const legacy = org.key({ scopes: ['metrics:read'] });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build() });
});
afterAll(() => t.close());

function graphql(secret: string, query: string) {
  return t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    payload: { query, variables: { id: metric.id } },
  });
}

const CONTRACT_FIELDS = {
  agentContextNotes: 'agentContextNotes { body }',
  trust: 'trust { verdict }',
  discussionSummary: 'discussionSummary { text }',
};
/** What `metric` is then: the nullable fields are null, the non-null trust nulls its metric. */
const REFUSED_DATA: Record<string, unknown> = {
  agentContextNotes: { metric: { name: 'Net Revenue', agentContextNotes: null } },
  trust: { metric: null },
  discussionSummary: { metric: { name: 'Net Revenue', discussionSummary: null } },
};

describe('contract-only GraphQL fields', () => {
  it('a definition:read key reads the other fields, and each contract field is Insufficient scope (FORBIDDEN); nothing generated or billed', async () => {
    const plain = await graphql(definitionOnly.secret, 'query($id: ID!) { metric(id: $id) { name key } }');
    expect(plain.json()).toEqual({ data: { metric: { name: 'Net Revenue', key: 'net_revenue' } } });

    for (const [field, selection] of Object.entries(CONTRACT_FIELDS)) {
      const res = await graphql(definitionOnly.secret, `query($id: ID!) { metric(id: $id) { name ${selection} } }`);
      expect(res.statusCode, field).toBe(200);
      const body = res.json();
      expect(body.data, field).toEqual(REFUSED_DATA[field]);
      expect(body.errors, field).toHaveLength(1);
      expect(body.errors[0].message, field).toBe('Insufficient scope');
      expect(body.errors[0].extensions, field).toEqual({ code: 'FORBIDDEN' });
      expect(body.errors[0].path, field).toEqual(['metric', field]);
    }
    expect(await rowCounts(t.database, metric.id)).toEqual({ summaries: 0, meterEvents: 0 });
    // The REST contract answers the same key 403.
    const rest = await t.get(`/api/v1/metrics/${metric.id}/contract`, definitionOnly.secret);
    expect(rest.statusCode).toBe(403);
    expect(rest.json()).toEqual({ error: 'Insufficient scope' });
  });

  it('the contract pair and a legacy metrics:read key read all of them', async () => {
    for (const key of [contractPair, legacy]) {
      const res = await graphql(
        key.secret,
        `query($id: ID!) { metric(id: $id) { name ${Object.values(CONTRACT_FIELDS).join(' ')} } }`,
      );
      const body = res.json();
      expect(body.errors, key.scopes?.join()).toBeUndefined();
      expect(body.data.metric.agentContextNotes).toEqual([{ body: 'Refunds net in the month issued.' }]);
      expect(typeof body.data.metric.trust.verdict).toBe('string');
      expect(typeof body.data.metric.discussionSummary.text).toBe('string');
    }
  });
});
