/**
 * The catalog's discussion forms (docs/discussions.md, "In the catalog")
 * through a listening socket with real sessions: what a form writes is what
 * the API writes (the contract's discourse summary, counts, verdict and
 * notes, the change feed), roles and organizations are kept apart, refused
 * input comes back in the form with the field named, markup is shown as
 * text, and a post without the page's CSRF token or from elsewhere is 403.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrfTokenOf } from '../../src/http/pages/csrf.js';
import { client, contract, type DiscussionOrg, discussionOrg, feed } from '../discussions/support.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let base: string;
let org: DiscussionOrg;
let elsewhere: DiscussionOrg;

beforeAll(async () => {
  t = await startTestApp();
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  org = await discussionOrg(t, 'forms');
  elsewhere = await discussionOrg(t, 'forms-other');
});
afterAll(async () => {
  await t?.close();
});

interface Answer {
  status: number;
  location: string | null;
  text: string;
  headers: Headers;
}

async function get(session: string, path: string, at = base): Promise<Answer> {
  const res = await fetch(new URL(path, at), { redirect: 'manual', headers: { cookie: `session=${session}` } });
  return { status: res.status, location: res.headers.get('location'), text: await res.text(), headers: res.headers };
}

/** A form post as a browser sends it: from the app's origin, with the session's CSRF token unless told. */
async function post(
  session: string,
  path: string,
  fields: Record<string, string>,
  options: { csrf?: string | null; origin?: string; at?: string } = {},
): Promise<Answer> {
  const at = options.at ?? base;
  const csrf = options.csrf === undefined ? csrfTokenOf(session) : options.csrf;
  const res = await fetch(new URL(path, at), {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: `session=${session}`,
      origin: options.origin ?? new URL(at).origin,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ ...(csrf === null ? {} : { csrf }), ...fields }).toString(),
  });
  return { status: res.status, location: res.headers.get('location'), text: await res.text(), headers: res.headers };
}

const threadIdOf = (location: string | null) => {
  const id = location?.match(/\/threads\/([0-9a-f-]{36})/)?.[1];
  if (!id) throw new Error(`no thread in ${location}`);
  return id;
};

/** The form fields' ids that an element's aria-describedby names, and the element with role="alert". */
function alertOf(page: string): { id: string; text: string } | null {
  const found = page.match(/<p id="([^"]+)" class="error" role="alert">([^<]*)<\/p>/);
  return found ? { id: found[1] as string, text: found[2] as string } : null;
}

describe('opening an objection through the page form', () => {
  it('moves the contract and the feed as the API does; resolving through the form brings the verdict back', async () => {
    const metric = org.metrics.revenue as string;
    const before = await contract(t, org, metric);
    expect(before.data).toMatchObject({ discourse_summary: null, trust: { verdict: 'use' } });
    const start = (await feed(t, org)).length;

    const form = await get(org.member, `/${org.slug}/metrics/${metric}/threads/new`);
    expect(form.status).toBe(200);
    for (const intent of ['objection', 'proposal', 'clarification', 'decision_rationale', 'question']) {
      expect(form.text).toContain(`<option value="${intent}"`);
    }
    expect(form.text).toMatch(/<input type="text" id="title" name="title" maxlength="200"/);
    expect(form.text).toMatch(/<textarea id="body" name="body" maxlength="10000"/);
    expect(form.text).toContain('At most 10,000 characters');
    expect(form.text).toContain(`href="/${org.slug}/metrics/${metric}"`);

    const opened = await post(org.member, `/${org.slug}/metrics/${metric}/threads/new`, {
      intent: 'objection',
      title: 'Refund timing',
      body: 'Refunds are netted in the month **issued**.',
    });
    expect(opened.status).toBe(303);
    const threadId = threadIdOf(opened.location);
    expect(opened.location).toBe(`/${org.slug}/threads/${threadId}`);

    const after = await contract(t, org, metric);
    expect(after.data).toMatchObject({
      discussion_thread_count: 1,
      discussion_message_count: 1,
      discourse_summary: { open_objections_count: 1, open_proposals_count: 0 },
      trust: { verdict: 'use_with_caution', reasons: ['open_objections'] },
    });
    const events = (await feed(t, org)).slice(start);
    expect(events.map((e) => e.type)).toEqual(['metric.discussion_changed', 'metric.trust_changed']);
    expect(events[0]?.data).toMatchObject({ action: 'thread_opened', thread_id: threadId, intent: 'objection' });

    const page = await get(org.member, opened.location as string);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h1>Refund timing</h1>');
    // A browser sends its real Origin with the page's posts only if the page lets the referrer go to its own origin.
    expect(page.headers.get('referrer-policy')).toBe('same-origin');
    expect(page.text).toContain('<strong>issued</strong>');
    expect(page.text).toContain('Mia Member');
    expect(page.text).toContain('Objection');
    expect(page.text).toContain(`action="/${org.slug}/threads/${threadId}/resolve"`);

    const resolved = await post(org.member, `/${org.slug}/threads/${threadId}/resolve`, {});
    expect([resolved.status, resolved.location]).toEqual([303, `/${org.slug}/threads/${threadId}`]);
    expect((await contract(t, org, metric)).data).toMatchObject({
      discourse_summary: { open_objections_count: 0 },
      trust: { verdict: 'use', reasons: [] },
    });
    expect((await feed(t, org)).slice(start + 2).map((e) => [e.type, e.data.action ?? null])).toEqual([
      ['metric.discussion_changed', 'resolved'],
      ['metric.trust_changed', null],
    ]);
    const reopenable = await get(org.member, `/${org.slug}/threads/${threadId}`);
    expect(reopenable.text).toContain(`action="/${org.slug}/threads/${threadId}/reopen"`);
    // Another member is neither the thread's author nor an admin: no resolve or reopen form.
    const other = await get(org.otherMember, `/${org.slug}/threads/${threadId}`);
    expect(other.text).not.toContain(`/${threadId}/reopen"`);
    expect((await post(org.otherMember, `/${org.slug}/threads/${threadId}/reopen`, {})).status).toBe(403);
  });
});

describe('the thread page forms', () => {
  it('reply, edit (the form prefilled), pin and unpin as an agent context note, delete', async () => {
    const metric = org.metrics.orders as string;
    const threadId = threadIdOf(
      (
        await post(org.member, `/${org.slug}/metrics/${metric}/threads/new`, {
          intent: 'clarification',
          title: 'Cancelled orders',
          body: 'Are they counted?',
        })
      ).location,
    );
    const replied = await post(org.admin, `/${org.slug}/threads/${threadId}/reply`, { body: 'They are *excluded*.' });
    expect(replied.status).toBe(303);
    const messageId = replied.location?.split('#message-')[1] as string;
    expect(replied.location).toBe(`/${org.slug}/threads/${threadId}#message-${messageId}`);

    // The author sees an edit link; the edit page shows the body in a textarea.
    const editing = await get(org.admin, `/${org.slug}/threads/${threadId}?edit=${messageId}`);
    expect(editing.text).toContain(`action="/${org.slug}/threads/${threadId}/messages/${messageId}/edit"`);
    expect(editing.text).toMatch(/<textarea id="edit-[^"]+-body" name="body"[^>]*>They are \*excluded\*\.<\/textarea>/);
    const edited = await post(org.admin, `/${org.slug}/threads/${threadId}/messages/${messageId}/edit`, {
      body: 'They are **excluded**; refunds are not.',
    });
    expect(edited.status).toBe(303);
    // A member cannot edit the admin's message (the API's rule): 403, and no edit form for them.
    const asMember = await get(org.member, `/${org.slug}/threads/${threadId}?edit=${messageId}`);
    expect(asMember.text).not.toContain(`/messages/${messageId}/edit"`);
    expect(asMember.text).not.toContain(`/messages/${messageId}/pin"`);
    expect(
      (await post(org.member, `/${org.slug}/threads/${threadId}/messages/${messageId}/edit`, { body: 'x' })).status,
    ).toBe(403);

    expect((await post(org.member, `/${org.slug}/threads/${threadId}/messages/${messageId}/pin`, {})).status).toBe(403);
    const pinned = await post(org.admin, `/${org.slug}/threads/${threadId}/messages/${messageId}/pin`, {});
    expect(pinned.status).toBe(303);
    expect((await contract(t, org, metric)).data.agent_context_notes).toMatchObject([
      { message_id: messageId, thread_id: threadId, body: 'They are **excluded**; refunds are not.' },
    ]);
    const page = await get(org.admin, `/${org.slug}/threads/${threadId}`);
    expect(page.text).toContain('Pinned as agent context note');
    expect(page.text).toContain(`action="/${org.slug}/threads/${threadId}/messages/${messageId}/unpin"`);
    expect((await post(org.admin, `/${org.slug}/threads/${threadId}/messages/${messageId}/unpin`, {})).status).toBe(
      303,
    );
    expect((await contract(t, org, metric)).data.agent_context_notes).toEqual([]);

    expect((await post(org.admin, `/${org.slug}/threads/${threadId}/messages/${messageId}/delete`, {})).status).toBe(
      303,
    );
    const gone = await get(org.member, `/${org.slug}/threads/${threadId}`);
    expect(gone.text).toContain('<p class="muted">deleted</p>');
    expect(gone.text).not.toContain('refunds are not');
    expect(gone.text).toContain('Are they counted?');
  });
});

describe('refusals', () => {
  it('a viewer reads and gets no form; their post is 403 and writes nothing', async () => {
    const metric = org.metrics.profit as string;
    const form = await get(org.viewer, `/${org.slug}/metrics/${metric}/threads/new`);
    expect(form.status).toBe(200);
    expect(form.text).toContain('Viewers read; ask an admin for the member role.');
    expect(form.text).not.toContain(`action="/${org.slug}/metrics/${metric}/threads/new"`);
    const refused = await post(org.viewer, `/${org.slug}/metrics/${metric}/threads/new`, {
      intent: 'question',
      title: 'Can I?',
      body: 'No.',
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toContain('text/html');
    expect((await contract(t, org, metric)).data.discussion_thread_count).toBe(0);
  });

  it("another organization's member gets 404 for the metric, the thread and their forms", async () => {
    const metric = org.metrics.profit as string;
    const threadId = threadIdOf(
      (
        await post(org.member, `/${org.slug}/metrics/${metric}/threads/new`, {
          intent: 'question',
          title: 'q',
          body: 'b',
        })
      ).location,
    );
    // Their session in their own organization's path: the ids are not theirs.
    const own = elsewhere.slug;
    expect((await get(elsewhere.member, `/${own}/threads/${threadId}`)).status).toBe(404);
    expect((await get(elsewhere.member, `/${own}/metrics/${metric}/threads/new`)).status).toBe(404);
    expect((await get(elsewhere.member, `/${own}/metrics/${metric}/challenges`)).status).toBe(404);
    expect((await post(elsewhere.member, `/${own}/threads/${threadId}/reply`, { body: 'hi' })).status).toBe(404);
    // Or in this organization's path, which is not theirs.
    expect((await get(elsewhere.member, `/${org.slug}/threads/${threadId}`)).status).toBe(404);
    expect((await get(org.member, `/${org.slug}/threads/not-a-thread`)).status).toBe(404);
  });

  it('a body over the limit, an empty title or control characters: 400, the field named, the input kept, nothing written', async () => {
    const metric = org.metrics.profit as string;
    const path = `/${org.slug}/metrics/${metric}/threads/new`;
    const threads = async () => (await contract(t, org, metric)).data.discussion_thread_count as number;
    const count = await threads();
    const long = 'é'.repeat(10_001);
    const tooLong = await post(org.member, path, { intent: 'proposal', title: 'Kept <title>', body: long });
    expect(tooLong.status).toBe(400);
    expect(alertOf(tooLong.text)).toEqual({ id: 'body-error', text: 'body must be at most 10000 characters' });
    expect(tooLong.text).toMatch(
      /<textarea id="body" name="body"[^>]*aria-describedby="body-error body-hint" aria-invalid="true">/,
    );
    expect(tooLong.text).toContain(`>${long}</textarea>`);
    expect(tooLong.text).toContain('value="Kept &lt;title&gt;"');
    expect(tooLong.text).toMatch(/<option value="proposal" selected>/);

    const empty = await post(org.member, path, { intent: 'question', title: '   ', body: 'Body kept' });
    expect(empty.status).toBe(400);
    expect(alertOf(empty.text)).toEqual({ id: 'title-error', text: 'title must not be empty' });
    expect(empty.text).toContain('aria-describedby="title-error title-hint"');
    expect(empty.text).toContain('>Body kept</textarea>');

    const control = await post(org.member, path, { intent: 'question', title: 'bell\u0007', body: 'b' });
    expect(control.status).toBe(400);
    expect(alertOf(control.text)?.id).toBe('title-error');
    expect(alertOf(control.text)?.text).toContain('title must not contain control characters');

    const intent = await post(org.member, path, { intent: 'rant', title: 't', body: 'b' });
    expect([intent.status, alertOf(intent.text)?.id]).toEqual([400, 'intent-error']);
    expect(await threads()).toBe(count);

    // The reply form of a thread likewise.
    const threadId = threadIdOf((await post(org.member, path, { intent: 'question', title: 't', body: 'b' })).location);
    const reply = await post(org.member, `/${org.slug}/threads/${threadId}/reply`, { body: ' \n ' });
    expect(reply.status).toBe(400);
    expect(alertOf(reply.text)).toEqual({ id: 'reply-body-error', text: 'body must not be empty' });
    // And the edit form: shown again open, with the alert and what was typed.
    const messageId = (await client(base).rest('GET', `/api/threads/${threadId}`, { session: org.member })).json.data
      .messages.items[0].id as string;
    const edit = await post(org.member, `/${org.slug}/threads/${threadId}/messages/${messageId}/edit`, {
      body: `${long}`,
    });
    expect(edit.status).toBe(400);
    expect(alertOf(edit.text)).toEqual({
      id: `edit-${messageId}-body-error`,
      text: 'body must be at most 10000 characters',
    });
    expect(edit.text).toContain(`>${long}</textarea>`);
    // Through a thread that does not hold the message: the refusal is a page of its own, still 400.
    const otherThread = threadIdOf(
      (await post(org.member, path, { intent: 'question', title: 'u', body: 'b' })).location,
    );
    const astray = await post(org.member, `/${org.slug}/threads/${otherThread}/messages/${messageId}/edit`, {
      body: '',
    });
    expect([astray.status, astray.text.includes('body must not be empty')]).toEqual([400, true]);
  });

  it('a form without the CSRF token, with a wrong one, or posted from another origin: 403, nothing written', async () => {
    const metric = org.metrics.profit as string;
    const path = `/${org.slug}/metrics/${metric}/threads/new`;
    const fields = { intent: 'question', title: 'csrf', body: 'b' };
    const count = (await contract(t, org, metric)).data.discussion_thread_count;
    expect((await post(org.member, path, fields, { csrf: null })).status).toBe(403);
    expect((await post(org.member, path, fields, { csrf: csrfTokenOf(org.otherMember) })).status).toBe(403);
    expect((await post(org.member, path, fields, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await contract(t, org, metric)).data.discussion_thread_count).toBe(count);
  });

  it('past the write budget: a 429 page with Retry-After', async () => {
    const limited = await buildTestInstance(t.database, { discussionWritesPerMinute: 1 });
    try {
      const at = await limited.listen({ port: 0, host: '127.0.0.1' });
      const small = await discussionOrg(t, 'forms-budget');
      const path = `/${small.slug}/metrics/${small.metrics.orders}/threads/new`;
      const fields = { intent: 'question', title: 't', body: 'b' };
      expect((await post(small.member, path, fields, { at })).status).toBe(303);
      const refused = await post(small.member, path, fields, { at });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toContain('text/html');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(refused.text).toContain('Too many discussion writes');
    } finally {
      await limited.close();
    }
  });
});

describe('markup in what people write', () => {
  it('is shown escaped on the page while the API serves it as written', async () => {
    const metric = org.metrics.orders as string;
    const title = '<script>alert(1)</script>';
    const body = '"><img src=x onerror=alert(1)> and <script>alert(1)</script>';
    const opened = await post(org.member, `/${org.slug}/metrics/${metric}/threads/new`, {
      intent: 'question',
      title,
      body,
    });
    const threadId = threadIdOf(opened.location);
    const page = await get(org.member, `/${org.slug}/threads/${threadId}`);
    expect(page.text).toContain('<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>');
    expect(page.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(page.text).not.toContain('<img');
    expect(page.text).not.toContain('<script>alert');
    const api = await client(base).rest('GET', `/api/threads/${threadId}`, { session: org.member });
    expect(api.status).toBe(200);
    expect(api.json.data).toMatchObject({ title, messages: { items: [{ body }] } });

    // A challenge's reason and a decision's reason too; admins decide, members raise.
    const challenges = `/${org.slug}/metrics/${metric}/challenges`;
    const raised = await post(org.member, challenges, { reason: body });
    expect(raised.status).toBe(303);
    const challengeId = raised.location?.split('#challenge-')[1] as string;
    const listed = await get(org.member, challenges);
    expect(listed.text).toContain('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;');
    expect(listed.text).not.toContain('<img');
    expect(listed.text).not.toContain('/decision"');
    expect(
      (await post(org.member, `${challenges}/${challengeId}/decision`, { decision: 'accepted', reason: 'no' })).status,
    ).toBe(403);
    const admin = await get(org.admin, challenges);
    expect(admin.text).toContain(`action="${challenges}/${challengeId}/decision"`);
    const emptyReason = await post(org.admin, `${challenges}/${challengeId}/decision`, {
      decision: 'rejected',
      reason: '',
    });
    expect([emptyReason.status, alertOf(emptyReason.text)?.id]).toEqual([400, `decide-${challengeId}-reason-error`]);
    const decided = await post(org.admin, `${challenges}/${challengeId}/decision`, {
      decision: 'rejected',
      reason: '<b>not</b> a problem',
    });
    expect(decided.status).toBe(303);
    const after = await get(org.viewer, challenges);
    expect(after.text).toContain('&lt;b&gt;not&lt;/b&gt; a problem');
    expect(after.text).toContain('Rejected');
    expect(after.text).toContain('Viewers read; ask an admin for the member role.');
  });
});
