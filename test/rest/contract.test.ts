/**
 * GET /api/v1/metrics/{id}/contract: every field of contract section 2.4,
 * derived from the fixture's versions, validations, challenges and threads.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MessageJson, type MetricJson, registry, type ThreadJson } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, utc } from './expectations.js';

const PUBLIC_APP_URL = 'https://governance.example.com';
const r = registry();
const org = r.org({ slug: `contract-${randomUUID().slice(0, 8)}` });
const admin = org.user({ role: 'admin', display_name: 'Ada Admin' });
const member = org.user({ role: 'member', display_name: 'Max Member' });

// A metric with everything around it.
const full = org.metric({
  name: 'Net Revenue',
  lifecycle_status: 'RELEASED',
  business_definition: { included: 'Paid orders.', excluded: 'Refunds.', time_window: 'Calendar month, UTC.' },
});
org.version(full, { definition_version: '1.0.0', status: 'released', released_at: '2025-06-01T00:00:00Z' });
const approvedVersion = org.version(full, {
  definition_version: '2.0.0',
  status: 'approved',
  released_at: '2026-02-01T10:00:00+01:00',
});
org.version(full, { definition_version: '1.5.0', status: 'released', released_at: '2026-01-01T00:00:00Z' });
org.version(full, { definition_version: '3.0.0', status: 'draft', released_at: '2026-05-01T00:00:00Z' });
org.version(full, { definition_version: '0.9.0', status: 'superseded', released_at: '2026-04-01T00:00:00Z' });
org.version(full, { definition_version: '4.0.0', status: 'draft', released_at: null });
org.validation(full, { ran_at: '2026-02-20T03:00:00Z', status: 'passed' });
org.validation(full, { ran_at: '2026-02-25T05:00:00+02:00', status: 'failed' });
org.validation(full, { ran_at: '2026-01-20T03:00:00Z', status: 'passed' });
org.challenge(full, { status: 'open' });
org.challenge(full, { status: 'open' });
org.challenge(full, { status: 'resolved' });

const rationale = org.thread(full, {
  intent: 'decision_rationale',
  resolution_status: 'resolved',
  created_at: '2026-01-10T00:00:00Z',
});
const pinnedOld = org.message(rationale, {
  author_user_id: admin.id,
  body: 'We net out refunds because finance does.',
  created_at: '2026-01-10T01:00:00Z',
  pinned_at: '2026-03-01T00:00:00Z',
  pinned_by_user_id: admin.id,
});
org.message(rationale, {
  created_at: '2026-01-11T00:00:00Z',
  deleted_at: '2026-01-12T00:00:00Z',
  pinned_at: '2026-03-09T00:00:00Z',
});
org.message(rationale, { created_at: '2026-01-12T00:00:00Z' });
const objection = org.thread(full, {
  intent: 'objection',
  resolution_status: 'open',
  created_at: '2026-02-01T00:00:00Z',
});
org.message(objection, { author_user_id: member.id, created_at: '2026-02-01T00:00:00Z' });
const pinnedNew = org.message(objection, {
  author_user_id: member.id,
  body: 'Refund timing differs by region.',
  created_at: '2026-03-02T09:00:00+02:00',
  pinned_at: '2026-03-05T12:00:00+01:00',
});
org.message(objection, { created_at: '2026-03-10T00:00:00Z', deleted_at: '2026-03-10T01:00:00Z' });
org.thread(full, { intent: 'proposal', resolution_status: 'resolved', created_at: '2026-01-15T00:00:00Z' });
org.thread(full, { intent: 'objection', resolution_status: 'resolved', created_at: '2026-01-16T00:00:00Z' });
const question = org.thread(full, {
  intent: 'question',
  resolution_status: 'open',
  created_at: '2026-01-17T00:00:00Z',
});
org.message(question, { created_at: '2026-01-17T00:00:00Z' });

// Twelve pinned notes (and a later deleted pinned one): the response keeps the ten most recently pinned.
const capped = org.metric({ name: 'Capped' });
const capThread = org.thread(capped, { intent: 'clarification', created_at: '2026-01-01T00:00:00Z' });
const pinnedMessages: MessageJson[] = [];
for (let i = 0; i < 12; i++) {
  const day = String(i + 1).padStart(2, '0');
  pinnedMessages.push(
    org.message(capThread, { created_at: `2026-01-${day}T00:00:00Z`, pinned_at: `2026-02-${day}T00:00:00Z` }),
  );
}
org.message(capThread, {
  created_at: '2026-01-20T00:00:00Z',
  pinned_at: '2026-02-28T00:00:00Z',
  deleted_at: '2026-03-01T00:00:00Z',
});

const resolvedDiscourse = org.metric({ name: 'Resolved discourse' });
org.thread(resolvedDiscourse, {
  intent: 'objection',
  resolution_status: 'resolved',
  created_at: '2026-01-02T00:00:00Z',
});
const resolvedProposal = org.thread(resolvedDiscourse, {
  intent: 'proposal',
  resolution_status: 'resolved',
  created_at: '2026-01-03T00:00:00Z',
});
org.message(resolvedProposal, { created_at: '2026-01-04T00:00:00Z' });

const openProposal = org.metric({ name: 'Open proposal' });
org.thread(openProposal, { intent: 'proposal', resolution_status: 'open', created_at: '2026-01-05T00:00:00Z' });
org.thread(openProposal, { intent: 'proposal', resolution_status: 'open', created_at: '2026-01-06T00:00:00Z' });

const calmDiscussion = org.metric({ name: 'Calm discussion' });
org.message(org.thread(calmDiscussion, { intent: 'question' }), {});
org.message(org.thread(calmDiscussion, { intent: 'clarification', resolution_status: 'resolved' }), {});

const quiet = org.metric({ name: 'Quiet', lifecycle_status: 'DEPRECATED' });
org.version(quiet, { status: 'draft', released_at: '2026-01-01T00:00:00Z' });
org.version(quiet, { status: 'superseded', released_at: '2026-01-02T00:00:00Z' });

const superseded = org.metric({ name: 'Old Revenue', key: 'old_revenue', lifecycle_status: 'DEPRECATED' });
org.relate(full, 'supersedes', superseded);
const key = org.key();

const other = r.org();
const foreign = other.metric();
other.key();

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build(), publicAppUrl: PUBLIC_APP_URL });
});
afterAll(() => t.close());

async function contract(metric: MetricJson, query = '') {
  const body = expectOk(await t.get(`/api/v1/metrics/${metric.id}/contract${query}`, key.secret));
  expect(Object.keys(body).sort()).toEqual(['data', 'meta']);
  expect(body.meta).toEqual({ apiVersion: 'v1' });
  return body.data;
}

function note(message: MessageJson, thread: ThreadJson, author: string) {
  return {
    message_id: message.id,
    thread_id: thread.id,
    intent: thread.intent,
    author_display_name: author,
    body: message.body,
    pinned_at: utc(message.pinned_at as string),
    created_at: utc(message.created_at),
  };
}

const CONTRACT_FIELDS = [
  'agent_context_notes',
  'business_definition',
  'business_definition_status',
  'canonical_url',
  'challenges_count',
  'current_approved_version',
  'dependents_count',
  'discourse_summary',
  'discussion_message_count',
  'discussion_thread_count',
  'inputs',
  'last_validated_at',
  'lifecycle_status',
  'metric_id',
  'name',
  'open_challenges_count',
  'requires_disambiguation',
  'trust',
];

describe('contract of a metric with full context', () => {
  it('has every field of section 2.4 with the derived values', async () => {
    const data = await contract(full);
    expect(Object.keys(data).sort()).toEqual(CONTRACT_FIELDS);
    expect(data).toStrictEqual({
      metric_id: full.id,
      name: 'Net Revenue',
      business_definition: {
        included: 'Paid orders.',
        excluded: 'Refunds.',
        time_window: 'Calendar month, UTC.',
        caveats: '',
        legacy_description: '',
      },
      business_definition_status: 'defined',
      current_approved_version: {
        id: approvedVersion.id,
        definition_version: '2.0.0',
        released_at: utc('2026-02-01T09:00:00Z'),
      },
      last_validated_at: utc('2026-02-25T03:00:00Z'),
      lifecycle_status: 'RELEASED',
      challenges_count: 3,
      open_challenges_count: 2,
      requires_disambiguation: {
        preferred_metric_id: null,
        candidates: [
          {
            metric_id: superseded.id,
            key: 'old_revenue',
            name: 'Old Revenue',
            lifecycle_status: 'DEPRECATED',
            relation: 'supersedes',
          },
        ],
      },
      canonical_url: `${PUBLIC_APP_URL}/${org.slug}/metrics/${full.id}`,
      discussion_thread_count: 5,
      discussion_message_count: 5,
      agent_context_notes: [note(pinnedNew, objection, 'Max Member'), note(pinnedOld, rationale, 'Ada Admin')],
      discourse_summary: {
        open_objections_count: 1,
        open_proposals_count: 0,
        last_activity_at: utc('2026-03-02T07:00:00Z'),
      },
      // The open objection, and a validation more than 30 days old by now.
      trust: {
        verdict: 'use_with_caution',
        reasons: ['open_objections', 'failed_validation', 'stale_validation'],
        preferred_metric_id: null,
        untrusted_inputs: [],
      },
      inputs: [],
      dependents_count: 0,
    });
  });

  it('discussion_summary and discussion_summary_meta are absent without summary=true', async () => {
    for (const query of ['', '?summary=false']) {
      const data = await contract(full, query);
      expect(data).not.toHaveProperty('discussion_summary');
      expect(data).not.toHaveProperty('discussion_summary_meta');
    }
  });

  it('timestamps are UTC with Z', async () => {
    const data = await contract(full);
    expect(data.current_approved_version.released_at).toMatch(/^2026-02-01T09:00:00(\.0+)?Z$/);
    expect(data.last_validated_at).toMatch(/^2026-02-25T03:00:00(\.0+)?Z$/);
    expect(data.agent_context_notes[0].pinned_at).toMatch(/^2026-03-05T11:00:00(\.0+)?Z$/);
  });
});

describe('agent_context_notes', () => {
  it('keeps the ten most recently pinned, non-deleted notes, most recent first', async () => {
    const data = await contract(capped);
    const expected = [...pinnedMessages]
      .reverse()
      .slice(0, 10)
      .map((message) => note(message, capThread, 'Olivia Owner'));
    expect(data.agent_context_notes).toStrictEqual(expected);
    for (const n of data.agent_context_notes) {
      expect(Object.keys(n).sort()).toEqual([
        'author_display_name',
        'body',
        'created_at',
        'intent',
        'message_id',
        'pinned_at',
        'thread_id',
      ]);
    }
    expect(data.discussion_thread_count).toBe(1);
    expect(data.discussion_message_count).toBe(12);
    expect(data.discourse_summary).toBeNull();
  });
});

describe('discourse_summary', () => {
  it('is present when objection or proposal threads exist, even if all are resolved', async () => {
    const data = await contract(resolvedDiscourse);
    expect(data.discourse_summary).toStrictEqual({
      open_objections_count: 0,
      open_proposals_count: 0,
      last_activity_at: utc('2026-01-04T00:00:00Z'),
    });
    expect(data.discussion_thread_count).toBe(2);
    expect(data.discussion_message_count).toBe(1);
  });

  it('counts open proposals', async () => {
    const data = await contract(openProposal);
    // No messages: the latest activity is the opening of the newer thread.
    expect(data.discourse_summary).toStrictEqual({
      open_objections_count: 0,
      open_proposals_count: 2,
      last_activity_at: utc('2026-01-06T00:00:00Z'),
    });
    expect(data.discussion_thread_count).toBe(2);
    expect(data.discussion_message_count).toBe(0);
  });

  it('is null when threads have other intents only', async () => {
    const data = await contract(calmDiscussion);
    expect(data.discourse_summary).toBeNull();
    expect(data.discussion_thread_count).toBe(2);
    expect(data.discussion_message_count).toBe(2);
    expect(data.agent_context_notes).toEqual([]);
  });
});

describe('a metric without context', () => {
  it('has zero counts, no notes, no discourse, no approved version, no validation', async () => {
    const data = await contract(quiet);
    expect(data).toStrictEqual({
      metric_id: quiet.id,
      name: 'Quiet',
      business_definition: { included: '', excluded: '', time_window: '', caveats: '', legacy_description: '' },
      // the blank members are no definition, and the contract says so
      business_definition_status: 'empty',
      current_approved_version: null,
      last_validated_at: null,
      lifecycle_status: 'DEPRECATED',
      challenges_count: 0,
      open_challenges_count: 0,
      requires_disambiguation: null,
      canonical_url: `${PUBLIC_APP_URL}/${org.slug}/metrics/${quiet.id}`,
      discussion_thread_count: 0,
      discussion_message_count: 0,
      agent_context_notes: [],
      discourse_summary: null,
      trust: { verdict: 'do_not_use', reasons: ['deprecated'], preferred_metric_id: null, untrusted_inputs: [] },
      inputs: [],
      dependents_count: 0,
    });
  });

  it('the superseded metric prefers its successor', async () => {
    const data = await contract(superseded);
    expect(data.requires_disambiguation).toStrictEqual({
      preferred_metric_id: full.id,
      candidates: [
        {
          metric_id: full.id,
          key: full.key,
          name: 'Net Revenue',
          lifecycle_status: 'RELEASED',
          relation: 'superseded_by',
        },
      ],
    });
  });
});

describe('errors', () => {
  it.each(['not-a-uuid', '42'])('%s is 400 Invalid metric ID format', async (id) => {
    expectError(await t.get(`/api/v1/metrics/${id}/contract`, key.secret), 400, { error: 'Invalid metric ID format' });
  });

  it('a random UUID and another organization’s metric are the same 404', async () => {
    const missing = await t.get(`/api/v1/metrics/${randomUUID()}/contract`, key.secret);
    const crossOrg = await t.get(`/api/v1/metrics/${foreign.id}/contract`, key.secret);
    expectError(missing, 404, { error: 'Metric not found' });
    expectError(crossOrg, 404, { error: 'Metric not found' });
    expect(crossOrg.body).toBe(missing.body);
  });
});

describe('summary=true (contract 4.3)', () => {
  it('adds discussion_summary, discussion_summary_meta and X-Discussion-Summary-Charged', async () => {
    const res = await t.get(`/api/v1/metrics/${full.id}/contract?summary=true`, key.secret);
    const data = expectOk(res).data;
    expect(data).toHaveProperty('discussion_summary');
    expect(data.discussion_summary === null || typeof data.discussion_summary === 'string').toBe(true);
    expect(data.discussion_summary_meta).toStrictEqual({
      cache_hit: expect.any(Boolean),
      charged: expect.any(Boolean),
    });
    const charged = res.headers['x-discussion-summary-charged'];
    expect(['0', '1']).toContain(charged);
    expect(data.discussion_summary_meta.charged).toBe(charged === '1');
  });
});
