/**
 * Conditional GET (src/rest/etag.ts): every 200 of the read routes carries a
 * strong ETag; a request naming the current tag in If-None-Match gets 304
 * with no body, for the key lookup and at most one small statement. Every
 * change below is made behind the service's back with SQL (as another
 * instance, a fixture load or an operator would): the tag must change, and
 * the old tag must then get a 200 with the new body.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { newKeySecret, registry } from '../fixtures/registry.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { insertMetricBeside } from '../helpers/metric-sql.js';
import { expectError, expectOk, statementCount } from './expectations.js';

const r = registry();
const acme = r.org({ plan: 'team', fiscal_calendar_start_month: 1 });
const author = acme.user({ display_name: 'Ada Author' });
const focus = acme.metric({ name: 'Net Revenue', key: 'net_revenue', description: 'Gross revenue minus refunds.' });
const superseded = acme.metric({ name: 'Old Revenue', key: 'old_revenue' });
const variant = acme.metric({ name: 'Net Revenue EMEA', key: 'net_revenue_emea' });
const related = acme.metric({ name: 'Refunds', key: 'refunds' });
const unrelated = acme.metric({ name: 'Quiet Metric', key: 'quiet' });
acme.relate(focus, 'supersedes', superseded);
acme.relate(variant, 'variant_of', focus);
acme.relate(focus, 'related_to', related);
const version = acme.version(focus, { definition_version: '1.0.0', released_at: '2026-01-01T00:00:00Z' });
const approval = acme.approval(focus, { version_id: version.id, comment: 'Reconciles.' });
acme.validation(focus, { ran_at: '2026-01-02T00:00:00Z' });
const challenge = acme.challenge(focus, { status: 'open' });
const objection = acme.thread(focus, { intent: 'objection', title: 'Refund timing' });
const pinned = acme.message(objection, {
  author_user_id: author.id,
  body: 'Refunds net in the month issued.',
  pinned_at: '2026-03-01T00:00:00Z',
});
const plain = acme.message(objection, { body: 'Agreed.' });
// The trust verdict of a contract depends on other metrics and on the time.
const legacy = acme.metric({ name: 'Legacy Margin', key: 'legacy_margin', lifecycle_status: 'APPROVED' });
const margin = acme.metric({ name: 'Margin', key: 'margin', lifecycle_status: 'APPROVED' });
acme.relate(margin, 'supersedes', legacy);
const DAY_MS = 24 * 60 * 60 * 1000;
const fresh = acme.metric({ name: 'Fresh Margin', key: 'fresh_margin', lifecycle_status: 'APPROVED' });
acme.validation(fresh, { ran_at: new Date(Date.now() - 29 * DAY_MS).toISOString() });
const key = acme.key();
const limitedKey = acme.key({ rate_limit_per_minute: 2 });
const sandboxKey = acme.key({ sandbox: true });
const wrongScopeKey = acme.key({ scopes: ['reports:write'] });
const other = r.org();
other.metric({ name: 'Net Revenue', key: 'net_revenue' });
const otherKey = other.key();

const LIST = '/api/v1/metrics?pageSize=50';
const SEARCH = '/api/v1/metrics?q=revenue';
const DETAIL = `/api/v1/metrics/${focus.id}`;
const CONTRACT = `/api/v1/metrics/${focus.id}/contract`;
const SUMMARY = `/api/v1/metrics/${focus.id}/contract?summary=true`;
const ROUTES = [LIST, SEARCH, DETAIL, CONTRACT, SUMMARY];

let t: TestApp;
let second: FastifyInstance;
beforeAll(async () => {
  t = await startTestApp({ fixture: r.build() });
  second = await buildTestInstance(t.database);
});
afterAll(async () => {
  await second?.close();
  await t.close();
});

type Res = Awaited<ReturnType<TestApp['get']>>;

const get = (url: string, ifNoneMatch?: string, secret = key.secret) =>
  t.get(url, secret, ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch });

const sql = (text: TemplateStringsArray, ...values: unknown[]) => t.database.prisma.$executeRaw(text, ...values);

/** A 200 with its validators. */
function expectTagged(res: Res): string {
  expectOk(res);
  const tag = String(res.headers.etag);
  expect(tag).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
  expect(res.headers['cache-control']).toBe('private, no-cache');
  expect(res.headers.vary).toBe('Authorization, X-Service-Env');
  return tag;
}

function expectNotModified(res: Res, tag: string): void {
  expect(res.statusCode, res.body).toBe(304);
  expect(res.body).toBe('');
  expect(res.headers.etag).toBe(tag);
  expect(res.headers['cache-control']).toBe('private, no-cache');
  expect(res.headers.vary).toBe('Authorization, X-Service-Env');
  expect(res.headers['content-type']).toBeUndefined();
}

/**
 * The route's current 200. A summary just generated answers once more so
 * that the response is the cached summary (the one a 304 can confirm).
 */
async function settled(url: string): Promise<{ res: Res; tag: string }> {
  let res = await get(url);
  expectTagged(res);
  if (url === SUMMARY && !res.json().data.discussion_summary_meta.cache_hit) {
    if (res.headers['x-discussion-summary'] !== 'no_discussion') res = await get(url);
  }
  return { res, tag: expectTagged(res) };
}

/** What a body says, less what only says how this one response was made (summary metadata). */
function content(res: Res): unknown {
  const body = res.json();
  if (body.data?.discussion_summary_meta) delete body.data.discussion_summary_meta;
  return body;
}

/**
 * For each route: the current tag gets 304; after `change`, the old tag gets
 * a 200 whose body is the new one (and differs from the old where `visible`),
 * with a new tag that gets 304 again.
 */
async function expectChangeShows(routes: string[], visible: string[], change: () => Promise<unknown>): Promise<void> {
  const before = new Map<string, { res: Res; tag: string }>();
  for (const url of routes) {
    const current = await settled(url);
    expectNotModified(await get(url, current.tag), current.tag);
    before.set(url, current);
  }
  await change();
  for (const url of routes) {
    const old = before.get(url);
    if (!old) throw new Error(url);
    const res = await get(url, old.tag);
    const tag = expectTagged(res);
    expect(tag, `${url}: tag changed`).not.toBe(old.tag);
    const now = await settled(url);
    expect(content(res), `${url}: the old tag gets the new body`).toEqual(content(now.res));
    if (visible.includes(url)) expect(content(res), `${url}: body changed`).not.toEqual(content(old.res));
    expectNotModified(await get(url, now.tag), now.tag);
  }
}

describe('validators on 200 and 304', () => {
  it('every route sends a strong ETag and caching headers; the same tag gets 304 without a body', async () => {
    for (const url of ROUTES) {
      const { tag } = await settled(url);
      expectNotModified(await get(url, tag), tag);
      // A second request without condition: same state, same tag.
      expect((await settled(url)).tag).toBe(tag);
    }
  });

  it('a second instance gives the same tag and answers 304', async () => {
    for (const url of ROUTES) {
      const { tag } = await settled(url);
      const res = await second.inject({
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${key.secret}`, 'if-none-match': tag },
      });
      expectNotModified(res, tag);
    }
  });

  it('If-None-Match: a list, weak tags and * match; other or malformed tags get the 200', async () => {
    for (const url of [LIST, DETAIL, CONTRACT]) {
      const { tag } = await settled(url);
      expectNotModified(await get(url, `"nope", ${tag}`), tag);
      expectNotModified(await get(url, `W/${tag}`), tag);
      expectNotModified(await get(url, ` "a,b" ,W/"c", ${tag} ,`), tag);
      expectNotModified(await get(url, '*'), tag);
      for (const bad of ['"nope"', tag.slice(1, -1), `${tag} junk`, `${tag}${tag}`, 'W/', '', ',']) {
        expect(expectTagged(await get(url, bad)), `${url} If-None-Match: ${bad}`).toBe(tag);
      }
    }
    // `*` on a metric that does not exist is the 404.
    expectError(await get(`/api/v1/metrics/${randomUUID()}`, '*'), 404, { error: 'Metric not found' });
    expectError(await get(`/api/v1/metrics/${randomUUID()}/contract`, '*'), 404, { error: 'Metric not found' });
  });

  it('a 16 KiB If-None-Match of whitespace after a comma costs one request no more CPU than a short one (within 50 ms)', async () => {
    const hostile = `"a",${' '.repeat(16_000)}x`;
    /** CPU microseconds of this process (the service in process) for one request. */
    const cpuOf = async (url: string, header: string) => {
      const before = process.cpuUsage();
      const res = await get(url, header);
      const used = process.cpuUsage(before);
      expect(res.statusCode).toBe(200);
      return used.user + used.system;
    };
    for (const url of [LIST, CONTRACT]) {
      await cpuOf(url, '"a", x'); // warm: compiled statements and caches
      const short = Math.min(await cpuOf(url, '"a", x'), await cpuOf(url, '"a", x'));
      const long = Math.min(await cpuOf(url, hostile), await cpuOf(url, hostile));
      expect(long, url).toBeLessThan(short + 50_000);
    }
  });

  it('any If-None-Match value is a 200 with the tag or a 304 that names it, never an error', async () => {
    const { tag } = await settled(DETAIL);
    const value = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary-ascii' }),
      fc.array(fc.oneof(fc.constant(tag), fc.constant(`W/${tag}`), fc.string())).map((parts) => parts.join(',')),
    );
    await fc.assert(
      fc.asyncProperty(value, async (header) => {
        let res: Res;
        try {
          res = await get(DETAIL, header);
        } catch {
          return; // a value Node refuses to send (control characters) never reaches the service
        }
        expect([200, 304], `${JSON.stringify(header)}: ${res.statusCode}`).toContain(res.statusCode);
        expect(res.headers.etag).toBe(tag);
      }),
      { numRuns: 150 },
    );
  });

  it('different representations never share a tag; equal requests may', async () => {
    const urls = [
      LIST,
      '/api/v1/metrics',
      '/api/v1/metrics?page=2&pageSize=2',
      '/api/v1/metrics?pageSize=2',
      '/api/v1/metrics?lifecycle_status=RELEASED',
      '/api/v1/metrics?scope=exploratory',
      SEARCH,
      '/api/v1/metrics?q=refunds',
      '/api/v1/metrics?q=revenue&pageSize=1',
      DETAIL,
      CONTRACT,
      SUMMARY,
      `/api/v1/metrics/${superseded.id}`,
      `/api/v1/metrics/${superseded.id}/contract`,
      `/api/v1/metrics/${unrelated.id}/contract?summary=true`,
    ];
    const tags = await Promise.all(urls.map(async (url) => (await settled(url)).tag));
    const otherTag = expectTagged(await get('/api/v1/metrics', undefined, otherKey.secret));
    expect(new Set([...tags, otherTag]).size).toBe(urls.length + 1);
    // Another organization's tag is not this one's.
    expect(expectTagged(await get('/api/v1/metrics', otherTag))).not.toBe(otherTag);
    // Requests that yield the same body share one.
    expect((await settled('/api/v1/metrics?page=abc&status=bogus')).tag).toBe((await settled('/api/v1/metrics')).tag);
    expect((await settled(`${CONTRACT}?summary=yes`)).tag).toBe((await settled(CONTRACT)).tag);
  });

  it('a tag of another PUBLIC_APP_URL is not this one: the contract shows it', async () => {
    const elsewhere = await buildTestInstance(t.database, { publicAppUrl: 'https://other.example' });
    try {
      for (const url of [CONTRACT, DETAIL]) {
        const { tag } = await settled(url);
        const res = await elsewhere.inject({
          method: 'GET',
          url,
          headers: { authorization: `Bearer ${key.secret}`, 'if-none-match': tag },
        });
        if (url === CONTRACT) {
          expect(res.statusCode).toBe(200);
          expect(res.headers.etag).not.toBe(tag);
          expect(res.json().data.canonical_url).toMatch(/^https:\/\/other\.example\//);
        } else {
          expectNotModified(res, tag);
        }
      }
    } finally {
      await elsewhere.close();
    }
  });
});

describe('admission comes first', () => {
  it('a bad, missing or revoked key with a valid If-None-Match still gets its 401; scope and sandbox their 403', async () => {
    for (const url of [LIST, DETAIL, CONTRACT]) {
      const { tag } = await settled(url);
      expectError(await get(url, tag, newKeySecret()), 401, { error: 'Invalid API key' });
      expectError(await t.get(url, null, { 'if-none-match': tag }), 401, { error: 'Missing Authorization header' });
      expectError(await get(url, tag, wrongScopeKey.secret), 403, { error: 'Insufficient scope' });
      expect((await get(url, tag, sandboxKey.secret)).statusCode).toBe(403);
      expectNotModified(await t.get(url, sandboxKey.secret, { 'if-none-match': tag, 'x-service-env': 'sandbox' }), tag);
    }
  });

  it('a bad metric id is a 400 whatever the condition', async () => {
    expectError(await get('/api/v1/metrics/not-a-uuid', '*'), 400, { error: 'Invalid metric ID format' });
  });

  it('a 304 spends the rate limit like a 200', async () => {
    const { tag } = await settled(DETAIL);
    const first = await get(DETAIL, tag, limitedKey.secret);
    expectNotModified(first, tag);
    expect(first.headers['ratelimit-remaining']).toBe('1');
    expectNotModified(await get(DETAIL, tag, limitedKey.secret), tag);
    const limited = await get(DETAIL, tag, limitedKey.secret);
    expectError(limited, 429, { error: 'Rate limit exceeded' });
  });
});

describe('summary=true', () => {
  it('is a 304 only when the cache answers it: nothing generated or billed, X-Discussion-Summary-Charged 0', async () => {
    const counts = async () => {
      const [row] = await t.database.prisma.$queryRaw<{ summaries: number; events: number }[]>`
        SELECT (SELECT count(*)::int FROM discussion_summary) AS summaries,
               (SELECT count(*)::int FROM meter_event) AS events`;
      return row;
    };
    await sql`UPDATE message SET body = 'Refunds net in the month they are issued.', updated_at = now() WHERE id = ${plain.id}::uuid`;
    const generated = await get(SUMMARY);
    const generatedTag = expectTagged(generated);
    expect(generated.json().data.discussion_summary_meta).toEqual({ cache_hit: false, charged: true });
    // The body just generated says cache_hit false: its tag never matches; the next answer is the cached one.
    const cached = await get(SUMMARY, generatedTag);
    const cachedTag = expectTagged(cached);
    expect(cachedTag).not.toBe(generatedTag);
    expect(cached.json().data.discussion_summary_meta).toEqual({ cache_hit: true, charged: false });
    const before = await counts();
    for (let i = 0; i < 3; i++) {
      const res = await get(SUMMARY, cachedTag);
      expectNotModified(res, cachedTag);
      expect(res.headers['x-discussion-summary-charged']).toBe('0');
    }
    expect(await counts()).toEqual(before);
  });

  it('a dropped cache entry is a 200 (generated again), never a 304', async () => {
    await expectChangeShows(
      [SUMMARY],
      [],
      () => sql`DELETE FROM discussion_summary WHERE metric_id = ${focus.id}::uuid`,
    );
  });

  it('without discussion: no_discussion is a 304 too (nothing to generate)', async () => {
    const url = `/api/v1/metrics/${unrelated.id}/contract?summary=true`;
    const { res, tag } = await settled(url);
    expect(res.headers['x-discussion-summary']).toBe('no_discussion');
    const again = await get(url, tag);
    expectNotModified(again, tag);
    expect(again.headers['x-discussion-summary-charged']).toBe('0');
    expect(again.headers['x-discussion-summary']).toBe('no_discussion');
  });
});

describe('statements of a 304 (SERVER_TIMING=1)', () => {
  it('list: the key lookup alone; detail and contract: one more small statement', async () => {
    const timed = await buildTestInstance(t.database, { serverTiming: true });
    try {
      const expected: [string, number][] = [
        [LIST, 1],
        [SEARCH, 1],
        [DETAIL, 2],
        [CONTRACT, 2],
        [SUMMARY, 2],
      ];
      for (const [url, statements] of expected) {
        const { tag } = await settled(url);
        const res = await timed.inject({
          method: 'GET',
          url,
          headers: { authorization: `Bearer ${key.secret}`, 'if-none-match': tag },
        });
        expectNotModified(res, tag);
        expect({ url, statements: statementCount(res) }).toEqual({ url, statements });
      }
    } finally {
      await timed.close();
    }
  });
});

describe('statements of a 200 asked no condition (SERVER_TIMING=1)', () => {
  it('detail and contract take the version from the body’s own statement: the key lookup, which reads the metric', async () => {
    const timed = await buildTestInstance(t.database, { serverTiming: true });
    try {
      for (const url of [`/api/v1/metrics/${unrelated.id}`, `/api/v1/metrics/${unrelated.id}/contract`]) {
        const res = await timed.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key.secret}` } });
        const tag = expectTagged(res);
        expect({ url, statements: statementCount(res) }).toEqual({ url, statements: 1 });
        // The tag read with the body is the one a conditional request reads before it.
        expectNotModified(await get(url, tag), tag);
      }
    } finally {
      await timed.close();
    }
  });
});

describe('the tag follows every change made behind the service’s back', () => {
  const ALL = [LIST, SEARCH, DETAIL, CONTRACT, SUMMARY];
  const METRIC = [DETAIL, CONTRACT, SUMMARY];

  it('the metric row', async () => {
    await expectChangeShows(
      ALL,
      [LIST, SEARCH, DETAIL, CONTRACT],
      () =>
        sql`UPDATE metric SET description = 'Revenue after refunds.', bd_caveats = 'Excludes tax.' WHERE id = ${focus.id}::uuid`,
    );
  });

  it('metrics inserted and deleted (lists)', async () => {
    let id = '';
    await expectChangeShows([LIST, SEARCH], [LIST, SEARCH], async () => {
      id = await insertMetricBeside(t.database.prisma, focus.id, { key: 'gross_revenue_2', name: 'Gross Revenue 2' });
    });
    await expectChangeShows([LIST, SEARCH], [LIST, SEARCH], () => sql`DELETE FROM metric WHERE id = ${id}::uuid`);
  });

  it('another organization’s changes leave the tags alone', async () => {
    const tags = await Promise.all([LIST, SEARCH, DETAIL].map(async (url) => (await settled(url)).tag));
    await sql`UPDATE metric SET name = 'Net Revenue (other)' WHERE org_id = ${other.id}::uuid`;
    await [LIST, SEARCH, DETAIL].reduce(async (previous, url, i) => {
      await previous;
      expectNotModified(await get(url, tags[i]), tags[i] as string);
    }, Promise.resolve());
  });

  it('versions: released, edited, deleted', async () => {
    const id = randomUUID();
    await expectChangeShows(
      METRIC,
      [DETAIL, CONTRACT],
      () =>
        sql`INSERT INTO metric_version (id, metric_id, definition_version, status, released_at, change_summary)
          VALUES (${id}::uuid, ${focus.id}::uuid, '2.0.0', 'released', '2026-02-01T00:00:00Z', 'Second.')`,
    );
    await expectChangeShows(
      [DETAIL],
      [DETAIL],
      () => sql`UPDATE metric_version SET change_summary = 'Second release.' WHERE id = ${id}::uuid`,
    );
    await expectChangeShows(METRIC, [DETAIL, CONTRACT], () => sql`DELETE FROM metric_version WHERE id = ${id}::uuid`);
  });

  it('approvals: new, edited, deleted', async () => {
    const id = randomUUID();
    await expectChangeShows(
      [DETAIL],
      [DETAIL],
      () =>
        sql`INSERT INTO approval (id, metric_id, approver_role, decision, decided_at, comment)
          VALUES (${id}::uuid, ${focus.id}::uuid, 'cfo', 'rejected', '2026-02-02T00:00:00Z', 'No.')`,
    );
    await expectChangeShows(
      [DETAIL],
      [DETAIL],
      () => sql`UPDATE approval SET comment = 'Reconciles with the ledger.' WHERE id = ${approval.id}::uuid`,
    );
    await expectChangeShows([DETAIL], [DETAIL], () => sql`DELETE FROM approval WHERE id = ${id}::uuid`);
  });

  it('validations', async () => {
    await expectChangeShows(
      METRIC,
      [CONTRACT],
      () =>
        sql`INSERT INTO validation (id, metric_id, ran_at, status) VALUES (${randomUUID()}::uuid, ${focus.id}::uuid, '2026-04-01T00:00:00Z', 'passed')`,
    );
  });

  it('challenges: new and resolved', async () => {
    await expectChangeShows(
      [CONTRACT],
      [CONTRACT],
      () =>
        sql`INSERT INTO challenge (id, metric_id, status, reason, created_at)
          VALUES (${randomUUID()}::uuid, ${focus.id}::uuid, 'open', 'Off by one day.', now())`,
    );
    await expectChangeShows(
      [CONTRACT],
      [CONTRACT],
      () => sql`UPDATE challenge SET status = 'resolved' WHERE id = ${challenge.id}::uuid`,
    );
  });

  it('relationships from and to the metric, added and removed', async () => {
    const out = randomUUID();
    const into = randomUUID();
    await expectChangeShows(
      [DETAIL, CONTRACT],
      [DETAIL, CONTRACT],
      () =>
        sql`INSERT INTO metric_relationship (id, metric_id, kind, target_metric_id)
          VALUES (${out}::uuid, ${focus.id}::uuid, 'conflicts_with', ${unrelated.id}::uuid)`,
    );
    await expectChangeShows(
      [DETAIL, CONTRACT],
      [DETAIL, CONTRACT],
      () => sql`DELETE FROM metric_relationship WHERE id = ${out}::uuid`,
    );
    await expectChangeShows(
      [DETAIL, CONTRACT],
      [DETAIL, CONTRACT],
      () =>
        sql`INSERT INTO metric_relationship (id, metric_id, kind, target_metric_id)
          VALUES (${into}::uuid, ${unrelated.id}::uuid, 'supersedes', ${focus.id}::uuid)`,
    );
    await expectChangeShows(
      [DETAIL, CONTRACT],
      [DETAIL, CONTRACT],
      () => sql`DELETE FROM metric_relationship WHERE id = ${into}::uuid`,
    );
  });

  it('the shown fields of related metrics, either direction; their other fields leave the tag alone', async () => {
    await expectChangeShows(
      [DETAIL, CONTRACT],
      [DETAIL, CONTRACT],
      () => sql`UPDATE metric SET name = 'Legacy Revenue' WHERE id = ${superseded.id}::uuid`,
    );
    await expectChangeShows(
      [DETAIL, CONTRACT],
      [DETAIL, CONTRACT],
      () => sql`UPDATE metric SET lifecycle_status = 'DEPRECATED' WHERE id = ${superseded.id}::uuid`,
    );
    await expectChangeShows(
      [DETAIL, CONTRACT],
      [DETAIL, CONTRACT],
      () => sql`UPDATE metric SET key = 'net_revenue_europe' WHERE id = ${variant.id}::uuid`,
    );
    await expectChangeShows(
      [DETAIL],
      [DETAIL],
      () => sql`UPDATE metric SET name = 'Refunds issued' WHERE id = ${related.id}::uuid`,
    );
    const { tag } = await settled(DETAIL);
    await sql`UPDATE metric SET description = 'Not shown on the related metric.' WHERE id = ${superseded.id}::uuid`;
    expectNotModified(await get(DETAIL, tag), tag);
  });

  it('a related metric deleted (the relationship goes with it)', async () => {
    await expectChangeShows([DETAIL], [DETAIL], () => sql`DELETE FROM metric WHERE id = ${related.id}::uuid`);
  });

  it('threads: new and resolved', async () => {
    const id = randomUUID();
    await expectChangeShows(
      METRIC,
      [CONTRACT, SUMMARY],
      () =>
        sql`INSERT INTO thread (id, metric_id, intent, resolution_status, title, created_at)
          VALUES (${id}::uuid, ${focus.id}::uuid, 'proposal', 'open', 'Split by region', now())`,
    );
    await expectChangeShows(
      METRIC,
      [CONTRACT],
      () => sql`UPDATE thread SET resolution_status = 'resolved' WHERE id = ${objection.id}::uuid`,
    );
  });

  it('messages: new, edited, deleted, pinned, unpinned', async () => {
    const id = randomUUID();
    await expectChangeShows(
      METRIC,
      [CONTRACT, SUMMARY],
      () =>
        sql`INSERT INTO message (id, thread_id, metric_id, author_user_id, body, created_at, updated_at)
          VALUES (${id}::uuid, ${objection.id}::uuid, ${focus.id}::uuid, ${author.id}::uuid, 'Also chargebacks.', now(), now())`,
    );
    await expectChangeShows(
      METRIC,
      [CONTRACT],
      () =>
        sql`UPDATE message SET body = 'Refunds net in the month of the sale.', updated_at = now() WHERE id = ${pinned.id}::uuid`,
    );
    await expectChangeShows(
      METRIC,
      [CONTRACT],
      () =>
        sql`UPDATE message SET pinned_at = now(), pinned_by_user_id = ${acme.owner.id}::uuid WHERE id = ${id}::uuid`,
    );
    await expectChangeShows(
      METRIC,
      [CONTRACT],
      () => sql`UPDATE message SET pinned_at = NULL, pinned_by_user_id = NULL WHERE id = ${id}::uuid`,
    );
    await expectChangeShows(
      METRIC,
      [CONTRACT, SUMMARY],
      () => sql`UPDATE message SET deleted_at = now() WHERE id = ${id}::uuid`,
    );
  });

  it('the display name of a pinned note’s author', async () => {
    await expectChangeShows(
      [CONTRACT],
      [CONTRACT],
      () => sql`UPDATE app_user SET display_name = 'Ada Lovelace' WHERE id = ${author.id}::uuid`,
    );
  });

  it('the organization’s fiscal month (detail) and slug (contract)', async () => {
    await expectChangeShows(
      [DETAIL],
      [DETAIL],
      () => sql`UPDATE organization SET fiscal_calendar_start_month = 4 WHERE id = ${acme.id}::uuid`,
    );
    await expectChangeShows(
      [CONTRACT],
      [CONTRACT],
      () => sql`UPDATE organization SET slug = 'acme-renamed' WHERE id = ${acme.id}::uuid`,
    );
  });

  it('a metric deleted: the old tag gets the 404', async () => {
    const { tag } = await settled(DETAIL);
    await sql`DELETE FROM metric WHERE id = ${focus.id}::uuid`;
    expectError(await get(DETAIL, tag), 404, { error: 'Metric not found' });
    expectError(await get(CONTRACT, '*'), 404, { error: 'Metric not found' });
  });
});

describe('the contract’s trust verdict, which no version of the metric covers', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a metric superseding the end of its supersession chain changes the tag of the chain’s start', async () => {
    const url = `/api/v1/metrics/${legacy.id}/contract`;
    const before = await settled(url);
    expect(before.res.json().data.trust).toEqual({
      verdict: 'do_not_use',
      reasons: ['superseded'],
      preferred_metric_id: margin.id,
      untrusted_inputs: [],
    });
    const successor = await insertMetricBeside(t.database.prisma, margin.id, { key: 'margin_v3', name: 'Margin v3' });
    await sql`INSERT INTO metric_relationship (id, metric_id, target_metric_id, kind)
              VALUES (${randomUUID()}::uuid, ${successor}::uuid, ${margin.id}::uuid, 'supersedes')`;
    const res = await get(url, before.tag);
    expect(expectTagged(res)).not.toBe(before.tag);
    expect(res.json().data.trust.preferred_metric_id).toBe(successor);
  });

  it('a validation going stale with time changes the tag', async () => {
    const url = `/api/v1/metrics/${fresh.id}/contract`;
    const before = await settled(url);
    expect(before.res.json().data.trust).toEqual({
      verdict: 'use',
      reasons: [],
      preferred_metric_id: null,
      untrusted_inputs: [],
    });
    expectNotModified(await get(url, before.tag), before.tag);
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * DAY_MS);
    const res = await get(url, before.tag);
    expect(expectTagged(res)).not.toBe(before.tag);
    expect(res.json().data.trust).toEqual({
      verdict: 'use_with_caution',
      reasons: ['stale_validation'],
      preferred_metric_id: null,
      untrusted_inputs: [],
    });
  });
});
