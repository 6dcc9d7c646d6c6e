/**
 * Writes of an organization's registry take turns (docs/registry.md,
 * "Concurrent writes"). On an instance, the writes of one organization wait
 * in a queue of their own, holding no database connection; the one whose
 * turn it is tries the organization's lock (src/db/registry-lock.ts) in a
 * transaction, and while a writer on another instance holds it, tries again
 * after a growing pause, again without holding a connection in between. A
 * writer that would wait past `maxWaitMs`, or find `maxQueued` writers ahead
 * of it on this instance, is refused with {@link RegistryBusyError}, which
 * names the write in progress.
 *
 * Whatever the queues, this instance's writes hold at most `connections`
 * pooled connections at once, so that the reads always find the rest.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RegistryLockBusy, type RegistryLockHolder, registryWriterTurn } from '../db/registry-lock.js';
import type { PrismaClient } from '../generated/prisma/client.js';

export interface RegistryWriteSettings {
  /** writers of one organization waiting on one instance, beyond the one whose turn it is */
  maxQueued: number;
  /** how long a writer waits for its turn and the lock, in all */
  maxWaitMs: number;
  /** pooled connections this instance's registry writes hold at once */
  connections: number;
}

export const DEFAULT_REGISTRY_WRITE_SETTINGS: Omit<RegistryWriteSettings, 'connections'> = {
  maxQueued: 16,
  maxWaitMs: 30_000,
};

/** A quarter of the pool, at least one: the other three quarters are the reads'. */
export function writeConnections(poolSize: number): number {
  return Math.max(1, Math.floor(poolSize / 4));
}

/** Who writes and what: named to the writers who find the registry busy. */
export interface RegistryWriter {
  write: 'apply' | 'upload' | 'validations' | 'discussion';
  by: { kind: 'service_token' | 'user'; id: string };
}

/** The registry of the organization is being written by another writer, for longer than this one may wait. */
export class RegistryBusyError extends Error {
  constructor(
    /** the write in progress, in words ("an apply by service token \"CI\"") */
    readonly holder: string,
    /** when it began; null when no writer could be found holding it (it has just ended) */
    readonly since: Date | null,
    readonly retryAfterSeconds: number,
  ) {
    super(`${holder} is in progress`);
  }
}

/** This instance's writes hold all the connections they may, for longer than a writer may wait. */
export class WritesBusyError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('registry writes hold all the connections they may');
  }
}

export interface RegistryWriteQueue {
  /**
   * Runs `write` (a transaction that takes lockRegistry() first) in the
   * organization's turn: again, as a new transaction, while another
   * instance's writer holds the lock, until `maxWaitMs` has passed.
   */
  run<T>(orgId: string, writer: RegistryWriter, write: () => Promise<T>): Promise<T>;
}

/** The pauses between two tries of a lock held on another instance: doubling, then at most a second. */
const FIRST_PAUSE_MS = 50;
const MAX_PAUSE_MS = 1000;

/** The label a writer's session shows while it holds the lock: at most 59 bytes (63 allowed). */
const LABEL = /^registry:(apply|upload|validations|discussion):(t|u):([0-9a-f-]{36})$/;

function labelOf(writer: RegistryWriter): string {
  return `registry:${writer.write}:${writer.by.kind === 'service_token' ? 't' : 'u'}:${writer.by.id}`;
}

interface OrganizationQueue {
  /** writers waiting for their turn on this instance */
  waiting: number;
  /** writers waiting or in their turn: the queue is forgotten when none is left */
  writers: number;
  /** settles once every writer queued so far has had its turn */
  tail: Promise<void>;
  /** the lock's holder as last seen: this instance's writer, or another's from the database */
  holder: RegistryLockHolder | null;
  /** settles once a writer of the queue has tried the lock: a refusal names the holder, not "another write" */
  tried: Promise<void>;
  triedLock: () => void;
}

/** Promise.withResolvers() of Node 22, for Node 20. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** At most `size` holders at once, the others waiting in order; a wait ends (false) at `deadline`. */
export function semaphore(size: number) {
  let free = size;
  const waiters: (() => void)[] = [];
  return {
    async acquire(deadline: number): Promise<boolean> {
      if (free > 0) {
        free--;
        return true;
      }
      const { promise, resolve } = deferred();
      waiters.push(resolve);
      const admitted = await settlesBy(promise, deadline);
      if (admitted) return true;
      const at = waiters.indexOf(resolve);
      if (at >= 0) {
        waiters.splice(at, 1);
        return false;
      }
      // Admitted in the same tick as the deadline: keep the place.
      return true;
    },
    release(): void {
      const next = waiters.shift();
      if (next) next();
      else free++;
    },
  };
}

/** Waits for `promise` until `deadline`; false when the deadline came first. */
async function settlesBy(promise: Promise<void>, deadline: number): Promise<boolean> {
  const controller = new AbortController();
  const timeout = sleep(Math.max(0, deadline - Date.now()), false, { signal: controller.signal }).catch(() => true);
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    controller.abort();
  }
}

/** Seconds a refused caller should wait: about as long as the work in progress has run, 1 to 60. */
export function retryAfterSeconds(since: Date | null): number {
  const running = since ? (Date.now() - since.getTime()) / 1000 : 0;
  return Math.min(60, Math.max(1, Math.ceil(running)));
}

export function createRegistryWriteQueue(prisma: PrismaClient, settings: RegistryWriteSettings): RegistryWriteQueue {
  const organizations = new Map<string, OrganizationQueue>();
  const connections = semaphore(settings.connections);

  /** The holder in words, its writer's name read from the database. */
  async function describe(holder: RegistryLockHolder | null): Promise<string> {
    const [, write, kind, id] = (holder?.label && LABEL.exec(holder.label)) || [];
    if (!id) return 'another write of this organization’s registry';
    const what = {
      apply: 'an apply',
      upload: 'a part of an upload being stored',
      validations: 'a recording of validation results',
      discussion: 'a discussion write',
    }[write as RegistryWriter['write']];
    const name =
      kind === 't'
        ? (await prisma.serviceToken.findUnique({ where: { id }, select: { name: true } }))?.name
        : (await prisma.user.findUnique({ where: { id }, select: { displayName: true } }))?.displayName;
    return `${what} by ${kind === 't' ? 'service token' : 'user'} ${JSON.stringify(name ?? id)}`;
  }

  async function busy(queue: OrganizationQueue): Promise<RegistryBusyError> {
    const { holder } = queue;
    return new RegistryBusyError(
      await describe(holder),
      holder?.since ?? null,
      retryAfterSeconds(holder?.since ?? null),
    );
  }

  async function inTurn<T>(queue: OrganizationQueue, label: string, deadline: number, write: () => Promise<T>) {
    let pause = FIRST_PAUSE_MS;
    for (;;) {
      if (!(await connections.acquire(deadline))) throw new WritesBusyError(retryAfterSeconds(null));
      try {
        return await registryWriterTurn(
          {
            label,
            locked: () => {
              queue.holder = { label, since: new Date() };
              queue.triedLock();
            },
          },
          write,
        );
      } catch (error) {
        if (!(error instanceof RegistryLockBusy)) throw error;
        queue.holder = error.holder;
        queue.triedLock();
      } finally {
        connections.release();
      }
      const left = deadline - Date.now();
      if (left <= 0) throw await busy(queue);
      await sleep(Math.min(pause, left) * (0.5 + Math.random() / 2));
      pause = Math.min(pause * 2, MAX_PAUSE_MS);
    }
  }

  return {
    async run(orgId, writer, write) {
      const deadline = Date.now() + settings.maxWaitMs;
      let queue = organizations.get(orgId);
      if (!queue) {
        const { promise: tried, resolve: triedLock } = deferred();
        queue = { waiting: 0, writers: 0, tail: Promise.resolve(), holder: null, tried, triedLock };
        organizations.set(orgId, queue);
      }
      if (queue.waiting >= settings.maxQueued) {
        // Writers arriving together: the one in its turn is about to learn who holds the lock.
        await settlesBy(queue.tried, deadline);
        throw await busy(queue);
      }
      // The next writer waits for every one before this one, and for this one, even if this one gives up.
      const { promise: done, resolve: finish } = deferred();
      const before = queue.tail;
      queue.tail = before.then(() => done);
      queue.waiting++;
      queue.writers++;
      let turn = false;
      try {
        const ready = await settlesBy(before, deadline);
        queue.waiting--;
        if (!ready) throw await busy(queue);
        turn = true;
        return await inTurn(queue, labelOf(writer), deadline, write);
      } finally {
        if (turn) queue.holder = null;
        finish();
        if (--queue.writers === 0) organizations.delete(orgId);
      }
    },
  };
}
