/**
 * The periodic sweep: trust verdicts that time changes (validation evidence
 * becoming stale), expired sessions and sign-in links, the feed's retention,
 * which is also how long a metric a prune removed can be restored
 * (src/registry/archive.ts), the retention of metric usage
 * (src/metric/usage.ts), and uploads in parts left past their expiry
 * (src/registry/upload.ts). Each organization is claimed by one instance per
 * interval (its `swept_at`, taken with SKIP LOCKED), then swept in a
 * transaction of its own under the registry lock, so it takes turns with
 * applies and validations; an instance that dies mid-sweep leaves the
 * organization to the next interval. An instance claims one organization,
 * sweeps it, then claims the next: the instances share a sweep of many
 * organizations, and an organization is claimed when its sweep begins, so a
 * sweep of many that outlasts the interval does not leave the last ones
 * claimed long before they are swept (and claimable again by another
 * instance meanwhile). Each page of an organization's sweep renews its claim,
 * so an organization whose own sweep outlasts the interval is not claimed
 * again while it runs. A page only tries the registry lock: when a writer
 * holds it (an apply of 100,000 metrics holds it for minutes), the sweep
 * leaves that organization to the next interval rather than hold a pooled
 * connection waiting, and the writer evaluates the verdicts its writes move
 * itself. Verdicts are evaluated where time can have moved them (see
 * sweepOrganization), not all of them every interval.
 */
import { lockRegistry, RegistryLockBusy, registryWriterTurn } from '../db/registry-lock.js';
import { isLockTimeout } from '../db/unavailable.js';
import type { Prisma, PrismaClient } from '../generated/prisma/client.js';
import type { TrustPolicy } from '../metric/trust.js';
import { forgetOldUsage } from '../metric/usage.js';
import { recordEvents } from './record.js';
import { everyMetricTransitions, metricsAffectedBy, trustTransitions } from './trust-transitions.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export interface SweepOptions {
  intervalMs: number;
  /** events, and metrics removed, older than this many days are forgotten (a cursor before them answers 410) */
  retentionDays: number;
  trust: TrustPolicy;
}

export interface SweepOutcome {
  organizations: number;
  /** organizations whose registry lock a writer held: left to the next interval */
  busy: string[];
  events: number;
  /** organizations that got events (their waiters are woken) */
  changed: string[];
}

/**
 * Claims one organization last swept at `due` or before (the longest unswept first), as swept at
 * `claimedAt`: this instance sweeps it now. Null: none is due.
 */
async function claimOrganization(prisma: PrismaClient, due: Date, claimedAt: Date): Promise<string | null> {
  const [row] = await prisma.$queryRaw<{ org_id: string }[]>`
    UPDATE change_feed SET swept_at = ${claimedAt}
    WHERE org_id = (SELECT org_id FROM change_feed WHERE swept_at IS NULL OR swept_at <= ${due}
                    ORDER BY swept_at NULLS FIRST, org_id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING org_id::text AS org_id`;
  return row?.org_id ?? null;
}

/** How the sweep's transactions show while they hold the registry lock (src/db/registry-lock.ts). */
const SWEEP_TURN = { label: 'trust sweep', locked: () => {} };

/**
 * A transaction of the sweep: under the registry lock, so that it takes turns with applies and
 * validations. It tries the lock (RegistryLockBusy when a writer holds it) rather than wait for it.
 */
const sweepTransaction = <T>(prisma: PrismaClient, orgId: string, work: (tx: Prisma.TransactionClient) => Promise<T>) =>
  registryWriterTurn(SWEEP_TURN, () =>
    prisma.$transaction(
      async (tx) => {
        await lockRegistry(tx, orgId);
        return work(tx);
      },
      { timeout: 120_000, maxWait: 30_000 },
    ),
  );

/**
 * Records that every verdict of `orgIds` was evaluated under `staleDays` (their stale_at follow
 * from it): the sweep then evaluates only the metrics whose evidence goes stale. A writer that
 * announces every verdict of a new organization (the fixture loader) says so too.
 */
export async function markAllEvaluated(
  tx: Prisma.TransactionClient,
  orgIds: readonly string[],
  staleDays: number,
): Promise<void> {
  await tx.$executeRaw`INSERT INTO change_feed (org_id, swept_stale_days) SELECT unnest(${orgIds}::uuid[]), ${staleDays}::float8
    ON CONFLICT (org_id) DO UPDATE SET swept_stale_days = EXCLUDED.swept_stale_days`;
}

/** Metrics whose stale evidence, or lack of a verdict, a transaction of the sweep evaluates at most (each), with what is built on them. */
const DUE_PAGE = 1000;

/**
 * The organization's metrics whose validation evidence became stale before `now` (their announced
 * stale_at), and those without an announced verdict (written with SQL, outside the service).
 */
async function dueByNow(tx: Prisma.TransactionClient, orgId: string, now: Date): Promise<string[]> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    (SELECT s.metric_id::text AS id FROM metric_trust_state s JOIN metric m ON m.id = s.metric_id
     WHERE s.stale_at < ${now} AND m.org_id = ${orgId}::uuid
     ORDER BY s.stale_at, s.metric_id LIMIT ${DUE_PAGE})
    UNION ALL
    (SELECT m.id::text FROM metric m
     WHERE m.org_id = ${orgId}::uuid AND NOT EXISTS (SELECT 1 FROM metric_trust_state s WHERE s.metric_id = m.id)
     LIMIT ${DUE_PAGE})`;
  return rows.map((row) => row.id);
}

/**
 * Sweeps one organization's verdicts at `now`, each page of them in a transaction of its own with
 * its events (an apply waits for a page, not for the whole registry), each renewing the claim to
 * `clock()` (while its sweep runs, the organization is not due to another instance). Time moves a
 * verdict in one way only, evidence becoming stale, and every writer evaluates what its writes can
 * move: so the sweep evaluates the metrics whose announced stale_at has passed, and any without
 * an announced verdict, with every metric built on them. Every metric is evaluated instead when the
 * verdicts were last all evaluated under other stale-validation days than the sweep's (their stale_at
 * follow from them), or never. A stopping instance (`going` false) ends at the next page: what it
 * did not evaluate is the next sweep's. Returns the events recorded, and whether it stopped so.
 */
async function sweepOrganization(
  prisma: PrismaClient,
  orgId: string,
  options: SweepOptions,
  now: Date,
  pass: { clock: () => Date; going: () => boolean },
): Promise<{ recorded: number; stopped: boolean; busy: boolean }> {
  const page = <T>(work: (tx: Prisma.TransactionClient) => Promise<T>) =>
    sweepTransaction(prisma, orgId, async (tx) => {
      if (!pass.going()) throw new SweepStopped();
      await tx.$executeRaw`UPDATE change_feed SET swept_at = greatest(swept_at, ${pass.clock()}) WHERE org_id = ${orgId}::uuid`;
      return work(tx);
    });
  let recorded = 0;
  try {
    await sweepPages(prisma, orgId, options, now, page, (events) => {
      recorded += events;
    });
  } catch (error) {
    if (error instanceof SweepStopped) return { recorded, stopped: true, busy: false };
    if (error instanceof RegistryLockBusy) return { recorded, stopped: false, busy: true };
    throw error;
  }
  return { recorded, stopped: false, busy: false };
}

/** Thrown in a page of a stopping instance's sweep: it ends there. */
class SweepStopped extends Error {}

type SweepPage = <T>(work: (tx: Prisma.TransactionClient) => Promise<T>) => Promise<T>;

/** The pages of {@link sweepOrganization}, each run by `page`; `record` hears of the events each recorded. */
async function sweepPages(
  prisma: PrismaClient,
  orgId: string,
  options: SweepOptions,
  now: Date,
  page: SweepPage,
  record: (events: number) => void,
): Promise<void> {
  const staleDays = options.trust.staleValidationDays;
  const feed = await prisma.changeFeed.findUnique({ where: { orgId }, select: { sweptStaleDays: true } });
  const everyMetric = feed?.sweptStaleDays !== staleDays;
  if (everyMetric) {
    await everyMetricTransitions(orgId, options.trust, now, (evaluate) =>
      page(async (tx) => {
        const evaluated = await evaluate(tx);
        record(await recordEvents(tx, orgId, evaluated.events, now));
        return evaluated;
      }),
    );
  } else {
    let previous: string | undefined;
    for (let more = true; more; ) {
      more = await page(async (tx) => {
        const due = await dueByNow(tx, orgId, now);
        // Each evaluated metric's stale_at is then null or after `now`: the same first one again is a fault.
        if (due.length && due[0] === previous) throw new Error('the sweep did not move past stale evidence');
        previous = due[0];
        const events = await trustTransitions(tx, orgId, await metricsAffectedBy(tx, due), options.trust, now);
        record(await recordEvents(tx, orgId, events, now));
        return due.length >= DUE_PAGE;
      });
    }
  }
  await page(async (tx) => {
    const cutoff = new Date(now.getTime() - options.retentionDays * DAY_MS);
    // By number, not time: every event up to the newest expired one goes, so the kept ones follow
    // pruned_through without a gap.
    await tx.$executeRaw`
        WITH expired AS (
          SELECT max(seq) AS through FROM change_event WHERE org_id = ${orgId}::uuid AND time < ${cutoff}),
        removed AS (
          DELETE FROM change_event WHERE org_id = ${orgId}::uuid AND seq <= (SELECT through FROM expired))
        UPDATE change_feed SET pruned_through = greatest(pruned_through, (SELECT through FROM expired))
        WHERE org_id = ${orgId}::uuid AND (SELECT through FROM expired) IS NOT NULL`;
    await tx.$executeRaw`DELETE FROM removed_metric WHERE org_id = ${orgId}::uuid AND removed_at < ${cutoff}`;
    // Uploads in parts left unapplied past their expiry (src/registry/upload.ts), with their parts.
    await tx.$executeRaw`DELETE FROM registry_upload WHERE org_id = ${orgId}::uuid AND expires_at <= ${now}`;
    await forgetOldUsage(tx, orgId, now);
    if (everyMetric) await markAllEvaluated(tx, [orgId], staleDays);
  });
}

/**
 * Sessions and one-time sign-in links past their expiry are refused already (src/admin/sessions.ts,
 * src/admin/login-links.ts); each sweep forgets them, whichever instance runs it.
 */
async function forgetExpiredSignIns(prisma: PrismaClient, now: Date): Promise<void> {
  await prisma.$executeRaw`DELETE FROM session WHERE expires_at < ${now}`;
  await prisma.$executeRaw`DELETE FROM login_link WHERE expires_at < ${now}`;
}

/** How long the sweep waits for a writer's uncommitted change_feed row before it leaves the rows to the next pass. */
const FEED_ROWS_WAIT_MS = 1000;

/**
 * Gives each organization without a change_feed row one, so that it can be claimed. Rows that exist are
 * never written here: one a writer has updated and not yet committed (an apply records its events in its
 * transaction) would make the insert's conflict check wait for that writer, past the statement timeout
 * during a long apply. A new organization's first writer inserts its row in its transaction: the insert
 * waits for it at most FEED_ROWS_WAIT_MS, then leaves the missing rows to the next pass (that writer
 * gives its organization its row when it commits).
 */
async function giveFeedRows(prisma: PrismaClient): Promise<void> {
  try {
    await prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = ${FEED_ROWS_WAIT_MS}`);
      await tx.$executeRaw`INSERT INTO change_feed (org_id) SELECT o.id FROM organization o
        WHERE NOT EXISTS (SELECT 1 FROM change_feed f WHERE f.org_id = o.id) ON CONFLICT (org_id) DO NOTHING`;
    });
  } catch (error) {
    if (!isLockTimeout(error)) throw error;
  }
}

/**
 * One sweep of every organization due, at `now`, one claimed at a time; `going` is asked before each
 * claim and each page (false: the instance is stopping, and leaves the rest to the others).
 */
export async function sweepOnce(
  prisma: PrismaClient,
  options: SweepOptions,
  now = new Date(),
  going: () => boolean = () => true,
): Promise<SweepOutcome> {
  await forgetExpiredSignIns(prisma, now);
  await giveFeedRows(prisma);
  const outcome: SweepOutcome = { organizations: 0, busy: [], events: 0, changed: [] };
  // Due: not swept within a little less than the interval before this pass (an instance's timer
  // drifts, and a claim must not wait a whole interval more). What this pass claims is not due again
  // within it, however long it takes.
  const due = new Date(now.getTime() - options.intervalMs * 0.9);
  const started = performance.now();
  // Claims are as of when a sweep begins (and renewed as it goes): `now` and the time this pass has taken so far.
  const clock = () => new Date(now.getTime() + (performance.now() - started));
  for (;;) {
    const orgId = going() ? await claimOrganization(prisma, due, clock()) : null;
    if (orgId === null) return outcome;
    outcome.organizations += 1;
    const { recorded, stopped, busy } = await sweepOrganization(prisma, orgId, options, now, { clock, going });
    if (busy) outcome.busy.push(orgId);
    outcome.events += recorded;
    if (recorded) outcome.changed.push(orgId);
    if (stopped) return outcome;
  }
}

interface Logger {
  warn(object: object, message: string): void;
}

/** Sweeps every interval until stopped; `onEvents` hears of the organizations that got events. */
export function startSweeper(
  prisma: PrismaClient,
  options: SweepOptions,
  logger: Logger,
  onEvents: (orgId: string) => void,
): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  let stopped = false;
  const tick = () => {
    // A sweep slower than the interval is not overlapped by the next.
    if (running || stopped) return;
    running = sweepOnce(prisma, options, new Date(), () => !stopped)
      .then((outcome) => outcome.changed.forEach(onEvents))
      .catch((error: unknown) => logger.warn({ err: (error as Error).message }, 'trust sweep failed'))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, options.intervalMs);
  timer.unref();
  // The first sweep soon after start, not a whole interval later.
  const first = setTimeout(tick, Math.min(options.intervalMs, 1000));
  first.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      clearTimeout(first);
      await running;
    },
  };
}
