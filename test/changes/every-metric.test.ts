/**
 * Every metric evaluated a page at a time (the sweep, a new trust policy, a
 * fixture load) reaches the verdicts the writers' evaluation reaches, which
 * works each metric's inputs out upstream, however the pages cut the graph of
 * inputs: with pages of three metrics, an input is often in a later page
 * than a metric built on it, and is taken up by the next pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewChangeEvent } from '../../src/changes/event.js';
import { everyMetricTransitions, trustTransitions } from '../../src/changes/trust-transitions.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import {
  doc,
  docMetric,
  newTeamOrg,
  postValidations,
  putRegistry,
  type RegistryDoc,
  type TeamOrg,
} from '../registry/support.js';

const DAY_MS = 24 * 3600 * 1000;
const COUNT = 40;
const POLICY = { staleValidationDays: 30 };

let t: TestApp;
let org: TeamOrg;

/** A fixed pseudo-random sequence, so that the graph is the same every run. */
function sequence(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

const keyOf = (i: number) => `m${String(i).padStart(2, '0')}`;

beforeAll(async () => {
  t = await startTestApp();
  org = await newTeamOrg(t.database.prisma, 'every-metric');
  const random = sequence(7);
  // Each metric reads up to three earlier ones; the ids (random) order them otherwise. Tier 1's stale
  // evidence is do_not_use, which carries over to every metric built on it.
  const metrics = Array.from({ length: COUNT }, (_, i) => {
    const inputs = [
      ...new Set(Array.from({ length: i ? Math.floor(random() * 4) : 0 }, () => keyOf(Math.floor(random() * i)))),
    ];
    return docMetric(keyOf(i), {
      lifecycle_status: 'RELEASED',
      policy_tier: random() < 0.3 ? 'tier_1' : 'tier_3',
      ...(inputs.length ? { inputs } : {}),
    });
  });
  const applied = await putRegistry(
    t.app,
    {
      ...doc(org.slug, metrics),
      trust_policy: { tier_1: { stale_validation: 'do_not_use', stale_after_days: 7 } },
    } as RegistryDoc,
    { token: org.token },
  );
  expect(applied.statusCode, applied.body).toBe(200);
  // Validated five days ago: fresh now, stale for tier 1 three days on (and never for tier 3).
  const ranAt = new Date(Date.now() - 5 * DAY_MS).toISOString();
  const validated = await postValidations(
    t.app,
    {
      results: metrics.map((metric, i) => ({
        metric_key: metric.key,
        ran_at: ranAt,
        status: i % 11 === 3 ? 'failed' : 'passed',
        source: 'ci',
      })),
    },
    { token: org.token },
  );
  expect(validated.statusCode, validated.body).toBe(200);
});
afterAll(async () => {
  await t?.close();
});

type Client = Pick<TestApp['database']['prisma'], '$queryRawUnsafe'>;

/** Each metric's stored verdict, reasons and untrusted inputs, by key (through `client`: a transaction's). */
async function storedStates(client: Client = t.database.prisma) {
  return client.$queryRawUnsafe<{ key: string; verdict: string; reasons: string[]; untrusted_inputs: unknown }[]>(
    `SELECT m.key, s.verdict, s.reasons, s.untrusted_inputs FROM metric m
     JOIN metric_trust_state s ON s.metric_id = m.id WHERE m.org_id = $1::uuid ORDER BY m.key`,
    org.id,
  );
}

/** Every metric evaluated at `now` in pages of three, a transaction each, as the sweep does. */
async function inPagesOfThree(now: Date) {
  const events: NewChangeEvent[] = [];
  let pages = 0;
  await everyMetricTransitions(
    org.id,
    POLICY,
    now,
    (evaluate) =>
      t.database.prisma.$transaction(async (tx) => {
        pages++;
        const page = await evaluate(tx);
        events.push(...page.events);
        return page;
      }),
    { pageSize: 3 },
  );
  return { events, pages };
}

class RolledBack extends Error {}

describe('every metric, a page at a time', () => {
  it('reaches the verdicts and events of the evaluation upstream, with pages of three', async () => {
    const { prisma } = t.database;
    const later = new Date(Date.now() + 3 * DAY_MS);
    const ids = (await prisma.metric.findMany({ where: { orgId: org.id }, select: { id: true } })).map((m) => m.id);
    expect(ids).toHaveLength(COUNT);

    // What the writers' evaluation says three days on, in a transaction rolled back.
    let expectedStates: Awaited<ReturnType<typeof storedStates>> = [];
    let expectedEvents: NewChangeEvent[] = [];
    await prisma
      .$transaction(async (tx) => {
        expectedEvents = await trustTransitions(tx, org.id, ids, POLICY, later);
        expectedStates = await storedStates(tx);
        throw new RolledBack();
      })
      .catch((error: unknown) => {
        if (!(error instanceof RolledBack)) throw error;
      });
    // The case is one where time moves verdicts, and inputs carry them.
    expect(expectedEvents.length).toBeGreaterThan(3);
    expect(expectedStates.some((state) => state.reasons.includes('untrusted_input'))).toBe(true);

    const { events, pages } = await inPagesOfThree(later);
    expect(await storedStates()).toEqual(expectedStates);
    // More than the first pass over every metric: the next ones over the metrics built on those written.
    expect(pages).toBeGreaterThan(Math.ceil(COUNT / 3) + 1);
    // Each metric's events lead from its verdict before to the one expected, by way of another when a
    // pass saw its inputs before they changed (the list of untrusted inputs an event names may be that
    // pass's; the stored one is the final list, as compared above).
    const verdicts = (list: NewChangeEvent[]) => {
      const byKey = new Map<string, { from: unknown; to: unknown }>();
      for (const event of list) {
        const { from, to } = event.detail as { from: unknown; to: { verdict: string; reasons: string[] } };
        byKey.set(event.metric.key, {
          from: byKey.get(event.metric.key)?.from ?? from,
          to: { verdict: to.verdict, reasons: to.reasons },
        });
      }
      return Object.fromEntries([...byKey].sort(([a], [b]) => a.localeCompare(b)));
    };
    expect(verdicts(events)).toEqual(verdicts(expectedEvents));

    // Once settled, a pass stores nothing and announces nothing.
    const again = (await inPagesOfThree(later)).events;
    expect(again).toEqual([]);
  });
});
