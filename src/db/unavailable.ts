/**
 * Whether a failure means the database did not answer (it is down,
 * restarting, refusing connections or dropped them), as opposed to a fault
 * of the statement or of the code. The first is the client's to retry later
 * (503 with Retry-After); the second is a 500.
 *
 * The same outage reaches the service in several wrappings: node-postgres's
 * socket errors and SQLSTATEs, the driver adapter's DriverAdapterError (its
 * `cause` an object with a `kind`), Prisma's P1xxx errors (the adapter's
 * error in `meta.driverAdapterError`), GraphQL errors (`originalError`), and
 * PGlite closed under the service. Every wrapping is looked through.
 */

/** Node's codes of a connection that could not be made or was cut. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs of a server that is not serving: class 08 (connection exception),
 * 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now
 * (starting up, shutting down, in recovery), 53300 too_many_connections.
 */
const SERVER_STATES = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;

/**
 * Prisma's codes of the same: can't reach (P1001), timed out reaching
 * (P1002), socket timeout (P1008), connection closed (P1017), pool timeout
 * (P2024), too many connections (P2037).
 */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']);

/** The driver adapter's kinds of the same (@prisma/driver-adapter-utils). */
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);

/**
 * Failures that node-postgres, its pool and PGlite say only in words: a
 * connection lost mid-statement, a pooled connection that could not be made
 * within its timeout, a client left unusable by a lost connection.
 */
const MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|PGlite is closed)/;

/** How deep wrappings are looked through: a cycle or a long chain ends here. */
const MAX_DEPTH = 8;

function signalsUnavailable(candidate: Record<string, unknown>): boolean {
  const { code, kind, originalCode, message } = candidate;
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || SERVER_STATES.test(code) || PRISMA_CODES.has(code))) {
    return true;
  }
  if (typeof kind === 'string' && ADAPTER_KINDS.has(kind)) return true;
  if (typeof originalCode === 'string' && SERVER_STATES.test(originalCode)) return true;
  return typeof message === 'string' && MESSAGES.test(message);
}

function wrapped(candidate: Record<string, unknown>): unknown[] {
  const inner = [candidate.cause, candidate.originalError];
  const meta = candidate.meta as { driverAdapterError?: unknown } | undefined;
  if (meta && typeof meta === 'object') inner.push(meta.driverAdapterError);
  if (Array.isArray(candidate.errors)) inner.push(...candidate.errors);
  return inner;
}

/** Whether `error` or one of its wrappings passes `test`. */
function anyWrapping(error: unknown, test: (candidate: Record<string, unknown>) => boolean): boolean {
  let level: unknown[] = [error];
  for (let depth = 0; depth < MAX_DEPTH && level.length; depth++) {
    const next: unknown[] = [];
    for (const candidate of level) {
      if (!candidate || typeof candidate !== 'object') continue;
      const fields = candidate as Record<string, unknown>;
      if (test(fields)) return true;
      next.push(...wrapped(fields));
    }
    level = next;
  }
  return false;
}

export function isDatabaseUnavailable(error: unknown): boolean {
  return anyWrapping(error, signalsUnavailable);
}

/**
 * Whether a statement gave up waiting for a lock (SQLSTATE 55P03, past its
 * `lock_timeout`): not an outage, and not the statement's fault either.
 */
export function isLockTimeout(error: unknown): boolean {
  return anyWrapping(error, ({ code, originalCode }) => code === '55P03' || originalCode === '55P03');
}

/**
 * Whether a statement or a transaction ran out of its time: SQLSTATE 57014
 * (canceled, at its `statement_timeout`) or Prisma's P2028 (an interactive
 * transaction past its timeout, rolled back).
 */
export function isOutOfTime(error: unknown): boolean {
  return anyWrapping(
    error,
    ({ code, originalCode }) => code === '57014' || originalCode === '57014' || code === 'P2028',
  );
}
