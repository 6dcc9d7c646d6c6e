/**
 * Uploads in parts (docs/registry.md, "Uploads in parts") over a listening
 * socket: a registry sent as several documents that name each other's
 * metrics, applied whole in one transaction; the same registry as one
 * document plans nothing after it; the rules across parts; refusals that
 * write nothing and keep the upload.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepOnce } from '../../src/changes/sweep.js';
import { parseRegistryDocument } from '../../src/registry/document.js';
import { ExportTooLarge, exportRegistry, NoSuchExportPart } from '../../src/registry/export.js';
import { createUpload, storeUploadPart, UPLOAD_TTL_MS, UploadTooLarge } from '../../src/registry/upload.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { lacks, POSTGRES } from '../helpers/needs.js';
import { doc, docMetric, newTeamOrg, type RegistryDoc, storedInputs, storedKeys, type TeamOrg } from './support.js';

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await startTestApp();
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(() => t.close());

const prisma = () => t.database.prisma;

interface Sent {
  status: number;
  body: { data?: Record<string, unknown> & { upload_id?: string }; error?: string; details?: string[] } | undefined;
}

async function send(token: string, method: string, path: string, body?: RegistryDoc | string): Promise<Sent> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = typeof body === 'string' ? 'application/yaml' : 'application/json';
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function openUpload(org: TeamOrg): Promise<string> {
  const created = await send(org.token, 'POST', '/api/registry/uploads');
  expect(created.status).toBe(201);
  return created.body?.data?.upload_id as string;
}

const part = (org: TeamOrg, id: string, n: number, document: RegistryDoc | string) =>
  send(org.token, 'PUT', `/api/registry/uploads/${id}/parts/${n}`, document);
const apply = (org: TeamOrg, id: string, query = '') =>
  send(org.token, 'POST', `/api/registry/uploads/${id}/apply${query ? `?${query}` : ''}`);

/** Three parts, each naming metrics of the others: inputs forward and back, a relationship across. */
function threeParts(slug: string): RegistryDoc[] {
  return [
    doc(slug, [
      docMetric('gross_margin', { metric_type: 'derived', inputs: ['revenue', 'cost_of_goods'] }),
      docMetric('orders', { relationships: [{ kind: 'related_to', target: 'cost_of_goods' }] }),
    ]),
    doc(slug, [
      docMetric('revenue'),
      docMetric('new_revenue', { relationships: [{ kind: 'supersedes', target: 'revenue' }] }),
    ]),
    doc(slug, [docMetric('cost_of_goods', { inputs: ['orders'] })]),
  ];
}

describe('an upload in parts', () => {
  it('applies parts that name each other as one document, then is gone', async () => {
    const org = await newTeamOrg(prisma(), 'upload');
    const id = await openUpload(org);
    const parts = threeParts(org.slug);
    for (const [i, document] of parts.entries()) expect((await part(org, id, i + 1, document)).status).toBe(200);

    const status = await send(org.token, 'GET', `/api/registry/uploads/${id}`);
    expect(status.status).toBe(200);
    expect(status.body?.data).toMatchObject({ upload_id: id, metrics: 5 });
    expect(
      (status.body?.data?.parts as { part: number; metrics: number }[] | undefined)?.map((p) => [p.part, p.metrics]),
    ).toEqual([
      [1, 2],
      [2, 2],
      [3, 1],
    ]);

    const dry = await apply(org, id, 'dry_run=true');
    expect(dry.status).toBe(200);
    expect(dry.body?.data).toMatchObject({ applied: false, dry_run: true, totals: { created: 5 } });
    expect(await storedKeys(prisma(), org.id)).toEqual([]);

    const applied = await apply(org, id);
    expect(applied.status).toBe(200);
    expect(applied.body?.data).toMatchObject({ upload_id: id, applied: true, totals: { created: 5, absent: 0 } });
    expect(await storedKeys(prisma(), org.id)).toEqual([
      'cost_of_goods',
      'gross_margin',
      'new_revenue',
      'orders',
      'revenue',
    ]);
    expect(await storedInputs(prisma(), org.id)).toEqual({
      cost_of_goods: ['orders'],
      gross_margin: ['revenue', 'cost_of_goods'],
    });
    const relationships = await prisma().metricRelationship.findMany({
      where: { metric: { orgId: org.id } },
      select: { kind: true, metric: { select: { key: true } }, target: { select: { key: true } } },
      orderBy: { kind: 'asc' },
    });
    expect(relationships).toEqual([
      { kind: 'supersedes', metric: { key: 'new_revenue' }, target: { key: 'revenue' } },
      { kind: 'related_to', metric: { key: 'orders' }, target: { key: 'cost_of_goods' } },
    ]);

    expect((await send(org.token, 'GET', `/api/registry/uploads/${id}`)).status).toBe(404);
    expect((await apply(org, id)).status).toBe(404);

    // The same metrics as one document: every hash the upload stored is the document's.
    const whole = doc(
      org.slug,
      parts.flatMap((document) => document.metrics),
    );
    const again = await send(org.token, 'PUT', '/api/registry', whole);
    expect(again.status).toBe(200);
    expect(again.body?.data).toMatchObject({ applied: false, totals: { unchanged: 5 } });
  });

  it('announces the trust an input in another part gives, as one document would', async () => {
    const [byParts, byDocument] = [await newTeamOrg(prisma(), 'trust-parts'), await newTeamOrg(prisma(), 'trust-doc')];
    const metrics = (slug: string) => [
      doc(slug, [
        docMetric('net_sales', { metric_type: 'derived', lifecycle_status: 'RELEASED', inputs: ['gross_sales'] }),
      ]),
      doc(slug, [docMetric('gross_sales', { lifecycle_status: 'DEPRECATED' })]),
    ];
    const id = await openUpload(byParts);
    for (const [i, document] of metrics(byParts.slug).entries()) await part(byParts, id, i + 1, document);
    expect((await apply(byParts, id)).status).toBe(200);
    const single = doc(
      byDocument.slug,
      metrics(byDocument.slug).flatMap((document) => document.metrics),
    );
    expect((await send(byDocument.token, 'PUT', '/api/registry', single)).status).toBe(200);

    const verdicts = async (org: TeamOrg) =>
      (
        await prisma().metricTrustState.findMany({
          where: { metric: { orgId: org.id } },
          select: { verdict: true, reasons: true, metric: { select: { key: true } } },
          orderBy: { metric: { key: 'asc' } },
        })
      ).map(({ metric, verdict, reasons }) => [metric.key, verdict, reasons]);
    const events = async (org: TeamOrg) =>
      (await prisma().changeEvent.findMany({ where: { orgId: org.id }, select: { type: true } }))
        .map((event) => event.type)
        .sort();
    expect(await verdicts(byParts)).toEqual(await verdicts(byDocument));
    expect((await verdicts(byParts)).find(([key]) => key === 'net_sales')?.[1]).not.toBe('use');
    expect(await events(byParts)).toEqual(await events(byDocument));
  });

  it('refuses a key listed in two parts, two sources, and two trust policies, at their places', async () => {
    const org = await newTeamOrg(prisma(), 'upload-rules');
    const id = await openUpload(org);
    expect((await part(org, id, 1, doc(org.slug, [docMetric('a'), docMetric('b')]))).status).toBe(200);
    const duplicate = await part(org, id, 2, doc(org.slug, [docMetric('c'), docMetric('b')]));
    expect(duplicate.status).toBe(400);
    expect(duplicate.body?.error).toBe('metrics[1].key: duplicate key "b": also parts[1].metrics[1]');

    const otherSource = await part(org, id, 2, {
      ...doc(org.slug, [docMetric('c')]),
      source: 'dbt:rides',
    } as RegistryDoc);
    expect(otherSource.status).toBe(400);
    expect(otherSource.body?.error).toContain("the parts of an upload are one source's");

    const policy = { tier_1: { stale_after_days: 10 } };
    expect((await part(org, id, 2, { ...doc(org.slug, [docMetric('c')]), trust_policy: policy })).status).toBe(200);
    const second = await part(org, id, 3, { ...doc(org.slug, [docMetric('d')]), trust_policy: policy });
    expect(second.status).toBe(400);
    expect(second.body?.error).toBe('trust_policy: part 2 sets the trust policy: one part of an upload may');

    // A part sent again replaces it: its keys are free again.
    expect((await part(org, id, 1, doc(org.slug, [docMetric('a')]))).status).toBe(200);
    expect((await part(org, id, 3, doc(org.slug, [docMetric('b')]))).status).toBe(200);
    const applied = await apply(org, id);
    expect(applied.status).toBe(200);
    expect(applied.body?.data).toMatchObject({ totals: { created: 3 }, trust_policy: 'changed' });
  });

  it('refuses references to no metric and cycles across parts, writing nothing and keeping the upload', async () => {
    const org = await newTeamOrg(prisma(), 'upload-refs');
    const id = await openUpload(org);
    await part(org, id, 1, doc(org.slug, [docMetric('a', { inputs: ['b'] })]));
    await part(org, id, 2, doc(org.slug, [docMetric('b', { inputs: ['a'] }), docMetric('c', { inputs: ['nowhere'] })]));
    const refused = await apply(org, id);
    expect(refused.status).toBe(400);
    expect(refused.body?.details).toEqual([
      'parts[2].metrics[1].inputs[0]: no metric with key "nowhere" in the document or the registry',
      'parts[2].metrics[0].inputs[0]: inputs form a cycle: b -> a -> b',
    ]);
    expect(await storedKeys(prisma(), org.id)).toEqual([]);
    expect((await send(org.token, 'GET', `/api/registry/uploads/${id}`)).status).toBe(200);
  });

  it('prunes what no part lists, with allow_removals past the limit', async () => {
    const org = await newTeamOrg(prisma(), 'upload-prune');
    const keys = Array.from({ length: 15 }, (_, i) => `m${String(i).padStart(2, '0')}`);
    expect(
      (
        await send(
          org.token,
          'PUT',
          '/api/registry',
          doc(
            org.slug,
            keys.map((key) => docMetric(key)),
          ),
        )
      ).status,
    ).toBe(200);
    const id = await openUpload(org);
    await part(org, id, 1, doc(org.slug, [docMetric('m00')]));
    await part(org, id, 2, doc(org.slug, [docMetric('m01'), docMetric('new_one')]));
    const refused = await apply(org, id, 'prune=true');
    expect(refused.status).toBe(400);
    expect(refused.body?.error).toContain('allow_removals=13');
    expect(await storedKeys(prisma(), org.id)).toEqual(keys);
    const applied = await apply(org, id, 'prune=true&allow_removals=13');
    expect(applied.status).toBe(200);
    expect(applied.body?.data).toMatchObject({ totals: { created: 1, unchanged: 2, removed: 13 } });
    expect(await storedKeys(prisma(), org.id)).toEqual(['m00', 'm01', 'new_one']);
  });

  it("is its organization's alone, and refuses bad ids, part numbers and callers", async () => {
    const [org, other] = [await newTeamOrg(prisma(), 'upload-own'), await newTeamOrg(prisma(), 'upload-other')];
    const id = await openUpload(org);
    expect((await send(other.token, 'GET', `/api/registry/uploads/${id}`)).status).toBe(404);
    expect((await part(other, id, 1, doc(other.slug, [docMetric('x')]))).status).toBe(404);
    expect((await send(other.token, 'DELETE', `/api/registry/uploads/${id}`)).status).toBe(404);
    expect((await send(org.token, 'GET', '/api/registry/uploads/not-an-id')).body?.error).toBe('Upload not found');
    const badPart = await part(org, id, 0, doc(org.slug, [docMetric('x')]));
    expect(badPart).toMatchObject({ status: 400, body: { error: 'part must be a whole number from 1 to 100' } });
    expect((await part(org, id, 101, doc(org.slug, [docMetric('x')]))).status).toBe(400);
    expect((await send(org.key, 'POST', '/api/registry/uploads')).status).toBe(401);
    const otherOrg = await part(org, id, 1, doc(other.slug, [docMetric('x')]));
    expect(otherOrg.status).toBe(403);
    const empty = await apply(org, id);
    expect(empty).toMatchObject({ status: 400, body: { error: '(document): the upload has no parts yet' } });
    expect((await send(org.token, 'DELETE', `/api/registry/uploads/${id}`)).status).toBe(204);
    expect((await send(org.token, 'DELETE', `/api/registry/uploads/${id}`)).status).toBe(404);
  });

  it('keeps at most 5 uploads open, and parts sent at once never share a key', async () => {
    const org = await newTeamOrg(prisma(), 'upload-many');
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await openUpload(org));
    const sixth = await send(org.token, 'POST', '/api/registry/uploads');
    expect(sixth.status).toBe(409);
    const [id] = ids as [string];
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        part(org, id, n + 1, doc(org.slug, [docMetric(`own_${n}`), docMetric('shared')])),
      ),
    );
    // One part is stored; each other one lists "shared" too (400), or found 16 writes queued before it (409).
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.every((r) => [200, 400, 409].includes(r.status))).toBe(true);
    expect(results.filter((r) => r.status === 400).length).toBeGreaterThanOrEqual(16);
    const status = await send(org.token, 'GET', `/api/registry/uploads/${id}`);
    expect(status.body?.data).toMatchObject({ metrics: 2 });
  });

  it.skipIf(lacks(POSTGRES))("opens an upload while an apply holds the organization's row", async () => {
    const org = await newTeamOrg(prisma(), 'upload-busy');
    // An apply bumps the organization's metrics_version: its row stays locked until the apply commits.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked = () => {};
    const holding = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const apply = prisma().$transaction(
      async (tx) => {
        await tx.$executeRaw`UPDATE "organization" SET "metrics_version" = "metrics_version" WHERE "id" = ${org.id}::uuid`;
        locked();
        await held;
      },
      { timeout: 60_000 },
    );
    await holding;
    try {
      const created = await send(org.token, 'POST', '/api/registry/uploads');
      expect(created.status).toBe(201);
      const id = created.body?.data?.upload_id as string;
      expect((await part(org, id, 1, doc(org.slug, [docMetric('a')]))).status).toBe(200);
    } finally {
      release();
      await apply;
    }
  });

  it('refuses a part past the metrics or bytes an upload holds, keeping what it had', async () => {
    const org = await newTeamOrg(prisma(), 'upload-bounds');
    const { upload_id: id } = await createUpload(prisma(), org.id);
    const parsed = (metrics: string[]) => {
      const read = parseRegistryDocument(
        doc(
          org.slug,
          metrics.map((key) => docMetric(key)),
        ),
      );
      if (!read.ok) throw new Error('the test document is valid');
      return read.document;
    };
    const limits = { metrics: 3, bytes: 1000 };
    await storeUploadPart(prisma(), org.id, id, 1, parsed(['a', 'b']), 400, limits);
    await expect(storeUploadPart(prisma(), org.id, id, 2, parsed(['c', 'd']), 400, limits)).rejects.toEqual(
      new UploadTooLarge('metrics'),
    );
    await expect(storeUploadPart(prisma(), org.id, id, 2, parsed(['c']), 601, limits)).rejects.toEqual(
      new UploadTooLarge('bytes'),
    );
    // Part 1 sent again counts once: its own metrics and bytes are replaced, not added.
    const summary = await storeUploadPart(prisma(), org.id, id, 1, parsed(['a', 'b', 'c']), 1000, limits);
    expect(summary).toMatchObject({ metrics: 3, parts: [{ part: 1, metrics: 3 }] });
  });

  it('is removed by the sweep once expired, with its parts', async () => {
    const org = await newTeamOrg(prisma(), 'upload-expiry');
    const opened = new Date(Date.now() - UPLOAD_TTL_MS - 60_000);
    const { upload_id: id } = await createUpload(prisma(), org.id, opened);
    expect((await send(org.token, 'GET', `/api/registry/uploads/${id}`)).status).toBe(404);
    const kept = await openUpload(org);
    await part(org, kept, 1, doc(org.slug, [docMetric('a')]));
    await sweepOnce(prisma(), { intervalMs: 1, retentionDays: 30, trust: { staleValidationDays: 30 } });
    expect(await prisma().registryUpload.findUnique({ where: { id } })).toBeNull();
    expect((await send(org.token, 'GET', `/api/registry/uploads/${kept}`)).body?.data).toMatchObject({ metrics: 1 });
  });

  it('a registry exported in parts is uploaded back in those parts with nothing to change', async () => {
    const org = await newTeamOrg(prisma(), 'upload-export');
    const metrics = [
      docMetric('e_total', { metric_type: 'derived', inputs: ['a_base', 'c_base'] }),
      docMetric('a_base'),
      docMetric('b_other', { relationships: [{ kind: 'related_to', target: 'e_total' }] }),
      docMetric('c_base'),
      docMetric('d_more'),
    ];
    const policy = { tier_3: { stale_after_days: 10 } };
    expect(
      (await send(org.token, 'PUT', '/api/registry', { ...doc(org.slug, metrics), trust_policy: policy })).status,
    ).toBe(200);
    const partSize = 2;
    await expect(exportRegistry(prisma(), org.id, { partSize })).rejects.toEqual(new ExportTooLarge(5, 3));
    await expect(exportRegistry(prisma(), org.id, { partSize, part: 4 })).rejects.toEqual(new NoSuchExportPart(3));
    const parts = await Promise.all([1, 2, 3].map((n) => exportRegistry(prisma(), org.id, { partSize, part: n })));
    expect(parts.map((p) => p.metrics.map((m) => m.key))).toEqual([
      ['a_base', 'b_other'],
      ['c_base', 'd_more'],
      ['e_total'],
    ]);
    expect(parts.map((p) => p.trust_policy)).toEqual([policy, undefined, undefined]);

    const id = await openUpload(org);
    for (const [i, exported] of parts.entries()) {
      expect((await part(org, id, i + 1, exported as unknown as RegistryDoc)).status).toBe(200);
    }
    const applied = await apply(org, id, 'prune=true');
    expect(applied.body?.data).toMatchObject({ applied: false, trust_policy: 'unchanged', totals: { unchanged: 5 } });
  });

  it('GET /api/registry?part=N: the part, the count of parts in X-Registry-Parts, and 400 past the last', async () => {
    const org = await newTeamOrg(prisma(), 'export-part');
    await send(org.token, 'PUT', '/api/registry', doc(org.slug, [docMetric('a'), docMetric('b')]));
    const get = (query: string) =>
      fetch(`${base}/api/registry?${query}`, { headers: { authorization: `Bearer ${org.token}` } });
    const first = await get('part=1');
    expect(first.status).toBe(200);
    expect(first.headers.get('x-registry-parts')).toBe('1');
    expect(((await first.json()) as { metrics: { key: string }[] }).metrics.map((m) => m.key)).toEqual(['a', 'b']);
    expect((await get('')).headers.get('x-registry-parts')).toBe('1');
    for (const [query, error] of [
      ['part=2', 'part must be a whole number from 1 to 1'],
      ['part=0', 'part must be a whole number from 1'],
      ['part=x', 'part must be a whole number from 1'],
      ['part=1&format=osi', 'part goes with format=registry'],
    ]) {
      const res = await get(query as string);
      expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([400, error]);
    }
  });
});
