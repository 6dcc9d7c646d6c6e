/**
 * Writes of one organization take turns without holding a pooled connection
 * while they wait (src/registry/write-queue.ts), on one instance and across
 * instances; a writer that may wait no longer gets 409 with Retry-After
 * naming the write in progress; and another organization's reads keep
 * answering meanwhile. Every request goes through a real listening socket.
 */
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { usingPostgres } from '../helpers/database.js';
import { holdRegistryLock } from '../helpers/registry-lock.js';
import { type DocMetric, doc, docMetric, HOST, newTeamOrg, type RegistryDoc, type TeamOrg } from './support.js';

const pad = (n: number) => String(n).padStart(4, '0');

/** The same metrics, each described as written by `writer`: an apply of it changes every one. */
function documentBy(org: TeamOrg, size: number, writer: string): RegistryDoc {
  const metrics: DocMetric[] = Array.from({ length: size }, (_, i) =>
    docMetric(`m${pad(i)}`, { description: `Written by ${writer}.` }),
  );
  return doc(org.slug, metrics);
}

async function listen(app: FastifyInstance): Promise<string> {
  return app.listen({ port: 0, host: '127.0.0.1' });
}

interface Answer {
  status: number;
  retryAfter: string | null;
  body: { error?: string; data?: { applied: boolean } };
}

async function put(base: string, org: TeamOrg, body: RegistryDoc, query = ''): Promise<Answer> {
  const res = await fetch(`${base}/api/registry${query}`, {
    method: 'PUT',
    headers: { host: HOST, authorization: `Bearer ${org.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
}

async function postValidations(base: string, org: TeamOrg, keys: string[], ranAt: string): Promise<Answer> {
  const res = await fetch(`${base}/api/validations`, {
    method: 'POST',
    headers: { host: HOST, authorization: `Bearer ${org.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ results: keys.map((key) => ({ metric_key: key, ran_at: ranAt, status: 'passed' })) }),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
}

/** A refusal as documented: 409, Retry-After in whole seconds, naming the write in progress. */
function expectBusy(answer: Answer, holder: RegExp): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(409);
  expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number.isInteger(Number(answer.retryAfter))).toBe(true);
  expect(answer.body.error).toMatch(holder);
  expect(answer.body.error).toMatch(/is in progress for this organization/);
}

let t: TestApp;
let base: string;
let second: FastifyInstance;
let secondBase: string;

beforeAll(async () => {
  // The service's pool of 10: a quarter (2) for writes.
  t = await startTestApp({ poolSize: 10, logger: pino({ level: 'error' }) });
  base = await listen(t.app);
  // Another instance over the same database, with queues of its own.
  second = await buildTestInstance(t.database, { logger: pino({ level: 'error' }) });
  secondBase = await listen(second);
}, 60_000);
afterAll(async () => {
  await second?.close();
  await t?.close();
});

const prisma = () => t.database.prisma;

async function descriptions(orgId: string): Promise<string[]> {
  const rows = await prisma().metric.findMany({ where: { orgId }, select: { description: true } });
  return rows.map((row) => row.description);
}

describe.skipIf(!usingPostgres)('concurrent writes of one organization', () => {
  it('10 applies of 2,000 metrics at once: each 200 or 409 with Retry-After, never a 5xx; the registry is one of them whole; another organization reads meanwhile', async () => {
    const org = await newTeamOrg(prisma());
    const other = await newTeamOrg(prisma(), 'other');
    expect((await put(base, other, documentBy(other, 50, 'other'))).status).toBe(200);
    const size = 2000;

    let applying = true;
    const reads: number[] = [];
    const reader = (async () => {
      while (applying) {
        const res = await fetch(`${base}/api/v1/metrics?pageSize=20`, {
          headers: { authorization: `Bearer ${other.key}` },
        });
        expect(res.status).toBe(200);
        expect((await res.json()).pagination.total).toBe(50);
        reads.push(res.status);
      }
    })();
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => put(base, org, documentBy(org, size, `writer ${i}`))),
    ).finally(() => {
      applying = false;
    });
    await reader;

    for (const answer of answers) {
      if (answer.status === 200) expect(answer.body.data?.applied).toBe(true);
      else expectBusy(answer, /An apply by service token "CI"/);
    }
    const applied = answers.flatMap((answer, i) => (answer.status === 200 ? [`Written by writer ${i}.`] : []));
    expect(applied.length).toBeGreaterThan(0);
    // Each apply changed every metric: the registry is the last one's, whole.
    const stored = new Set(await descriptions(org.id));
    expect(stored.size).toBe(1);
    expect(applied).toContain([...stored][0]);
    expect(await prisma().metric.count({ where: { orgId: org.id } })).toBe(size);
    expect(reads.length).toBeGreaterThan(0);
  }, 300_000);

  it('applies and validation results on two instances take turns: all succeed, in one order', async () => {
    const org = await newTeamOrg(prisma());
    expect((await put(base, org, documentBy(org, 300, 'start'))).status).toBe(200);
    const keys = Array.from({ length: 300 }, (_, i) => `m${pad(i)}`);
    const writes = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => put(i % 2 ? secondBase : base, org, documentBy(org, 300, `writer ${i}`))),
      ...Array.from({ length: 4 }, (_, i) =>
        postValidations(i % 2 ? base : secondBase, org, keys, `2026-03-0${i + 1}T00:00:00Z`),
      ),
    ]);
    for (const answer of writes) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(new Set(await descriptions(org.id)).size).toBe(1);
    expect(await prisma().validation.count({ where: { metric: { orgId: org.id } } })).toBe(4 * 300);
    // The feed's events are contiguous: no two writers numbered theirs from the same state.
    const seqs = (
      await prisma().changeEvent.findMany({ where: { orgId: org.id }, select: { seq: true }, orderBy: { seq: 'asc' } })
    ).map((row) => Number(row.seq));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => (seqs[0] ?? 0) + i));
  }, 300_000);
});

describe.skipIf(!usingPostgres)('a writer that may wait no longer', () => {
  let impatient: FastifyInstance;
  let impatientBase: string;
  beforeAll(async () => {
    impatient = await buildTestInstance(t.database, { registryWrites: { maxWaitMs: 1500, maxQueued: 1 } });
    impatientBase = await listen(impatient);
  });
  afterAll(() => impatient?.close());

  /** Holds the organization's lock as another instance's apply would, until the returned release is called. */
  const holdLock = (orgId: string, label: string) => holdRegistryLock(prisma(), orgId, label);

  it('gets 409 naming the apply in progress on another instance, its writer and start; the queue is bounded; nothing is written', async () => {
    const org = await newTeamOrg(prisma());
    const token = await prisma().serviceToken.findFirstOrThrow({ where: { orgId: org.id } });
    const release = await holdLock(org.id, `registry:apply:t:${token.id}`);
    const started = Date.now();
    let answers: Answer[];
    try {
      // One tries the lock, one waits behind it, the third finds the queue full.
      answers = await Promise.all([
        put(impatientBase, org, documentBy(org, 10, 'a')),
        postValidations(impatientBase, org, ['m0000'], '2026-03-01T00:00:00Z'),
        put(impatientBase, org, documentBy(org, 10, 'c')),
      ]);
    } finally {
      await release();
    }
    for (const answer of answers) {
      expectBusy(answer, /^An apply by service token "CI" \(started \d{4}-\d\d-\d\dT[\d:.]+Z\) is in progress/);
    }
    const since = new Date(/started ([^)]+)\)/.exec(answers[0]?.body.error ?? '')?.[1] ?? 0).getTime();
    expect(Math.abs(since - started)).toBeLessThan(60_000);
    expect(await prisma().metric.count({ where: { orgId: org.id } })).toBe(0);
    expect(await prisma().changeEvent.count({ where: { orgId: org.id } })).toBe(0);

    // Once it has ended, the next write goes through.
    expect((await put(impatientBase, org, documentBy(org, 10, 'd'))).status).toBe(200);
  }, 60_000);

  it('names a user for a session’s write, and a write it cannot name as such', async () => {
    const org = await newTeamOrg(prisma());
    const byUser = await holdLock(org.id, `registry:validations:u:${org.ownerId}`);
    const answer = await put(impatientBase, org, documentBy(org, 1, 'a')).finally(byUser);
    expectBusy(answer, /^A recording of validation results by user "Olivia Owner" \(started /);

    // The CLI and the sweep wait in the database and show no label.
    const unnamed = await holdLock(org.id, '');
    const anonymous = await put(impatientBase, org, documentBy(org, 1, 'a')).finally(unnamed);
    expectBusy(anonymous, /^Another write of this organization’s registry \(started /);
  }, 60_000);
});
