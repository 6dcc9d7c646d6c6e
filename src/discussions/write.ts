/**
 * One discussion write, in one transaction: the organization's registry lock
 * first (src/db/registry-lock.ts), so that discussion writes take turns with
 * each other and with applies and validation evidence: two replies, pins or
 * resolutions never act on the same row at once, and the verdicts each
 * announces are computed from the state the previous writer left. Then the
 * write, its `metric.discussion_changed` events and, when the open
 * objections of a metric may have changed, the `metric.trust_changed` events
 * of the metric and of every metric whose verdict follows it
 * (metricsAffectedBy): all committed together or not at all.
 */
import type { NewChangeEvent } from '../changes/event.js';
import { recordEvents } from '../changes/record.js';
import { metricsAffectedBy, trustTransitions } from '../changes/trust-transitions.js';
import { lockRegistry } from '../db/registry-lock.js';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { TrustPolicy } from '../metric/trust.js';
import type { Actor } from './actor.js';

type Tx = Prisma.TransactionClient;

/** Who writes, for which organization, with the service's trust thresholds. */
export interface DiscussionCall {
  orgId: string;
  actor: Actor;
  trust: TrustPolicy;
  /** the time of the write (default: now) */
  now?: Date;
}

export const DISCUSSION_ACTIONS = [
  'thread_opened',
  'replied',
  'edited',
  'deleted',
  'resolved',
  'reopened',
  'pinned',
  'unpinned',
  'challenge_opened',
  'challenge_decided',
] as const;
export type DiscussionAction = (typeof DISCUSSION_ACTIONS)[number];

/** What a write did to one metric's discussion: one `metric.discussion_changed` event. */
export interface DiscussionChange {
  metricId: string;
  action: DiscussionAction;
  /** the event's members after `action`: thread_id, message_id, challenge_id, intent, decision */
  detail: Record<string, unknown>;
  /** the metric's open objections may have changed: its verdict (and those that follow it) is evaluated again */
  objections: boolean;
}

/** A write's result, and what it changed (nothing: a write that found nothing to do records no event). */
export interface Written<T> {
  value: T;
  changes: DiscussionChange[];
}

/** A discussion write holds its transaction for its statements and the trust evaluation of the metrics it moves. */
const TRANSACTION = { maxWait: 10_000, timeout: 30_000 };

export async function inDiscussionTransaction<T>(
  prisma: PrismaClient,
  call: DiscussionCall,
  work: (tx: Tx, now: Date) => Promise<Written<T>>,
): Promise<T> {
  return prisma.$transaction(async (tx) => {
    await lockRegistry(tx, call.orgId);
    const now = call.now ?? new Date();
    const { value, changes } = await work(tx, now);
    if (!changes.length) return value;
    const ids = [...new Set(changes.map((change) => change.metricId))];
    const metrics = await tx.metric.findMany({
      where: { orgId: call.orgId, id: { in: ids } },
      select: { id: true, key: true, name: true, lifecycleStatus: true },
    });
    const byId = new Map(metrics.map((metric) => [metric.id, metric]));
    const events: NewChangeEvent[] = changes.flatMap((change) => {
      const metric = byId.get(change.metricId);
      return metric
        ? [{ type: 'metric.discussion_changed', metric, detail: { action: change.action, ...change.detail } }]
        : [];
    });
    const objected = [...new Set(changes.filter((change) => change.objections).map((change) => change.metricId))];
    if (objected.length) {
      const affected = await metricsAffectedBy(tx, objected);
      events.push(...(await trustTransitions(tx, call.orgId, affected, call.trust, now)));
    }
    await recordEvents(tx, call.orgId, events, now);
    return value;
  }, TRANSACTION);
}
