/**
 * The metric page (`/{org}/metrics/{id}`, the contract's canonical_url) and
 * the comparison of two versions, over a listening socket with real
 * sessions, on a registry applied through the write routes: every section
 * with the metric's data, the verdict's reasons in sentences, lineage
 * linked, the version diff, who gets a 404, markup in every text field
 * shown as text, and a statement count that does not grow with the
 * metric's history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeHtml } from '../../src/pages/html.js';
import { client } from '../discussions/support.js';
import { startTestApp, TEST_PUBLIC_APP_URL, type TestApp } from '../helpers/app.js';
import { doc, docMetric, newTeamOrg, postValidations, putRegistry, type TeamOrg, uuidV5 } from '../registry/support.js';

/** Markup a hostile author writes into every text field. */
const X = `<script>alert(1)</script>"><img src=x onerror=alert(1)>`;
const marked = (field: string) => `${field} ${X}`;

const day = (n: number) => new Date(Date.UTC(2026, 0, 1 + n)).toISOString();

/** `count` versions 1..count (the last released), each with its change summary. */
function versions(count: number) {
  return Array.from({ length: count }, (_, i) => ({
    definition_version: String(i + 1),
    status: i === count - 1 ? 'released' : 'superseded',
    released_at: day(i),
    change_summary: i === 0 ? 'First cut\nline two' : marked(`summary${i + 1}`).concat('\nFirst cut\nline three'),
  }));
}

describe('the metric page', () => {
  let t: TestApp;
  let base: string;
  let org: TeamOrg;
  let other: TeamOrg;
  const ids = { base_rev: '', main: '', draft: '', long: '', thread: '' };
  const page = (path: string, session: string | null = org.ownerSession) =>
    fetch(new URL(path, base), { redirect: 'manual', headers: session ? { cookie: `session=${session}` } : {} });
  const body = async (path: string) => {
    const res = await page(path);
    expect(res.status, path).toBe(200);
    return res.text();
  };

  beforeAll(async () => {
    t = await startTestApp({ serverTiming: true });
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    org = await newTeamOrg(t.database.prisma, 'metricpage');
    other = await newTeamOrg(t.database.prisma, 'otherpage');
    const applied = await putRegistry(
      t,
      doc(org.slug, [
        docMetric('base_rev', { lifecycle_status: 'RELEASED' }),
        docMetric('main', {
          name: marked('name'),
          description: marked('description'),
          aliases: ['MM', marked('alias')],
          sql_expression: `SELECT sum(amount) -- ${marked('sql')}\nFROM analytics.fct_revenue`,
          business_definition: { included: marked('included'), excluded: 'Refunds', caveats: marked('caveats') },
          grains: ['day', 'month'],
          dimensions: [{ name: marked('dimension'), column: 'region_code' }],
          filters: [marked('filter')],
          source_refs: [{ table: 'analytics.fct_revenue' }],
          lifecycle_status: 'RELEASED',
          versions: versions(2),
          approvals: [
            {
              definition_version: '2',
              approver_role: 'finance_lead',
              approver: null,
              decision: 'approved',
              decided_at: day(2),
              comment: marked('approval'),
            },
          ],
          relationships: [{ kind: 'related_to', target: 'base_rev' }],
          inputs: ['base_rev'],
        }),
        docMetric('draft', { lifecycle_status: 'DRAFT' }),
        docMetric('long', { lifecycle_status: 'RELEASED', versions: versions(30) }),
      ]),
      { token: org.token },
    );
    expect(applied.statusCode, applied.body).toBe(200);
    for (const key of ['base_rev', 'main', 'draft', 'long'] as const) ids[key] = uuidV5(org.id, key);
    const now = Date.now();
    const run = (key: string, status: string, minutesAgo: number) => ({
      metric_key: key,
      ran_at: new Date(now - minutesAgo * 60_000).toISOString(),
      status,
      source: 'ci',
      details: marked(`details-${key}`),
    });
    const validated = await postValidations(
      t,
      {
        results: [
          run('main', 'passed', 1),
          run('base_rev', 'failed', 1),
          ...Array.from({ length: 30 }, (_, i) => run('long', 'passed', i + 1)),
        ],
      },
      { token: org.token },
    );
    expect(validated.statusCode, validated.body).toBe(200);
    // A thread with a title of markup and its first message pinned, through the discussion routes.
    const { rest } = client(base);
    const opened = await rest(
      'POST',
      `/api/metrics/${ids.main}/threads`,
      { session: org.ownerSession },
      { intent: 'clarification', title: marked('thread'), body: `**Note** ${marked('note')}` },
    );
    expect(opened.status, opened.text).toBe(201);
    ids.thread = opened.json.data.id;
    const message = opened.json.data.messages.items[0].id;
    const pinned = await rest('POST', `/api/messages/${message}/pin`, { session: org.ownerSession }, {});
    expect(pinned.status, pinned.text).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('shows every section, in order, with the metric data', async () => {
    const text = await body(`/${org.slug}/metrics/${ids.main}`);
    const titles = [...text.matchAll(/<h2 id="([a-z]+)-title">/g)].map((m) => m[1]);
    expect(titles).toEqual([
      'trust',
      'definition',
      'computation',
      'lifecycle',
      'versions',
      'approvals',
      'validation',
      'relationships',
      'discussion',
      'changes',
      'use',
    ]);
    // The table of contents links to each of them.
    for (const id of titles) expect(text).toContain(`<a href="#${id}-title">`);
    expect(text.match(/<h1[ >]/g)).toHaveLength(1);
    expect(text).toContain('<code>main</code>');
    expect(text).toContain('MM, ');
    expect(text).toContain('Refunds');
    expect(text).toContain('day, month');
    expect(text).toContain('(default: day)');
    expect(text).toContain('table: analytics.fct_revenue');
    expect(text).toMatch(/<pre><code>SELECT sum\(amount\)/);
    // Versions: the current approved one, the history newest first, the form that compares two.
    expect(text).toMatch(/Current approved version: <strong>2<\/strong>/);
    expect(text.indexOf('<th scope="row">2</th>')).toBeLessThan(text.indexOf('<th scope="row">1</th>'));
    expect(text).toContain(`action="/${org.slug}/metrics/${ids.main}/versions"`);
    expect(text).toContain('finance_lead');
    // Evidence, discussion, change history.
    expect(text).toMatch(/1 validation run recorded/);
    expect(text).toContain(`href="/${org.slug}/threads/${ids.thread}"`);
    expect(text).toMatch(/clarification, open, 1 message/);
    expect(text).toContain(`href="/${org.slug}/metrics/${ids.main}/threads/new">Start a discussion</a>`);
    expect(text).toContain(`href="/${org.slug}/metrics/${ids.main}/challenges">Challenges</a>`);
    expect(text).toContain('<strong>Note</strong>');
    expect(text).toContain('<code>metric.created</code>');
    expect(text).toContain('Version 2 became released.');
    expect(text).toContain('<code>metric.discussion_changed</code>');
    // How to use it: this install's URL.
    expect(text).toContain(`${TEST_PUBLIC_APP_URL}/api/v1/metrics/${ids.main}/contract`);
    expect(text).toContain('Authorization: Bearer &lt;your API key&gt;');
    expect(text).toContain(`${TEST_PUBLIC_APP_URL}/graphql`);
    expect(text).toContain('get_metric_contract');
  });

  it('says the verdict reasons in sentences, linking the untrusted input', async () => {
    const main = await body(`/${org.slug}/metrics/${ids.main}`);
    expect(main).toContain('<span class="badge verdict-use_with_caution">Use with caution</span>');
    expect(main).toMatch(
      new RegExp(
        `<li data-reason="untrusted_input">It is computed from an input that cannot be trusted: <a href="/${org.slug}/metrics/${ids.base_rev}">base_rev</a>`,
      ),
    );
    const draft = await body(`/${org.slug}/metrics/${ids.draft}`);
    expect(draft).toContain('Use with caution');
    expect(draft).toMatch(/data-reason="pre_release">Its lifecycle status is DRAFT, not yet approved or released/);
    expect(draft).toMatch(/data-reason="never_validated">No validation run is recorded/);
    // What is empty is said plainly.
    expect(draft).toContain('No business definition is recorded for this metric');
    expect(draft).toContain('No versions are recorded.');
    expect(draft).toContain('No dimensions are recorded.');
  });

  it('links inputs and dependents to their pages', async () => {
    const main = await body(`/${org.slug}/metrics/${ids.main}`);
    expect(main).toMatch(new RegExp(`<h3>Inputs</h3>\\s*<ol><li><a href="/${org.slug}/metrics/${ids.base_rev}">`));
    const input = await body(`/${org.slug}/metrics/${ids.base_rev}`);
    expect(input).toContain('1 metric is computed from this one');
    expect(input).toContain(`<a href="/${org.slug}/metrics/${ids.main}">`);
    expect(input).toMatch(/This metric is related to|This metric names no related metric/);
  });

  it('is the page the contract names as canonical_url', async () => {
    const res = await fetch(new URL(`/api/v1/metrics/${ids.main}/contract`, base), {
      headers: { authorization: `Bearer ${org.key}` },
    });
    const url = new URL((await res.json()).data.canonical_url as string);
    expect(url.origin).toBe(TEST_PUBLIC_APP_URL);
    expect(url.pathname).toBe(`/${org.slug}/metrics/${ids.main}`);
    const opened = await page(url.pathname);
    expect(opened.status).toBe(200);
    expect(opened.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('compares two versions field by field, and refuses versions the metric does not have', async () => {
    const text = await body(`/${org.slug}/metrics/${ids.main}/versions?from=1&to=2`);
    expect(text).toContain('version 1 to 2');
    expect(text).toMatch(
      /<th scope="row">Status<\/th><td><strong>changed<\/strong><\/td><td>superseded<\/td><td>released<\/td>/,
    );
    expect(text).toMatch(/<span class="diff-same">.*First cut<\/span>/);
    expect(text).toMatch(/<span class="diff-removed">.*line two<\/span>/);
    expect(text).toMatch(/<span class="diff-added">.*line three<\/span>/);
    expect(text).toMatch(
      /Approvals<\/th><td><strong>changed<\/strong><\/td><td>.*\(empty\).*<\/td><td>approved by finance_lead/,
    );
    for (const query of ['from=1&to=9', 'from=1', 'to=2', '', `from=${'9'.repeat(5000)}&to=1`]) {
      const res = await page(`/${org.slug}/metrics/${ids.main}/versions?${query}`);
      expect(res.status, query).toBe(400);
      expect(await res.text()).toMatch(/(from|to) must be one of the metric&#39;s definition versions/);
    }
  });

  it('is a 404 page for another organization, an unknown id and a malformed id', async () => {
    const foreign = await page(`/${org.slug}/metrics/${ids.main}`, other.ownerSession);
    expect(foreign.status).toBe(404);
    // Another organization's metric under one's own organization.
    const crossed = await page(`/${other.slug}/metrics/${ids.main}`, other.ownerSession);
    expect(crossed.status).toBe(404);
    expect(await crossed.text()).not.toContain('fct_revenue');
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', `${ids.main}x`]) {
      expect((await page(`/${org.slug}/metrics/${id}`)).status, id).toBe(404);
      expect((await page(`/${org.slug}/metrics/${id}/versions?from=1&to=2`)).status, id).toBe(404);
    }
  });

  it('sends a signed-out visit to sign-in and back', async () => {
    const path = `/${org.slug}/metrics/${ids.main}`;
    const res = await page(path, null);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`/sign-in?next=${encodeURIComponent(path)}`);
  });

  it('shows markup in every text field as text', async () => {
    const main = await body(`/${org.slug}/metrics/${ids.main}`);
    const diff = await body(`/${org.slug}/metrics/${ids.main}/versions?from=1&to=2`);
    for (const text of [main, diff]) {
      expect(text).not.toContain('<script>alert');
      expect(text).not.toContain('<img src=x');
    }
    for (const field of [
      'name',
      'description',
      'alias',
      'included',
      'caveats',
      'sql',
      'dimension',
      'filter',
      'approval',
      'summary2',
      'thread',
      'details-main',
    ]) {
      expect(main, field).toContain(escapeHtml(marked(field)));
    }
    // Markdown escapes quotes its own way; the markup is text either way.
    expect(main).toContain('note &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(diff).toContain(escapeHtml(marked('summary2')));
  });

  it('costs the same statements whatever the history: 1 or 30 versions and validations', async () => {
    const statements = async (id: string) => {
      const res = await page(`/${org.slug}/metrics/${id}`);
      expect(res.status).toBe(200);
      await res.text();
      const timing = res.headers.get('server-timing') ?? '';
      const found = timing.match(/(\d+) queries/);
      if (!found) throw new Error(`no statement count in ${timing}`);
      return Number(found[1]);
    };
    // Warm: the first request of a shape may prepare statements.
    await statements(ids.base_rev);
    const short = await statements(ids.base_rev);
    const long = await statements(ids.long);
    expect(long).toBe(short);
    expect(long).toBeLessThanOrEqual(12);
    const text = await body(`/${org.slug}/metrics/${ids.long}`);
    expect(text).toContain('30 validation runs recorded; the newest 20 are listed');
    expect(text).toContain('(the newest 20 of 30)');
    expect(text.match(/<li><span class="badge run-passed">/g)).toHaveLength(20);
  });
});
