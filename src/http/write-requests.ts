/**
 * What the registry's write routes share (src/http/write-routes.ts,
 * src/http/upload-routes.ts): who may write, how a document's body is
 * taken, the query parameters of an apply, the response of one, and how its
 * refusals are answered.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WriteScope } from '../auth/service-token.js';
import type { Principal } from '../context.js';
import { isOutOfTime } from '../db/unavailable.js';
import { badRequest, documentProblems, errors, HttpError } from '../errors.js';
import type { TrustPolicy } from '../metric/trust.js';
import type { ApplyOptions, ApplyOutcome } from '../registry/apply.js';
import { DocumentReadFailed, DocumentReadsBusyError } from '../registry/read-off-thread.js';
import { RegistryError } from '../registry/registry-error.js';
import { RemovalsNotAllowed } from '../registry/removals.js';
import { RegistryBusyError, type RegistryWriter, WritesBusyError } from '../registry/write-queue.js';
import { rejectCrossOrigin } from './cross-origin.js';
import { firstHeader } from './headers.js';
import { type AccessDeps, admitAdminSession, admitServiceToken } from './request-auth.js';
import { utf8Body } from './utf8-body.js';

/** How the refusal of conflicts tells an HTTP caller to take the fields over. */
const FORCE_CONFLICTS_HINT = 'force_conflicts=true';

/** An apply of a large document runs for seconds: past the read routes' deadline. */
export const WRITE_DEADLINE_MS = 300_000;

export const JSON_TYPES = ['application/json'];
export const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

export function mediaType(request: FastifyRequest): string | undefined {
  return firstHeader(request, 'content-type')?.split(';')[0]?.trim().toLowerCase();
}

export const problemsResponse = (lines: readonly string[]) => new HttpError(documentProblems(lines));

export function booleanQuery(request: FastifyRequest, name: string): boolean {
  const value = (request.query as Record<string, unknown>)[name];
  if (value === undefined || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new HttpError(badRequest(`${name} must be true or false`));
}

/** source=NAME: a string (its spelling is checked with the document, SOURCE_NAME_PATTERN), or absent. */
export function sourceQuery(request: FastifyRequest): string | undefined {
  const value = (request.query as Record<string, unknown>).source;
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  throw new HttpError(badRequest('source must be given once'));
}

/** A count of removals: a whole number, as many digits as a document's metrics can need. */
export function removalsQuery(request: FastifyRequest): number | undefined {
  const value = (request.query as Record<string, unknown>).allow_removals;
  if (value === undefined) return undefined;
  if (typeof value === 'string' && /^\d{1,7}$/.test(value)) return Number(value);
  throw new HttpError(badRequest('allow_removals must be a whole number of metrics (0 or more)'));
}

/** How the refusal of a prune tells an HTTP caller to accept `count` removals. */
export const confirmRemovals = (count: number) => `allow_removals=${count}`;

export function writerOf(principal: Principal, write: RegistryWriter['write']): RegistryWriter {
  if (principal.kind === 'service_token') return { write, by: { kind: 'service_token', id: principal.tokenId } };
  if (principal.kind === 'session') return { write, by: { kind: 'user', id: principal.userId } };
  throw new Error('a read API key reached a write route');
}

/** A body whose reading went past its thread's limits, or waited for a thread for as long as it may. */
export async function readBody<T>(reading: Promise<T>): Promise<T> {
  try {
    return await reading;
  } catch (error) {
    if (error instanceof DocumentReadFailed) {
      const { heapMb, timeBudgetMs } = error.budget;
      const within = {
        memory: `${heapMb} MB of memory`,
        time: `${timeBudgetMs / 1000} s`,
        stack: 'the depth a read may recurse to',
      }[error.limit];
      throw new HttpError(errors.documentNotRead(within));
    }
    if (error instanceof DocumentReadsBusyError) throw new HttpError(errors.documentReadsBusy(error.retryAfterSeconds));
    throw error;
  }
}

/**
 * A writer that waited its turn for as long as it may, or whose transaction
 * ran out of its time (and was rolled back, writing nothing).
 */
export function busyResponse(error: unknown): unknown {
  if (error instanceof RegistryBusyError) {
    return new HttpError(errors.registryBusy(error.holder, error.since, error.retryAfterSeconds));
  }
  if (error instanceof WritesBusyError) return new HttpError(errors.writesBusy(error.retryAfterSeconds));
  if (isOutOfTime(error)) return new HttpError(errors.writeOutOfTime);
  return error;
}

/**
 * A bearer token means automation (a service token with `scope`); without
 * one, a signed-in admin or owner from this origin. Runs before the body is read.
 */
export async function admitWriter(
  access: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  scope: WriteScope,
): Promise<Principal> {
  if (firstHeader(request, 'authorization') !== undefined) return admitServiceToken(access, request, reply, scope);
  rejectCrossOrigin(request);
  return admitAdminSession(access, request, reply);
}

/**
 * The bodies of the write routes are parsed by the routes (YAML or JSON,
 * with the place of each problem), not by Fastify; their bytes are decoded
 * here, refused when they are not UTF-8 rather than read as U+FFFD.
 */
export function acceptDocumentBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([...JSON_TYPES, ...YAML_TYPES], { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, utf8Body(body as Buffer));
    } catch (error) {
      done(error as HttpError, undefined);
    }
  });
}

/** A registry document's body is JSON or YAML, said by its Content-Type. */
export function documentSyntax(request: FastifyRequest): 'json' | 'yaml' {
  const type = mediaType(request);
  if (!type || ![...JSON_TYPES, ...YAML_TYPES].includes(type)) throw new HttpError(errors.documentContentTypeRequired);
  return JSON_TYPES.includes(type) ? 'json' : 'yaml';
}

/** How an apply is asked for: check, dry_run, force_conflicts, prune and allow_removals. */
export function applyQuery(request: FastifyRequest) {
  // A check plans like a dry run and says whether the registry matches: CI's drift gate.
  const check = booleanQuery(request, 'check');
  return {
    check,
    dryRun: check || booleanQuery(request, 'dry_run'),
    forceConflicts: booleanQuery(request, 'force_conflicts'),
    prune: booleanQuery(request, 'prune'),
    allowRemovals: removalsQuery(request),
  };
}

/** The options of an apply as the request asked for it (see {@link applyQuery}). */
export function applyOptions(
  asked: ReturnType<typeof applyQuery>,
  settings: { trust: TrustPolicy; pruneMaxRemovals: number | undefined },
): ApplyOptions {
  return {
    dryRun: asked.dryRun,
    prune: asked.prune,
    forceConflicts: asked.forceConflicts,
    forceHint: FORCE_CONFLICTS_HINT,
    refuseConflicts: asked.check,
    allowRemovals: asked.allowRemovals,
    maxRemovals: settings.pruneMaxRemovals,
    trust: settings.trust,
  };
}

/** The response of an apply: its plan, totals, impact and whether it wrote. */
export function applyResponse(organization: string, outcome: ApplyOutcome, asked: { dryRun: boolean; check: boolean }) {
  const { plan } = outcome;
  return {
    organization,
    source: plan.source,
    plan: plan.entries,
    totals: plan.totals,
    trust_policy: plan.trustPolicy,
    dry_run: asked.dryRun,
    ...(asked.check ? { in_sync: !plan.changes } : {}),
    applied: outcome.applied,
    allow_removals_required: outcome.allowRemovalsRequired,
    impact: outcome.impact,
  };
}

/** An apply's refusal as its response: its problems (each placed by `lines`), its removals, or a busy registry. */
export async function applyRefusal(
  error: unknown,
  lines: (error: RegistryError) => Promise<string[]> | string[] = (refused) => refused.lines(),
): Promise<unknown> {
  if (error instanceof RegistryError) return problemsResponse(await lines(error));
  if (error instanceof RemovalsNotAllowed)
    return new HttpError(errors.removalsNotAllowed(error.lines(confirmRemovals)));
  return busyResponse(error);
}

/** The callers admitted by the write routes' onRequest hooks, for their handlers. */
export function admittedWriters() {
  const principals = new WeakMap<FastifyRequest, Principal>();
  return {
    admit(request: FastifyRequest, principal: Principal): void {
      principals.set(request, principal);
    },
    of(request: FastifyRequest): Principal {
      const principal = principals.get(request);
      if (!principal) throw new Error('write route reached without an admitted caller');
      return principal;
    },
  };
}
