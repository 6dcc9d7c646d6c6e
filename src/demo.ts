/**
 * Whether `npm start` loads the demo registry (prisma/fixtures/demo.json)
 * into an empty embedded database. Its API keys and its owner's session
 * token are public in the repository, so by default only a development
 * instance that nothing but this machine can reach gets it: embedded
 * database, `NODE_ENV` not `production`, `HOST` a loopback address.
 * `DEMO=1` asks for it anyway (still only into an empty embedded database),
 * `DEMO=0` never. With `TRUST_PROXY` set it is refused even with `DEMO=1`:
 * a proxy in front means the instance is reachable from elsewhere, even if
 * it listens on loopback.
 *
 * Its dates are moved at load time ({@link demoAsOf}) so that its validation
 * evidence is recent whenever it is loaded, and its verdicts stay the ones
 * it was written to show.
 */
import { isIP } from 'node:net';
import type { TrustProxy } from './env.js';

export interface DemoDecisionInput {
  databaseKind: 'embedded' | 'postgres';
  nodeEnv: string;
  host: string;
  /** DEMO: true (1), false (0) or unset */
  demo: boolean | undefined;
  /** TRUST_PROXY: anything but false refuses the demo */
  trustProxy: TrustProxy;
}

/** 127.0.0.0/8, ::1, an IPv4-mapped 127.x address, or `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const address = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (address === 'localhost') return true;
  if (address === '::1') return true;
  const v4 = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

export function shouldLoadDemo(input: DemoDecisionInput): boolean {
  if (input.databaseKind !== 'embedded') return false;
  if (input.trustProxy !== false) return false;
  if (input.demo !== undefined) return input.demo;
  return input.nodeEnv !== 'production' && isLoopbackHost(input.host);
}

/** Why DEMO=1 is not honoured, for the start banner; null when it is (or was not asked for). */
export function demoRefusal(input: DemoDecisionInput): string | null {
  if (input.demo !== true) return null;
  if (input.databaseKind !== 'embedded') return 'DEMO=1 ignored: the demo registry is never loaded into PostgreSQL';
  if (input.trustProxy !== false) {
    return 'DEMO=1 ignored: TRUST_PROXY is set, so this instance is reachable through a proxy and the public demo keys would be too';
  }
  return null;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** The newest validation evidence of the loaded demo is this many whole days old. */
export const DEMO_NEWEST_EVIDENCE_DAYS = 2;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

interface DemoShape {
  organizations: { metrics?: { validations?: { ran_at: string }[] }[] }[];
}

/**
 * The demo fixture as of `now`: every timestamp and date in it moved by the
 * same whole number of days, so that its newest validation run is
 * {@link DEMO_NEWEST_EVIDENCE_DAYS} days before `now` and every interval
 * between its dates (hence every verdict) is as written. The result is a
 * fixture of the same format; the input is not changed.
 */
export function demoAsOf<T extends DemoShape>(fixture: T, now: Date): T {
  const runs = fixture.organizations.flatMap((org) =>
    (org.metrics ?? []).flatMap((metric) => (metric.validations ?? []).map((run) => Date.parse(run.ran_at))),
  );
  if (!runs.length) return structuredClone(fixture);
  const newest = Math.max(...runs);
  const shiftDays = Math.floor((now.getTime() - DEMO_NEWEST_EVIDENCE_DAYS * DAY_MS - newest) / DAY_MS);
  const shiftMs = shiftDays * DAY_MS;
  const move = (value: unknown): unknown => {
    if (typeof value === 'string') {
      if (TIMESTAMP.test(value)) return new Date(Date.parse(value) + shiftMs).toISOString();
      if (DATE.test(value)) return new Date(Date.parse(`${value}T00:00:00Z`) + shiftMs).toISOString().slice(0, 10);
      return value;
    }
    if (Array.isArray(value)) return value.map(move);
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, move(inner)]));
    }
    return value;
  };
  return move(fixture) as T;
}
