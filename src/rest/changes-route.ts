/**
 * `GET /api/v1/changes`: the change feed of the caller's organization, one
 * page of the `changes` operation, with a long-poll. With `wait` and no event
 * after the cursor, the request waits (holding no database connection: the
 * watcher, src/changes/watcher.ts) until one is committed, on any instance,
 * or `wait` seconds have passed, then answers the page it reads.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { decodeCursor } from '../changes/cursor.js';
import { DEFAULT_CHANGES_LIMIT, MAX_CHANGES_LIMIT } from '../changes/feed.js';
import type { ChangeWatcher } from '../changes/watcher.js';
import { createContext, type ServiceConfig } from '../context.js';
import { badRequest, errors, HttpError } from '../errors.js';
import { failedRead } from '../http/error-reply.js';
import { untilReplyCloses } from '../http/reply-closed.js';
import { type AccessDeps, admitApiKey, readsOf } from '../http/request-auth.js';
import { CURSOR_EXPIRED, INVALID_CURSOR } from '../schema/change-event.js';
import { ChangesDocument, runOperation } from './execute.js';
import { param, type Query } from './query.js';

/** The longest long-poll a request may ask for, in seconds. */
export const MAX_WAIT_SECONDS = 30;

export interface ChangesRouteDeps {
  access: AccessDeps;
  config: ServiceConfig;
  watcher: ChangeWatcher;
}

function boundedInteger(value: string | undefined, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d{1,6}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new HttpError(badRequest(`${name} must be an integer from ${min} to ${max}`));
  }
  return Number(value);
}

export async function changesRoute(app: FastifyInstance, deps: ChangesRouteDeps) {
  const { access, config, watcher } = deps;

  app.get('/api/v1/changes', {
    // A long-poll answers after its wait: past the read routes' deadline.
    handlerTimeout: (MAX_WAIT_SECONDS + 15) * 1000,
    handler: async (request: FastifyRequest, reply) => {
      const principal = await admitApiKey(access, request, reply, 'metrics:read');
      const query = request.query as Query;
      const after = param(query, 'after') ?? null;
      const first = boundedInteger(param(query, 'limit'), 'limit', 1, MAX_CHANGES_LIMIT, DEFAULT_CHANGES_LIMIT);
      const waitSeconds = boundedInteger(param(query, 'wait'), 'wait', 0, MAX_WAIT_SECONDS, 0);
      const orgId = principal.org.id;
      // With read replicas, the operation reads a cursor past what the replica has replayed on the primary
      // (src/schema/change-event.ts), so it is never refused as unknown nor answered from behind.
      const context = createContext(readsOf(access, request), principal, config, access.metrics);
      const read = async () => {
        const result = await runOperation(ChangesDocument, { after, first }, context);
        const [error] = result.errors;
        const code = error?.extensions.code;
        if (code === INVALID_CURSOR) throw new HttpError(badRequest(error?.message ?? ''));
        if (code === CURSOR_EXPIRED) throw new HttpError(errors.cursorExpired(error?.message ?? ''));
        if (error || !result.data) {
          request.log.error({ err: error }, 'change feed read failed');
          throw failedRead(result.errors, errors.internal);
        }
        return result.data.changes;
      };
      let page = await read();
      const deadline = Date.now() + waitSeconds * 1000;
      const closed = untilReplyCloses(reply);
      while (!page.events.length && Date.now() < deadline && !closed.aborted) {
        const position = decodeCursor(page.next_cursor, orgId) ?? 0n;
        access.metrics.longPolls.inc();
        const woken = await watcher.wait(orgId, position, deadline - Date.now(), closed);
        access.metrics.longPolls.dec();
        if (!woken) break;
        // Woken by a commit on the primary, which a replica may not have replayed yet.
        access.routing?.routeOf(request).usePrimary();
        page = await read();
      }
      reply.header('Cache-Control', 'no-store');
      return { data: page.events, next_cursor: page.next_cursor, meta: { apiVersion: 'v1' } };
    },
  });
}
