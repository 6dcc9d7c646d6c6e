/**
 * Write bodies are read in a worker thread (src/registry/read-off-thread.ts).
 * Through a real socket to a server with a 256 MB heap (as `npm start`
 * runs it; the memory test lowers the thread's alone): while the largest
 * YAML document the reading limits admit is read (seconds of work, which
 * stalled every request before), /healthz keeps answering; a document whose
 * reading passes the thread's memory or time answers 422 naming the limit,
 * writes nothing, and the next apply gets a fresh thread. In process: the
 * bound on documents waiting for a thread.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDocumentReader,
  DEFAULT_DOCUMENT_READ_SETTINGS,
  DocumentReadsBusyError,
} from '../../src/registry/read-off-thread.js';
import { usingPostgres } from '../helpers/database.js';
import { type HostileServer, startHostileServer } from './hostile-server.js';
import { type DocMetric, doc, docMetric, toYaml } from './support.js';

/** About as many metrics as a YAML document may hold within its 250,000 values. */
const LARGEST = 10_000;

const fullMetric = (i: number): DocMetric =>
  docMetric(`m${i}`, { tags: ['a', 'b'], grains: ['day', 'week'], dimensions: ['region', 'channel'] });

/** The largest YAML document, its last metric wrong: the whole text is read and validated, then refused. */
function largestYaml(organization: string, lastScope = 'nowhere'): string {
  const metrics = Array.from({ length: LARGEST }, (_, i) => fullMetric(i));
  metrics[LARGEST - 1] = { ...fullMetric(LARGEST - 1), scope: lastScope };
  return toYaml(doc(organization, metrics));
}

const small = (organization: string) => JSON.stringify(doc(organization, [docMetric('small')]));

/** /healthz asked again and again while `request` runs: the slowest answer, in ms. */
async function worstHealthWhile<T>(h: HostileServer, request: Promise<T>): Promise<{ result: T; worstMs: number }> {
  let done = false;
  let worstMs = 0;
  const polls = (async () => {
    while (!done) {
      const asked = performance.now();
      expect(await h.health()).toBe(200);
      worstMs = Math.max(worstMs, performance.now() - asked);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  try {
    return { result: await request, worstMs };
  } finally {
    done = true;
    await polls;
  }
}

/** A refusal of what the thread could not read, then the server as it was: answering, nothing written, applying. */
async function refusedThenApplies(h: HostileServer, body: string, within: RegExp) {
  const before = await h.written();
  const res = await h.send('/api/registry?dry_run=true', body, 'application/yaml');
  expect(res.status, `${res.body.slice(0, 500)}\n${h.server.output()}`).toBe(422);
  expect(JSON.parse(res.body).error).toMatch(within);
  expect(await h.health()).toBe(200);
  expect(await h.written()).toEqual(before);
  const next = await h.send('/api/registry', small(h.org.slug));
  expect(next.status, next.body).toBe(200);
  expect(h.server.child.exitCode).toBeNull();
}

describe.skipIf(!usingPostgres)('documents read in a worker thread, over a socket, 256 MB of heap', () => {
  describe('with the default budget', () => {
    let h: HostileServer;
    beforeAll(async () => {
      h = await startHostileServer();
    }, 120_000);
    afterAll(() => h?.stop());

    it('the largest YAML document is read while /healthz keeps answering', async () => {
      const started = performance.now();
      const { result, worstMs } = await worstHealthWhile(
        h,
        h.send('/api/registry?dry_run=true', largestYaml(h.org.slug), 'application/yaml'),
      );
      const readMs = performance.now() - started;
      expect(result.status, result.body.slice(0, 500)).toBe(400);
      // Its place is found in the thread, in the text.
      expect(JSON.parse(result.body).error).toMatch(
        new RegExp(`^metrics\\[${LARGEST - 1}\\]\\.scope \\(line \\d+, column \\d+\\): Invalid option`),
      );
      console.log(`read in ${Math.round(readMs)} ms; the slowest /healthz meanwhile: ${Math.round(worstMs)} ms`);
      // Before, /healthz waited for the whole read (seconds); a generous bound for a shared machine.
      expect(worstMs).toBeLessThan(1000);
    }, 120_000);
  });

  // V8 gives every thread the process's --max-old-space-size: without it, the thread's own heap applies.
  describe('with 32 MB of heap for a read (and none set for the process)', () => {
    let h: HostileServer;
    beforeAll(async () => {
      h = await startHostileServer({ DOCUMENT_READ_MEMORY_MB: '32' }, ['--max-semi-space-size=16']);
    }, 120_000);
    afterAll(() => h?.stop());

    it('a document that needs more answers 422 naming the memory; the next apply gets a fresh thread', async () => {
      await refusedThenApplies(
        h,
        largestYaml(h.org.slug, 'exploratory'),
        /^The document could not be read within \d+ MB of memory: send a smaller or simpler document$/,
      );
    }, 120_000);
  });

  describe('with 1 s for a read', () => {
    let h: HostileServer;
    beforeAll(async () => {
      h = await startHostileServer({ DOCUMENT_READ_TIMEOUT_MS: '1000' });
    }, 120_000);
    afterAll(() => h?.stop());

    it('a document that takes longer answers 422 naming the time; the next apply gets a fresh thread', async () => {
      await refusedThenApplies(h, largestYaml(h.org.slug, 'exploratory'), /^The document could not be read within 1 s/);
    }, 120_000);
  });
});

describe('documents waiting for a thread', () => {
  it('past the documents that may wait, or the time they may wait, are refused with a time to retry', async () => {
    const reader = createDocumentReader({
      ...DEFAULT_DOCUMENT_READ_SETTINGS,
      workers: 1,
      maxQueued: 1,
      maxWaitMs: 300,
    });
    const options = { format: 'registry', syntax: 'yaml', organization: 'acme' } as const;
    try {
      const reading = reader.readRegistry(largestYaml('acme'), options);
      const waiting = reader.readRegistry(small('acme'), { ...options, syntax: 'json' });
      const refused = reader.readRegistry(small('acme'), { ...options, syntax: 'json' });
      const busy = await refused.catch((error: unknown) => error);
      expect(busy).toBeInstanceOf(DocumentReadsBusyError);
      expect((busy as DocumentReadsBusyError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
      await expect(waiting).rejects.toBeInstanceOf(DocumentReadsBusyError);
      expect((await reading).ok).toBe(false);
      // The thread is kept: the next document is read at once.
      expect((await reader.readRegistry(small('acme'), { ...options, syntax: 'json' })).ok).toBe(true);
    } finally {
      await reader.close();
    }
  }, 120_000);
});
