/**
 * Bad registry documents over HTTP (issue 24, "Bad input everywhere"): 400
 * `{ error }` naming the place of the first problem, `details` with every
 * problem when there are several, and nothing written, whether the problem
 * is in the text, in one metric of many, or only visible against the
 * registry (a relationship target, an approver).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../rest/expectations.js';
import {
  doc,
  docMetric,
  metricsVersion,
  newTeamOrg,
  planOf,
  putRegistry,
  type RegistryDoc,
  type TeamOrg,
  totals,
  toYaml,
} from './support.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const prisma = () => t.database.prisma;

/** What an apply may write: nothing of it may change when a document is refused. */
async function written(org: TeamOrg) {
  const where = { orgId: org.id };
  return {
    metrics: await prisma().metric.findMany({ where, select: { key: true, updatedAt: true }, orderBy: { key: 'asc' } }),
    projects: await prisma().project.count({ where }),
    domains: await prisma().domain.count({ where }),
    versions: await prisma().metricVersion.count({ where: { metric: where } }),
    approvals: await prisma().approval.count({ where: { metric: where } }),
    relationships: await prisma().metricRelationship.count({ where: { metric: where } }),
    metricsVersion: await metricsVersion(prisma(), org.id),
  };
}

/** An organization with one metric applied already, so that "nothing written" has something to keep. */
async function orgWithOneMetric(): Promise<TeamOrg> {
  const org = await newTeamOrg(prisma());
  expect(planOf(await putRegistry(t, doc(org.slug, [docMetric('existing')]), { token: org.token })).totals).toEqual(
    totals({ created: 1 }),
  );
  return org;
}

async function refused(org: TeamOrg, body: RegistryDoc | string, expected: unknown, contentType?: string) {
  const before = await written(org);
  const res = await putRegistry(t, body, { token: org.token, contentType });
  expectError(res, 400, expected);
  expect(await written(org)).toEqual(before);
}

describe('400 naming the place, nothing written', () => {
  it('one bad metric among good ones (JSON: the path)', async () => {
    const org = await orgWithOneMetric();
    await refused(
      org,
      doc(org.slug, [docMetric('good', { domain: 'New Domain' }), docMetric('bad', { lifecycle_status: 'SHIPPED' })], {
        project: 'New Project',
      }),
      {
        error:
          'metrics[1].lifecycle_status: Invalid option: expected one of "DRAFT"|"VALIDATED"|"CANDIDATE"|"APPROVED"|"RELEASED"|"DEPRECATED"',
      },
    );
  });

  it('one bad metric among good ones (YAML: the path, line and column)', async () => {
    const org = await orgWithOneMetric();
    const yaml = toYaml(doc(org.slug, [docMetric('good'), docMetric('bad', { scope: 'galaxy' })]));
    const line = yaml.split('\n').findIndex((text) => text.includes('galaxy')) + 1;
    const column = (yaml.split('\n')[line - 1]?.indexOf('galaxy') ?? 0) + 1;
    await refused(org, yaml, {
      error: `metrics[1].scope (line ${line}, column ${column}): Invalid option: expected one of "enterprise_canonical"|"domain_canonical"|"exploratory"`,
    });
  });

  it('several problems: the first in `error`, all in `details`', async () => {
    const org = await orgWithOneMetric();
    const first = 'metrics[0].key: a key is at most 128 characters';
    const second = 'metrics[1].description: required';
    const third = 'metrics[1].sql_expresion: unknown field "sql_expresion"';
    const bad = { key: 'b', name: 'B', sql_expresion: 'x', sql_expression: 'x' };
    await refused(org, doc(org.slug, [docMetric('a'.repeat(129)), bad]), {
      error: first,
      // In the order the fields are written; a field left out comes after those written.
      details: [first, third, second],
    });
  });

  it('a problem visible only against the registry (a relationship to an unknown key)', async () => {
    const org = await orgWithOneMetric();
    await refused(
      org,
      doc(org.slug, [
        docMetric('existing', { name: 'Renamed' }),
        docMetric('new_one', { domain: 'Another Domain', relationships: [{ kind: 'variant_of', target: 'ghost' }] }),
      ]),
      { error: 'metrics[1].relationships[0].target: no metric with key "ghost" in the document or the registry' },
    );
  });

  it('an approver who is not a member', async () => {
    const org = await orgWithOneMetric();
    await refused(
      org,
      doc(org.slug, [
        docMetric('existing', {
          approvals: [
            {
              definition_version: null,
              approver_role: 'cfo',
              approver: 'nobody@example.com',
              decision: 'approved',
              decided_at: '2026-01-01T00:00:00Z',
            },
          ],
        }),
      ]),
      { error: 'metrics[0].approvals[0].approver: nobody@example.com is not a member of this organization' },
    );
  });

  it('a YAML anchor and alias: refused as text, not expanded', async () => {
    const org = await orgWithOneMetric();
    const yaml = `organization: ${org.slug}
defaults: &d
  project: Core
  owner_team: Finance
metrics:
  - key: a
    name: A
    description: d
    sql_expression: x
    time_semantics: *d
`;
    const before = await written(org);
    const res = await putRegistry(t, yaml, { token: org.token });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: expect.stringMatching(/^line 2, column \d+: anchors \(&d\) are not allowed$/),
      details: [
        expect.stringMatching(/^line 2, column \d+: anchors \(&d\) are not allowed$/),
        'line 10, column 21: aliases (*d) are not allowed',
      ],
    });
    expect(await written(org)).toEqual(before);
  });

  it('a billion laughs: 400 at once', async () => {
    const org = await orgWithOneMetric();
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 12; i++) {
      const [name, previous] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
      lines.push(`${name}: &${name} [${new Array(10).fill(`*${previous}`).join(',')}]`);
    }
    const yaml = `organization: ${org.slug}\nmetrics: []\n${lines.join('\n')}\n`;
    const res = await putRegistry(t, yaml, { token: org.token });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/^line 3, column \d+: anchors \(&a\) are not allowed$/);
  });

  it.each([
    ['YAML duplicate keys', 'organization: X\nmetrics: []\nmetrics: []\n', 'line 3, column 1: duplicate key'],
    ['a custom tag', 'organization: X\nmetrics: !foo []\n', 'line 2, column 10: Unresolved tag: !foo'],
    [
      'a merge key',
      'organization: X\nmetrics: []\ndefaults:\n  <<: {project: p}\n',
      'line 4, column 3: merge keys (<<) are not allowed',
    ],
    ['a NUL character', 'organization: X\u0000\nmetrics: []\n', 'the document contains a NUL character'],
  ])('%s', async (_name, template, error) => {
    const org = await orgWithOneMetric();
    await refused(org, template.replace('X', org.slug), { error });
  });

  it('several YAML documents', async () => {
    const org = await orgWithOneMetric();
    const before = await written(org);
    const res = await putRegistry(t, `organization: ${org.slug}\nmetrics: []\n---\nmetrics: []\n`, {
      token: org.token,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: 'line 3, column 1: a registry document is one YAML document: this one has several (a second "---")',
    });
    expect(await written(org)).toEqual(before);
  });

  it('nesting past 64 levels, as JSON and as YAML flow', async () => {
    const org = await orgWithOneMetric();
    let deep: unknown = {};
    for (let i = 0; i < 70; i++) deep = { n: deep };
    const deepJson = await putRegistry(t, doc(org.slug, [docMetric('deep', { time_semantics: deep })]), {
      token: org.token,
    });
    expect(deepJson.statusCode).toBe(400);
    expect(deepJson.json().error).toMatch(
      /^line 1, column \d+: metrics\[0\]\.time_semantics(\.n)+: nested deeper than 64 levels$/,
    );
    const before = await written(org);
    const res = await putRegistry(
      t,
      `organization: ${org.slug}\nmetrics: ${'['.repeat(10_000)}${']'.repeat(10_000)}\n`,
      {
        token: org.token,
      },
    );
    expect(res.statusCode).toBe(400);
    expect(await written(org)).toEqual(before);
  });

  it.each([
    ['truncated JSON', '{"organization": "x", "metrics": [', /^not valid JSON: /],
    ['an empty JSON body', '', /^not valid JSON: /],
  ])('%s', async (_name, body, error) => {
    const org = await orgWithOneMetric();
    const before = await written(org);
    const res = await putRegistry(t, body, { token: org.token, contentType: 'application/json' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: expect.stringMatching(error) });
    expect(await written(org)).toEqual(before);
  });

  it('an empty YAML body', async () => {
    const org = await orgWithOneMetric();
    await refused(org, '', { error: '(document): Invalid input: expected object, received null' });
  });

  // JSON's \u0000 escape and YAML's "\0" put a NUL in a value; PostgreSQL can store it in neither text nor jsonb.
  it.each([
    ['a JSON \\u0000 escape in a text field', 'name', 'Net\u0000Revenue'],
    ['a JSON \\u0000 escape in a JSON field', 'time_semantics', { zone: 'UTC\u0000' }],
  ])('%s: 400 naming the field, never a 500', async (_name, field, value) => {
    const org = await orgWithOneMetric();
    const before = await written(org);
    const res = await putRegistry(t, doc(org.slug, [docMetric('nul', { [field]: value })]), { token: org.token });
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 400,
      body: { error: expect.stringContaining(`metrics[0].${field}`) },
    });
    expect(await written(org)).toEqual(before);
  });

  it('a YAML "\\0" escape in a text field: 400 naming the field, never a 500', async () => {
    const org = await orgWithOneMetric();
    const before = await written(org);
    const yaml = `${toYaml(doc(org.slug, [docMetric('nul')]))}`.replace('name: Metric nul', 'name: "Metric\\0nul"');
    expect(yaml).toContain('\\0');
    const res = await putRegistry(t, yaml, { token: org.token });
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 400,
      body: { error: expect.stringContaining('metrics[0].name') },
    });
    expect(await written(org)).toEqual(before);
  });
});

describe('what is not an error', () => {
  it('a YAML document with a byte order mark applies', async () => {
    const org = await newTeamOrg(prisma());
    const res = await putRegistry(t, `\uFEFF${toYaml(doc(org.slug, [docMetric('bom')]))}`, { token: org.token });
    expect(planOf(res).totals).toEqual(totals({ created: 1 }));
  });

  it('YAML sent as text/yaml or application/x-yaml, JSON with a charset', async () => {
    const org = await newTeamOrg(prisma());
    const document = doc(org.slug, [docMetric('a')]);
    for (const contentType of ['text/yaml', 'application/x-yaml', 'application/yaml; charset=utf-8']) {
      const res = await putRegistry(t, toYaml(document), { token: org.token, contentType });
      expect(res.statusCode, contentType).toBe(200);
    }
    const json = await putRegistry(t, JSON.stringify(document), {
      token: org.token,
      contentType: 'application/json; charset=utf-8',
    });
    expect(planOf(json).totals).toEqual(totals({ unchanged: 1 }));
  });

  it('a body past the default 1 MiB and under 16 MiB is read (the raised limit)', async () => {
    const org = await newTeamOrg(prisma());
    const metrics = Array.from({ length: 120 }, (_, i) =>
      docMetric(`wide_${i}`, { description: `${'Long description. '.repeat(1000)}${i}` }),
    );
    const body = JSON.stringify(doc(org.slug, metrics));
    expect(body.length).toBeGreaterThan(2 * 1024 * 1024);
    const res = await putRegistry(t, body, { token: org.token, contentType: 'application/json' });
    expect(planOf(res).totals).toEqual(totals({ created: 120 }));
  });
});
