/**
 * A worker thread that reads the documents callers send (started by
 * src/registry/read-off-thread.ts, which gives it its memory and its time):
 * a registry document or an import through readRegistrySource, a batch of
 * validation results, or the YAML places of problems found later. One job
 * at a time; whatever escapes the bounds of the reading ends this thread,
 * not the server.
 */
import { getHeapStatistics } from 'node:v8';
import { parentPort } from 'node:worker_threads';
import { type DbtEvidence, dbtEvidence } from '../importers/dbt-evidence.js';
import { isRecord } from '../importers/read.js';
import type { RegistryDocument } from './document.js';
import { DBT_EVIDENCE_LIMITS, VALIDATION_LIMITS } from './limits.js';
import { RegistryError, type RegistryProblem } from './registry-error.js';
import { readRegistrySource, type SourceOptions } from './source.js';
import { describeTextProblem, parseDocumentText } from './text.js';
import { parseValidationBatch, type ValidationBatch } from './validations.js';

export interface ReadJobs {
  registry: { input: { text: string; options: SourceOptions }; value: RegistryDocument };
  validations: { input: { text: string }; value: ValidationBatch };
  /** a POST /api/validations/dbt body: dbt's run_results and manifest, made the evidence of each metric */
  dbt: { input: { text: string }; value: DbtEvidence };
  /** problems of a YAML registry document, each line with its place in the text */
  locate: { input: { text: string; problems: RegistryProblem[] }; value: string[] };
}

export type ReadJobKind = keyof ReadJobs;

export type ReadRequest = { [K in ReadJobKind]: { kind: K } & ReadJobs[K]['input'] }[ReadJobKind];

/** A job's value, or the problems of the document, each line naming its place. */
export type ReadAnswer<T> = { ok: true; value: T } | { ok: false; lines: string[] };

/** What the thread posts: the answer, or that the job recursed past the thread's stack. */
export type ReadReply<T> = ReadAnswer<T> | { ok: false; overflow: true };

/**
 * Sent once the thread's modules are loaded (a job's time runs from when it is
 * posted to a ready thread), with the heap the thread has: V8 gives every
 * thread the process's --max-old-space-size when node runs with one, whatever
 * the thread's `resourceLimits` say.
 */
export interface ReadyMessage {
  ready: true;
  heapMb: number;
}

function run(request: ReadRequest): ReadReply<unknown> {
  switch (request.kind) {
    case 'registry': {
      const source = readRegistrySource(request.text, request.options);
      // The source's own `input` and `locate` stay here: the route asks for places again when it needs them.
      return source.ok ? { ok: true, value: source.document } : source;
    }
    case 'validations': {
      const parsed = parseDocumentText(request.text, 'json', VALIDATION_LIMITS);
      if (!parsed.ok) return { ok: false, lines: parsed.problems.map(describeTextProblem) };
      try {
        return { ok: true, value: parseValidationBatch(parsed.value) };
      } catch (error) {
        if (error instanceof RegistryError) return { ok: false, lines: error.lines() };
        throw error;
      }
    }
    case 'dbt': {
      const parsed = parseDocumentText(request.text, 'json', DBT_EVIDENCE_LIMITS);
      if (!parsed.ok) return { ok: false, lines: parsed.problems.map(describeTextProblem) };
      const body = parsed.value;
      const unknown = isRecord(body) ? Object.keys(body).filter((k) => k !== 'run_results' && k !== 'manifest') : [];
      if (!isRecord(body) || unknown.length > 0) {
        const what = 'expected { "run_results": <target/run_results.json>, "manifest": <target/manifest.json> }';
        const lines = isRecord(body)
          ? unknown.slice(0, 10).map((key) => `${JSON.stringify(key)}: not a member of the body; ${what}`)
          : [`(document): ${what}`];
        return { ok: false, lines };
      }
      try {
        return { ok: true, value: dbtEvidence(body.run_results, body.manifest) };
      } catch (error) {
        if (error instanceof RegistryError) return { ok: false, lines: error.lines() };
        throw error;
      }
    }
    case 'locate': {
      const parsed = parseDocumentText(request.text, 'yaml');
      const error = new RegistryError(request.problems);
      return { ok: true, value: parsed.ok ? error.lines(parsed.locate) : error.lines() };
    }
  }
}

const port = parentPort;
if (!port) throw new Error('read-worker.ts runs as a worker thread (src/registry/read-off-thread.ts)');
port.on('message', (request: ReadRequest) => {
  let reply: ReadReply<unknown>;
  try {
    reply = run(request);
  } catch (error) {
    // Anything else is a fault of the service: thrown, it ends the thread and reaches the route as an error.
    if (!(error instanceof RangeError && /call stack/i.test(error.message))) throw error;
    reply = { ok: false, overflow: true };
  }
  port.postMessage(reply);
});
const ready: ReadyMessage = { ready: true, heapMb: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20) };
port.postMessage(ready);
