/**
 * Large statement parameters, kept away from Prisma's client.
 *
 * A bulk write's parameter is about a megabyte of JSON (src/db/bulk-write.ts).
 * Sent as a parameter of `$executeRawUnsafe`, Prisma's client writes its
 * request as JSON, compiles a plan holding the value and reads the plan
 * back: three copies of a megabyte a statement, all garbage at once, which
 * grew a fixture load of 100,000 metrics to 1.2 GB. And Prisma keeps the
 * arguments of its last 100 debug calls, whether or not DEBUG is set (for the
 * logs it attaches to an error report): the client keeps each statement's
 * plan, the driver adapter the statement it was given. The last thirty-odd
 * large statements stayed in memory after the work was done (170 MB of heap,
 * collected, after that load).
 *
 * So a bulk write hands its parameter to {@link withLargeParameter}, which
 * gives Prisma a short token in its place; the driver adapter's wrapper
 * (src/db/query-stats.ts) puts the value back just before the statement
 * goes to the driver ({@link sendingLargeParameters}). Any statement whose
 * parameters are large (a trust pass sends every id of a registry) is given
 * to the driver as a copy whose parameters are emptied once it has run, and
 * the client's debug history then gets as many calls of a few bytes, which
 * push the plans out of it. With DEBUG naming this module's namespace, the
 * client's history is left as it is: it is what the user asked for.
 */
import { Debug } from '@prisma/client/runtime/client';
import type { SqlQuery } from '@prisma/driver-adapter-utils';

/** The length of Prisma's debug history (@prisma/debug keeps the last 100 calls). */
const DEBUG_HISTORY = 100;

/** Parameters past this many characters in all are forgotten (a point read's are a few dozen). */
const LARGE_PARAMETERS = 64 * 1024;

const NAMESPACE = 'metric-governance:large-parameters';
const filler = Debug(NAMESPACE);

/** Values handed over, by their token, until their statement reaches the driver or fails before. */
const handedOver = new Map<string, unknown>();
let tokens = 0;

/**
 * Runs `statement` with a token standing for `value` among its
 * parameters: what reaches the driver is `value` itself.
 */
export async function withLargeParameter<T>(value: unknown, statement: (token: string) => Promise<T>): Promise<T> {
  tokens = (tokens + 1) % Number.MAX_SAFE_INTEGER;
  const token = `\u0000large-parameter:${tokens}`;
  handedOver.set(token, value);
  try {
    return await statement(token);
  } finally {
    handedOver.delete(token);
  }
}

/** About how many characters a parameter holds (a string's length; an array's members'). */
function sizeOf(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return value.reduce<number>((sum, member) => sum + sizeOf(member), 0);
  return 8;
}

function isLarge(args: readonly unknown[]): boolean {
  let size = 0;
  for (const arg of args) {
    size += sizeOf(arg);
    if (size > LARGE_PARAMETERS) return true;
  }
  return false;
}

const handedOverValue = (arg: unknown) => (typeof arg === 'string' && handedOver.has(arg) ? handedOver.get(arg) : arg);

/**
 * Runs `query` through `run` (the driver adapter's): with the values its
 * tokens stand for, and, when its parameters are large, so that Prisma
 * keeps none of them once it has run.
 */
export async function sendingLargeParameters<R>(query: SqlQuery, run: (query: SqlQuery) => Promise<R>): Promise<R> {
  const args = handedOver.size > 0 ? query.args.map(handedOverValue) : query.args;
  if (!isLarge(args)) return run(args === query.args ? query : { ...query, args });
  const sent = { ...query, args };
  try {
    return await run(sent);
  } finally {
    sent.args = [];
    if (!Debug.enabled(NAMESPACE)) for (let i = 0; i < DEBUG_HISTORY; i++) filler('.');
  }
}
