/**
 * Documents that callers send are read off the event loop (docs/registry.md,
 * "Reading documents"): in worker threads (src/registry/read-worker.ts),
 * each with a heap of its own and a time to read in. What escapes the
 * bounds counted while reading ends that thread, not the server, and the
 * server goes on answering while a large document is read. At most
 * `workers` documents are read at once on an instance; a document waits
 * for a thread for at most `maxWaitMs`, behind at most `maxQueued` others,
 * and is refused otherwise ({@link DocumentReadsBusyError}). A thread is
 * kept between documents (its start-up costs more than a small document's
 * read) until it has been idle a while, and never kept once it has failed.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ResourceLimits, Worker } from 'node:worker_threads';
import type { DbtEvidence } from '../importers/dbt-evidence.js';
import type { RegistryDocument } from './document.js';
import type { ReadAnswer, ReadJobKind, ReadJobs, ReadReply, ReadRequest, ReadyMessage } from './read-worker.js';
import type { RegistryError } from './registry-error.js';
import type { SourceOptions } from './source.js';
import { locateImported } from './source.js';
import type { ValidationBatch } from './validations.js';
import { DEFAULT_REGISTRY_WRITE_SETTINGS, retryAfterSeconds, semaphore } from './write-queue.js';

export interface DocumentReadSettings {
  /** documents read at once on this instance, one worker thread each */
  workers: number;
  /** documents waiting for a thread on this instance, beyond those being read */
  maxQueued: number;
  /** how long a document waits for a thread */
  maxWaitMs: number;
  /** a read not done within this time ends its thread */
  timeBudgetMs: number;
  /**
   * A thread's heap of long-lived objects (V8's old generation), in MB. V8
   * gives every thread the process's --max-old-space-size instead when node
   * runs with one (`npm start`: 256 MB, the same).
   */
  memoryMb: number;
}

/**
 * One thread: the main thread keeps the other core of a 2-core instance. As
 * many may wait as registry writes of an organization may
 * (src/registry/write-queue.ts), so that the reads are not the narrower gate.
 * The largest documents the reading limits admit (src/registry/limits.ts)
 * need under 200 MB of heap and read in seconds; what needs more than 256 MB
 * or 60 s has escaped them.
 */
export const DEFAULT_DOCUMENT_READ_SETTINGS: DocumentReadSettings = {
  workers: 1,
  maxQueued: DEFAULT_REGISTRY_WRITE_SETTINGS.maxQueued,
  maxWaitMs: 30_000,
  timeBudgetMs: 60_000,
  memoryMb: 256,
};

/** New objects (V8's young generation), as `npm start`'s --max-semi-space-size=16 gives the main thread. */
const YOUNG_GENERATION_MB = 48;
/** Node's default for a thread: the reading walks documents without recursion over what they hold. */
const STACK_MB = 4;
/** A thread idle this long is ended, and its heap returned. */
const IDLE_MS = 60_000;

/** What ended a read: the thread's memory, its time, or its stack. */
export type ReadLimit = 'memory' | 'time' | 'stack';

/** A document whose reading went past a limit of its thread: the caller's document, not the service, is at fault. */
export class DocumentReadFailed extends Error {
  constructor(
    readonly limit: ReadLimit,
    /** the thread's whole heap (long-lived and new objects) and the time it had */
    readonly budget: { heapMb: number; timeBudgetMs: number },
  ) {
    super(`the document's reading went past its ${limit}`);
  }
}

/** Every thread of this instance was reading for longer than a document may wait, or too many waited. */
export class DocumentReadsBusyError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('documents are being read on this instance');
  }
}

export type DocumentProblems = { ok: false; lines: string[] };

export interface OffThreadSource {
  ok: true;
  document: RegistryDocument;
  /** the lines of problems found later in the document (an apply's), each with its place in the text */
  problemLines(error: RegistryError): Promise<string[]>;
}

export interface DocumentReader {
  /** readRegistrySource (src/registry/source.ts) in a thread */
  readRegistry(text: string, options: SourceOptions): Promise<OffThreadSource | DocumentProblems>;
  /** a POST /api/validations body, parsed and validated in a thread */
  readValidations(text: string): Promise<{ ok: true; batch: ValidationBatch } | DocumentProblems>;
  /** a POST /api/validations/dbt body, read and made each metric's evidence in a thread */
  readDbtEvidence(text: string): Promise<{ ok: true; evidence: DbtEvidence } | DocumentProblems>;
  /** ends every thread */
  close(): Promise<void>;
}

/**
 * The thread's module beside this one, compiled (`.js`) or not (`.ts`, in
 * development and tests, loaded as the server is: through tsx).
 */
const WORKER_URL = new URL(`./read-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);
const WORKER_EXEC_ARGV = WORKER_URL.pathname.endsWith('.ts') ? ['--import', 'tsx'] : [];

/** How long a new thread may take to load its modules and say it is ready. */
const THREAD_START_MS = 30_000;

type Heard = { message: unknown } | { limit: 'memory' | 'time' };

interface ReadThread {
  worker: Worker;
  /** its whole heap, as V8 gave it */
  heapMb: number;
}

/** The thread's next message within `ms`, or the limit that ended it; any other end of the thread is thrown. */
function nextMessage(worker: Worker, ms: number): Promise<Heard> {
  return new Promise((resolve, reject) => {
    const settle = () => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    const onMessage = (message: unknown) => {
      settle();
      resolve({ message });
    };
    const onError = (error: Error & { code?: string }) => {
      settle();
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') resolve({ limit: 'memory' });
      else reject(error);
    };
    const onExit = (code: number) => {
      settle();
      reject(new Error(`the document reading thread exited (${code})`));
    };
    const timer = setTimeout(() => {
      settle();
      resolve({ limit: 'time' });
    }, ms);
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
  });
}

export function createDocumentReader(settings: DocumentReadSettings): DocumentReader {
  const resourceLimits: ResourceLimits = {
    maxOldGenerationSizeMb: settings.memoryMb,
    maxYoungGenerationSizeMb: YOUNG_GENERATION_MB,
    stackSizeMb: STACK_MB,
  };
  const slots = semaphore(settings.workers);
  let waiting = 0;
  let closed = false;
  /** every thread started and not yet exited */
  const threads = new Set<Worker>();
  const idle: { thread: ReadThread; timer: NodeJS.Timeout }[] = [];
  /** threads reading, with when they began */
  const reading = new Map<Worker, Date>();

  function busy(): DocumentReadsBusyError {
    const oldest = [...reading.values()].reduce<Date | null>((min, at) => (min && min < at ? min : at), null);
    return new DocumentReadsBusyError(retryAfterSeconds(oldest));
  }

  async function retire(thread: ReadThread): Promise<void> {
    const at = idle.findIndex((entry) => entry.thread === thread);
    if (at >= 0) clearTimeout(idle.splice(at, 1)[0]?.timer);
    await thread.worker.terminate();
  }

  /** A new thread, once ready, with the heap it has. */
  async function start(): Promise<ReadThread> {
    const worker = new Worker(WORKER_URL, {
      execArgv: WORKER_EXEC_ARGV,
      resourceLimits,
      name: 'document reader',
    });
    threads.add(worker);
    // Whatever ends an idle thread (nothing should) must not reach the process as an unhandled error.
    worker.on('error', () => {});
    worker.once('exit', () => {
      threads.delete(worker);
      const at = idle.findIndex((entry) => entry.thread.worker === worker);
      if (at >= 0) clearTimeout(idle.splice(at, 1)[0]?.timer);
    });
    // The threads never keep the process alive: close() or the process's end ends them.
    worker.unref();
    // A thread's start is not the document's read: on a busy machine loading the thread's modules alone
    // can take longer than a short read budget, which must not turn into a failed request.
    const heard = await nextMessage(worker, Math.max(THREAD_START_MS, settings.timeBudgetMs)).catch(
      async (error: unknown) => {
        await worker.terminate();
        throw error;
      },
    );
    const ready = 'message' in heard ? (heard.message as ReadyMessage) : undefined;
    if (ready?.ready) return { worker, heapMb: ready.heapMb };
    await worker.terminate();
    throw new Error(`the document reading thread did not start: ${JSON.stringify(heard)}`);
  }

  /** Runs a job in a thread of its own for the time, waiting for one within the bounds. */
  async function run<K extends ReadJobKind>(
    request: ReadRequest & { kind: K },
  ): Promise<ReadAnswer<ReadJobs[K]['value']>> {
    if (closed) throw new Error('the document reader is closed');
    if (waiting >= settings.maxQueued) throw busy();
    waiting++;
    let admitted: boolean;
    try {
      admitted = await slots.acquire(Date.now() + settings.maxWaitMs);
    } finally {
      waiting--;
    }
    if (!admitted) throw busy();
    try {
      const kept = idle.pop();
      if (kept) clearTimeout(kept.timer);
      const thread = kept?.thread ?? (await start());
      const { worker } = thread;
      reading.set(worker, new Date());
      let heard: Heard;
      try {
        worker.postMessage(request);
        heard = await nextMessage(worker, settings.timeBudgetMs);
      } catch (error) {
        await worker.terminate();
        throw error;
      } finally {
        reading.delete(worker);
      }
      const reply = 'message' in heard ? (heard.message as ReadReply<ReadJobs[K]['value']>) : undefined;
      if (!reply || 'overflow' in reply) {
        await worker.terminate();
        throw new DocumentReadFailed('limit' in heard ? heard.limit : 'stack', {
          heapMb: thread.heapMb,
          timeBudgetMs: settings.timeBudgetMs,
        });
      }
      if (closed) await worker.terminate();
      else idle.push({ thread, timer: setTimeout(() => void retire(thread), IDLE_MS).unref() });
      return reply;
    } finally {
      slots.release();
    }
  }

  return {
    async readRegistry(text, options) {
      const read = await run({ kind: 'registry', text, options });
      if (!read.ok) return read;
      return {
        ok: true,
        document: read.value,
        async problemLines(error) {
          if (options.format !== 'registry') return error.lines(locateImported);
          // JSON has no places but paths; YAML's are found by reading the text again, only when there are problems.
          if (options.syntax === 'json') return error.lines();
          try {
            const located = await run({ kind: 'locate', text, problems: [...error.problems] });
            return located.ok ? located.value : error.lines();
          } catch (failure) {
            if (failure instanceof DocumentReadFailed || failure instanceof DocumentReadsBusyError) {
              return error.lines();
            }
            throw failure;
          }
        },
      };
    },
    async readValidations(text) {
      const read = await run({ kind: 'validations', text });
      if (!read.ok) return read;
      return { ok: true, batch: read.value };
    },
    async readDbtEvidence(text) {
      const read = await run({ kind: 'dbt', text });
      if (!read.ok) return read;
      return { ok: true, evidence: read.value };
    },
    async close() {
      closed = true;
      await Promise.all([...threads].map((worker) => worker.terminate()));
    },
  };
}
