/**
 * Imports applied and served: each real dbt semantic manifest and OSI
 * document of the shared fixtures goes through PUT /api/registry?format=...
 * with a service token, and every metric is then read back over the public
 * routes with what the importer mapped. Skipped where the shared fixtures are
 * absent (a user's clone); CI has them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createServiceToken } from '../../src/admin/service-tokens.js';
import { importDbtManifest } from '../../src/importers/dbt.js';
import { importOsiDocument } from '../../src/importers/osi.js';
import type { RegistryMetricInput } from '../../src/importers/registry-document-input.js';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const shared = new URL('../../../shared/fixtures/', import.meta.url);
const hasFixtures = existsSync(shared);
const read = (path: string) => readFileSync(new URL(path, shared), 'utf8');

interface Detail {
  id: string;
  key: string;
  name: string;
  description: string;
  sql_expression: string;
  source_refs: { table: string }[];
  grains: string[];
  lifecycle_status: string;
  policy_tier: string;
  scope: string;
  aliases: string[];
}

describe.skipIf(!hasFixtures)('imports applied and served', () => {
  let t: TestApp;
  const r = registry();
  const orgs = Array.from({ length: 8 }, () => r.org());
  const key = orgs.map((org) => org.key());
  const tokens: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ fixture: r.build(), defaultRateLimit: 100_000, serviceTokenRateLimit: 1000 });
    for (const org of orgs) {
      const token = await createServiceToken(t.database.prisma, {
        org: org.slug,
        name: 'ci',
        scopes: ['registry:write'],
      });
      tokens.push(token.secret);
    }
  });
  afterAll(() => t.close());

  const put = (org: number, body: string, query: string, type = 'application/json') =>
    t.inject({
      method: 'PUT',
      url: `/api/registry${query}`,
      headers: { authorization: `Bearer ${tokens[org]}`, 'content-type': type },
      payload: body,
    });

  /** Every metric of the organization, by key, as the detail route serves it. */
  async function served(org: number): Promise<Map<string, Detail & { trust?: { verdict: string } }>> {
    const list = await t.get('/api/v1/metrics?pageSize=100', key[org]?.secret);
    expect(list.statusCode).toBe(200);
    const details = new Map<string, Detail>();
    for (const item of list.json().data as { id: string }[]) {
      const detail = await t.get(`/api/v1/metrics/${item.id}`, key[org]?.secret);
      expect(detail.statusCode).toBe(200);
      const metric = detail.json().data.metric as Detail;
      details.set(metric.key, metric);
    }
    return details;
  }

  async function verdict(org: number, id: string): Promise<string> {
    const contract = await t.get(`/api/v1/metrics/${id}/contract`, key[org]?.secret);
    return contract.json().data.trust.verdict;
  }

  function expectServedAsImported(details: Map<string, Detail>, imported: RegistryMetricInput[]) {
    expect([...details.keys()].sort()).toEqual(imported.map((metric) => metric.key).sort());
    for (const metric of imported) {
      const detail = details.get(metric.key);
      expect(detail?.name).toBe(metric.name);
      expect(detail?.description).toBe(metric.description);
      expect(detail?.sql_expression).toBe(metric.sql_expression);
      expect(detail?.source_refs.map((ref) => ref.table)).toEqual((metric.source_refs ?? []).map((ref) => ref.table));
      expect(detail?.grains).toEqual(metric.grains ?? []);
    }
  }

  const manifests = hasFixtures ? readdirSync(new URL('dbt/', shared)).filter((f) => f.endsWith('.json')) : [];

  it.each(manifests.map((file, i) => [file, i]))('dbt manifest %s applies and is served', async (file, i) => {
    const text = read(`dbt/${file}`);
    const applied = await put(i, text, '?format=dbt');
    expect(applied.statusCode).toBe(200);
    const imported = importDbtManifest(JSON.parse(text), { organization: orgs[i]?.slug ?? '' }).metrics;
    expect(applied.json().data.totals).toEqual({
      created: imported.length,
      restored: 0,
      updated: 0,
      unchanged: 0,
      absent: 0,
      removed: 0,
    });
    const details = await served(i);
    expectServedAsImported(details, imported);
    // Governance from config.meta.governance, and the verdict it implies.
    for (const metric of imported) {
      const detail = details.get(metric.key) as Detail;
      expect(detail.lifecycle_status).toBe(metric.lifecycle_status ?? 'DRAFT');
      if (metric.policy_tier) expect(detail.policy_tier).toBe(metric.policy_tier);
      if (metric.scope) expect(detail.scope).toBe(metric.scope);
      if (metric.aliases) expect(detail.aliases).toEqual(metric.aliases);
    }
  });

  it('governed metrics of the synthetic manifest carry their governance and verdicts', async () => {
    const org = manifests.indexOf('synthetic-legacy.semantic_manifest.json');
    expect(org).toBeGreaterThanOrEqual(0);
    const details = await served(org);
    const net = details.get('net_revenue_00') as Detail;
    expect([net.lifecycle_status, net.policy_tier, net.scope]).toEqual(['RELEASED', 'tier_1', 'enterprise_canonical']);
    expect(net.aliases).toEqual(['net sales', 'NR']);
    // Released but never validated: use_with_caution; deprecated: do_not_use; a candidate: pre-release.
    expect(await verdict(org, net.id)).toBe('use_with_caution');
    expect(await verdict(org, (details.get('revenue_00') as Detail).id)).toBe('do_not_use');
    expect(await verdict(org, (details.get('average_order_value_00') as Detail).id)).toBe('use_with_caution');
  });

  it('a manifest imported again changes nothing; one changed description updates exactly that metric', async () => {
    const org = manifests.indexOf('synthetic-latest.semantic_manifest.json');
    const text = read('dbt/synthetic-latest.semantic_manifest.json');
    const before = await served(org);
    const etags = new Map<string, string | undefined>();
    for (const [k, metric] of before) {
      etags.set(k, (await t.get(`/api/v1/metrics/${metric.id}`, key[org]?.secret)).headers.etag as string);
    }
    const listTag = (await t.get('/api/v1/metrics?pageSize=100', key[org]?.secret)).headers.etag;

    const again = await put(org, text, '?format=dbt');
    expect(again.json().data.totals).toMatchObject({ created: 0, updated: 0, removed: 0, unchanged: before.size });
    expect((await t.get('/api/v1/metrics?pageSize=100', key[org]?.secret)).headers.etag).toBe(listTag);

    const manifest = JSON.parse(text);
    const target = manifest.metrics.find((m: { name: string }) => m.name === 'orders_00');
    target.description = 'Distinct orders of channel 00, internal orders excluded.';
    const changed = await put(org, JSON.stringify(manifest), '?format=dbt');
    expect(changed.json().data.totals).toMatchObject({ created: 0, updated: 1, unchanged: before.size - 1 });
    expect(changed.json().data.plan.filter((entry: { result: string }) => entry.result === 'updated')).toEqual([
      {
        key: 'orders_00',
        result: 'updated',
        // the description is also the definition's statement of what is counted (docs/importers.md#meaning)
        changed_fields: ['description', 'business_definition'],
        changes: expect.any(Array),
      },
    ]);
    for (const [k, metric] of before) {
      const tag = (await t.get(`/api/v1/metrics/${metric.id}`, key[org]?.secret)).headers.etag;
      if (k === 'orders_00') expect(tag).not.toBe(etags.get(k));
      else expect(tag).toBe(etags.get(k));
    }
    expect((await t.get('/api/v1/metrics?pageSize=100', key[org]?.secret)).headers.etag).not.toBe(listTag);
  });

  const osiDocuments = hasFixtures
    ? readdirSync(new URL('osi/', shared)).filter((f) => f.endsWith('.yaml') && !f.includes('osi-schema'))
    : [];

  it.each(osiDocuments.map((file, i) => [file, 4 + i]))('OSI document %s applies and is served', async (file, org) => {
    if (org >= orgs.length) throw new Error('more OSI examples than organizations in this test');
    const text = read(`osi/${file}`);
    const applied = await put(org, text, '?format=osi', 'application/yaml');
    expect(applied.statusCode).toBe(200);
    const imported = importOsiDocument(parse(text), { organization: orgs[org]?.slug ?? '' }).metrics;
    expect(applied.json().data.totals.created).toBe(imported.length);
    expectServedAsImported(await served(org), imported);
  });

  it('a file that is not what format= says is a 400 naming the problem, nothing written', async () => {
    const notManifest = await put(0, JSON.stringify({ nodes: {} }), '?format=dbt');
    expect(notManifest.statusCode).toBe(400);
    expect(notManifest.json().error).toMatch(/semantic manifest/);
    const truncated = await put(0, read('dbt/synthetic-legacy.semantic_manifest.json').slice(0, 500), '?format=dbt');
    expect(truncated.statusCode).toBe(400);
    expect(truncated.json().error).toMatch(/not valid JSON/);
    const unknownFormat = await put(0, '{}', '?format=lookml');
    expect(unknownFormat.json()).toEqual({ error: 'format must be one of registry, dbt, osi' });
  });
});
