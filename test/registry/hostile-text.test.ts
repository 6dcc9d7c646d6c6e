/**
 * Hostile text on the write routes (black-box findings, issues 24 and 27):
 * a 400 naming the place, never a 500, and nothing written.
 *
 * - A lone UTF-16 surrogate (`"\ud800"`) is valid JSON text but cannot be
 *   stored; it reaches Prisma/PostgreSQL and comes back as a 500 on
 *   PUT /api/registry (JSON, YAML, format=dbt), POST /api/validations and
 *   POST /api/service-tokens. A dry run of the same document answers 200.
 * - YAML nested far past 64 levels is refused, but with the parser's
 *   "Maximum call stack size exceeded" instead of the documented
 *   "nested deeper than 64 levels".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ordersManifest, revenueMetric } from './hostile-server.js';
import {
  doc,
  docMetric,
  HOST,
  newTeamOrg,
  planOf,
  postValidations,
  putRegistry,
  storedKeys,
  type TeamOrg,
} from './support.js';

let t: TestApp;
let org: TeamOrg;
beforeAll(async () => {
  t = await startTestApp();
  org = await newTeamOrg(t.database.prisma, 'qa1');
  expect(
    planOf(await putRegistry(t, doc(org.slug, [docMetric('existing')]), { token: org.token })).totals.created,
  ).toBe(1);
});
afterAll(() => t.close());

/** The JSON text of a one-metric document whose name holds a lone surrogate escape. */
const surrogateJson = () =>
  JSON.stringify(doc(org.slug, [docMetric('existing'), docMetric('lone', { name: 'LONE_NAME' })])).replace(
    'LONE_NAME',
    'a\\ud800b',
  );

describe('a lone surrogate is a 400, never a 500', () => {
  it('PUT /api/registry (JSON): the dry run and the apply agree, 400 and nothing written', async () => {
    const before = await storedKeys(t.database.prisma, org.id);
    const res = await putRegistry(t, surrogateJson(), { token: org.token, contentType: 'application/json' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/metrics\[1\]\.name/);
    expect(await storedKeys(t.database.prisma, org.id)).toEqual(before);
    const dry = await putRegistry(t, surrogateJson(), {
      token: org.token,
      contentType: 'application/json',
      query: 'dry_run=true',
    });
    expect(dry.statusCode).toBe(400);
  });

  it('PUT /api/registry (YAML double-quoted escape)', async () => {
    const yaml = `organization: ${org.slug}\ndefaults: {project: Core, owner_team: Fin}\nmetrics:\n  - key: lone\n    name: "a\\ud800"\n    description: d\n    sql_expression: x\n`;
    const res = await putRegistry(t, yaml, { token: org.token });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/metrics\[0\]\.name/);
  });

  it('POST /api/validations details', async () => {
    const body = `{"results":[{"metric_key":"existing","ran_at":"2026-11-01T00:00:00Z","status":"passed","details":"a\\ud800"}]}`;
    const res = await postValidations(t, body, { token: org.token });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/results\[0\]\.details/);
    expect(await t.database.prisma.validation.count({ where: { metric: { orgId: org.id } } })).toBe(0);
  });

  it('POST /api/service-tokens name', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/api/service-tokens',
      headers: { host: HOST, cookie: `session=${org.ownerSession}`, 'content-type': 'application/json' },
      payload: '{"name":"a\\ud800","scopes":["registry:write"]}',
    });
    expect(res.statusCode).toBe(400);
  });

  it('PUT /api/registry?format=dbt (a metric label)', async () => {
    const manifest = ordersManifest([revenueMetric({ label: 'LONE_NAME' })]);
    const body = JSON.stringify(manifest).replace('LONE_NAME', 'R\\udc00');
    const res = await putRegistry(t, body, { token: org.token, contentType: 'application/json', query: 'format=dbt' });
    expect(res.statusCode).toBe(400);
    expect(await storedKeys(t.database.prisma, org.id)).toEqual(['existing']);
  });
});

describe('YAML nested far past 64 levels', () => {
  it('is refused with the documented nesting message, not a stack overflow', async () => {
    const res = await putRegistry(t, `a: ${'['.repeat(100_000)}${']'.repeat(100_000)}`, { token: org.token });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/nested deeper than 64 levels/);
    expect(res.json().error).not.toMatch(/call stack/i);
  });
});
