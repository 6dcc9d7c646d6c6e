/**
 * The delivery worker of an instance. Each endpoint has a cursor (the number
 * of the last event it got) and is delivered to by one instance at a time:
 * a short statement claims due endpoints (FOR UPDATE SKIP LOCKED) and leases
 * them; no transaction is open during HTTP. The claimant sends the events
 * after the cursor in order, moving the cursor after each success only while
 * the lease is still its own; a failure schedules a retry of that event, and
 * the later ones wait. An instance that dies (or stops) mid-delivery leaves
 * its lease to expire, and another delivers the event again: at least once.
 */
import type { CloudEvent } from '../changes/event.js';
import { cloudEvent } from '../changes/event.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { deliverEvent } from './deliver.js';
import { SendAborted, type SendOutcome } from './send.js';
import type { WebhookSettings, WebhookWorkerSettings } from './settings.js';

/** Endpoints one claim takes at most (delivered concurrently). */
const CLAIM_BATCH = 8;
/** Events read at a time. */
const EVENT_PAGE = 100;
/** Events one claim delivers at most before the endpoint goes back for another claim (fairness). */
const EVENTS_PER_CLAIM = 1000;

interface ClaimedEndpoint {
  id: string;
  org_id: string;
  url: string;
  types: string[];
  secret: string;
  delivered_seq: bigint;
  /** the organization's latest event when claimed */
  feed_seq: bigint;
  attempt: number;
  lease: string;
}

interface EventRow {
  seq: bigint;
  id: string;
  type: string;
  subject: string;
  time: Date;
  data: Record<string, unknown>;
}

interface Logger {
  warn(object: object, message: string): void;
}

export interface WebhookWorker {
  /** Events were committed: look for due endpoints now. */
  poke(): void;
  /** Stops claiming and cuts off the attempts in flight (their leases expire; see above). */
  stop(): Promise<void>;
}

async function claim(prisma: PrismaClient, leaseMs: number): Promise<ClaimedEndpoint[]> {
  return prisma.$queryRaw<ClaimedEndpoint[]>`
    UPDATE webhook w SET leased_until = now() + ${leaseMs} * interval '1 millisecond', leased_by = gen_random_uuid()
    WHERE w.id IN (
      SELECT d.id FROM webhook d JOIN change_feed f ON f.org_id = d.org_id
      WHERE d.disabled_at IS NULL AND d.next_attempt_at <= now()
        AND (d.leased_until IS NULL OR d.leased_until < now()) AND f.last_seq > d.delivered_seq
      ORDER BY d.next_attempt_at LIMIT ${CLAIM_BATCH}
      FOR UPDATE OF d SKIP LOCKED)
    RETURNING w.id::text AS id, w.org_id::text AS org_id, w.url, w.types, w.secret, w.delivered_seq, w.attempt,
              w.leased_by::text AS lease, (SELECT last_seq FROM change_feed f WHERE f.org_id = w.org_id) AS feed_seq`;
}

/** The events after `after` of the endpoint's types (every type when it names none). */
const readEvents = (prisma: PrismaClient, endpoint: ClaimedEndpoint, after: bigint) =>
  prisma.$queryRaw<EventRow[]>`
    SELECT seq, id::text AS id, type, subject::text AS subject, time, data FROM change_event
    WHERE org_id = ${endpoint.org_id}::uuid AND seq > ${after}
      AND (cardinality(${endpoint.types}::text[]) = 0 OR type = ANY(${endpoint.types}::text[]))
    ORDER BY seq LIMIT ${EVENT_PAGE}`;

/** `5 days`, `2 hours`, `90 seconds`: the largest whole unit. */
function describeDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  const [size, name] = units.find(([unit]) => ms % unit === 0 && ms >= unit) ?? [1, 'millisecond'];
  const count = ms / size;
  return `${count} ${name}${count === 1 ? '' : 's'}`;
}

/** The wait before retry `failures` (1: the first retry). */
function retryDelay(schedule: readonly number[], failures: number): number {
  return schedule[Math.min(failures, schedule.length) - 1] ?? 0;
}

export function startWebhookWorker(
  prisma: PrismaClient,
  settings: WebhookSettings,
  worker: WebhookWorkerSettings,
  logger: Logger,
  /** hears of every attempt's outcome (the Prometheus metrics) */
  observe: (outcome: SendOutcome) => void = () => {},
): WebhookWorker {
  const stopping = new AbortController();
  let running: Promise<boolean> | null = null;
  let again = false;
  let timer: NodeJS.Timeout | null = null;

  /** Moves the cursor past `seq` and renews the lease; false when the lease is no longer this claim's. */
  async function advance(endpoint: ClaimedEndpoint, seq: bigint, release: boolean): Promise<boolean> {
    const moved = await prisma.$executeRaw`
      UPDATE webhook SET delivered_seq = greatest(delivered_seq, ${seq}), attempt = 0, failing_since = NULL,
        next_attempt_at = now(),
        leased_until = CASE WHEN ${release} THEN NULL ELSE now() + ${worker.leaseMs} * interval '1 millisecond' END,
        leased_by = CASE WHEN ${release} THEN NULL ELSE leased_by END
      WHERE id = ${endpoint.id}::uuid AND leased_by = ${endpoint.lease}::uuid`;
    return moved === 1;
  }

  /** Schedules the retry of the event after `seq`, or disables the endpoint failing too long. */
  async function retryLater(endpoint: ClaimedEndpoint, seq: bigint, failures: number): Promise<void> {
    const delayMs = retryDelay(settings.retryScheduleMs, failures);
    const reason = `failing for more than ${describeDuration(settings.disableAfterMs)} without a success`;
    await prisma.$executeRaw`
      UPDATE webhook SET delivered_seq = greatest(delivered_seq, ${seq}), attempt = ${failures},
        failing_since = coalesce(failing_since, now()),
        next_attempt_at = now() + ${delayMs} * interval '1 millisecond',
        disabled_at = CASE WHEN failing_since <= now() - ${settings.disableAfterMs} * interval '1 millisecond'
                           THEN now() END,
        disabled_reason = CASE WHEN failing_since <= now() - ${settings.disableAfterMs} * interval '1 millisecond'
                               THEN ${reason} END,
        leased_until = NULL, leased_by = NULL
      WHERE id = ${endpoint.id}::uuid AND leased_by = ${endpoint.lease}::uuid`;
  }

  async function deliverEndpoint(endpoint: ClaimedEndpoint): Promise<void> {
    let position = endpoint.delivered_seq;
    let sent = 0;
    while (sent < EVENTS_PER_CLAIM) {
      const events = await readEvents(prisma, endpoint, position);
      if (!events.length) {
        // Nothing of its types up to the feed's latest when claimed: the cursor moves past the others.
        if (endpoint.feed_seq > position) position = endpoint.feed_seq;
        break;
      }
      for (const row of events) {
        const event: CloudEvent = cloudEvent({ ...row, orgId: endpoint.org_id, seq: String(row.seq) });
        const attempt = sent === 0 ? endpoint.attempt + 1 : 1;
        const outcome = await deliverEvent(
          prisma,
          endpoint,
          { event, seq: row.seq, attempt },
          settings,
          stopping.signal,
        );
        sent++;
        observe(outcome);
        if (!outcome.ok) return retryLater(endpoint, position, attempt);
        position = row.seq;
        if (!(await advance(endpoint, position, false))) return;
      }
    }
    await advance(endpoint, position, true);
  }

  async function round(): Promise<boolean> {
    const claimed = await claim(prisma, worker.leaseMs);
    await Promise.all(
      claimed.map((endpoint) =>
        deliverEndpoint(endpoint).catch((error: unknown) => {
          if (error instanceof SendAborted) return;
          logger.warn({ err: (error as Error).message, webhook: endpoint.id }, 'webhook delivery failed');
        }),
      ),
    );
    return claimed.length > 0;
  }

  function schedule(delayMs: number) {
    if (stopping.signal.aborted) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(tick, delayMs);
    timer.unref();
  }

  function tick() {
    timer = null;
    if (stopping.signal.aborted) return;
    if (running) {
      again = true;
      return;
    }
    running = round()
      .catch((error: unknown) => {
        logger.warn({ err: (error as Error).message }, 'webhook worker: cannot claim endpoints');
        return false;
      })
      .finally(() => {
        running = null;
      });
    void running.then((busy) => {
      const now = busy || again;
      again = false;
      schedule(now ? 0 : worker.pollIntervalMs);
    });
  }

  schedule(0);
  return {
    poke() {
      schedule(0);
    },
    async stop() {
      stopping.abort();
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
