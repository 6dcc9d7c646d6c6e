/**
 * How a transport runs a discussion write (the GraphQL mutations, and
 * through them the REST routes): the caller's actor (an API key is refused),
 * one unit of the actor's discussion write budget
 * (DISCUSSION_WRITES_PER_MINUTE, per member across their sessions, per
 * service token; shared by every instance through the rate limiter's Redis),
 * then the write in the organization's turn of the registry write queue
 * (src/registry/write-queue.ts: waiting holds no connection), and once it has
 * committed, what follows a commit (waking this instance's long-polls and
 * webhook worker, read-your-writes with replicas).
 */
import type { Context } from '../context.js';
import { errors, HttpError } from '../errors.js';
import type { KeyRateLimiter } from '../limits/key-rate-limiter.js';
import { RegistryBusyError, type RegistryWriteQueue, WritesBusyError } from '../registry/write-queue.js';
import { type Actor, actorOf } from './actor.js';
import type { DiscussionCall } from './write.js';

/** What a request gives the discussion writes it runs. */
export interface DiscussionWrites {
  queue: RegistryWriteQueue;
  rateLimiter: KeyRateLimiter;
  /** writes per minute of one member or service token */
  writesPerMinute: number;
  /** after a write of `orgId` committed */
  committed(orgId: string): Promise<void>;
}

const budgetOf = (actor: Actor) =>
  actor.kind === 'user' ? `discussion-writes:user:${actor.userId}` : `discussion-writes:token:${actor.tokenId}`;

/** Runs `write` for the context's caller; HttpError for every refusal (the transports answer it). */
export async function runDiscussionWrite<T>(ctx: Context, write: (call: DiscussionCall) => Promise<T>): Promise<T> {
  const actor = actorOf(ctx.principal);
  const writes = ctx.discussionWrites;
  if (!writes) throw new Error('discussion writes are not available to this request');
  const decision = await writes.rateLimiter.consume(budgetOf(actor), writes.writesPerMinute);
  if (!decision.allowed) {
    throw new HttpError(errors.discussionWritesLimited(writes.writesPerMinute, decision.retryAfterSeconds));
  }
  const orgId = ctx.principal.org.id;
  const by =
    actor.kind === 'user'
      ? { kind: 'user' as const, id: actor.userId }
      : { kind: 'service_token' as const, id: actor.tokenId };
  let value: T;
  try {
    value = await writes.queue.run(orgId, { write: 'discussion', by }, () =>
      write({ orgId, actor, trust: ctx.config.trust }),
    );
  } catch (error) {
    if (error instanceof RegistryBusyError) {
      throw new HttpError(errors.registryBusy(error.holder, error.since, error.retryAfterSeconds));
    }
    if (error instanceof WritesBusyError) throw new HttpError(errors.writesBusy(error.retryAfterSeconds));
    throw error;
  }
  await writes.committed(orgId);
  return value;
}
