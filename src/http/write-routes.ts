/**
 * The registry's write routes: `PUT /api/registry` (apply a registry
 * document), `POST /api/validations` (validation evidence) and
 * `POST /api/validations/dbt` (the evidence of a dbt run's tests). Callers are
 * automation with a service token holding the route's scope, or a signed-in
 * admin or owner (with the key administration routes' cross-origin rules).
 * A read API key is never accepted here, nor a service token on a read route.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WriteScope } from '../auth/service-token.js';
import type { ChangeWatcher } from '../changes/watcher.js';
import type { Principal, ServiceConfig } from '../context.js';
import { badRequest, documentProblems, errors, HttpError } from '../errors.js';
import { LifecycleStatus } from '../generated/prisma/enums.js';
import { applyRegistryDocument } from '../registry/apply.js';
import { recordDbtEvidence } from '../registry/dbt-validations.js';
import { DBT_EVIDENCE_BODY_LIMIT, REGISTRY_BODY_LIMIT, VALIDATIONS_BODY_LIMIT } from '../registry/limits.js';
import { type DocumentReader, DocumentReadFailed, DocumentReadsBusyError } from '../registry/read-off-thread.js';
import { RegistryError } from '../registry/registry-error.js';
import { RemovalsNotAllowed } from '../registry/removals.js';
import { SOURCE_FORMATS, type SourceFormat } from '../registry/source.js';
import { recordValidations } from '../registry/validations.js';
import {
  RegistryBusyError,
  type RegistryWriteQueue,
  type RegistryWriter,
  WritesBusyError,
} from '../registry/write-queue.js';
import { type Query, rejectUnknownParameters } from '../rest/query.js';
import { rejectCrossOrigin } from './cross-origin.js';
import { clientErrorHandler } from './error-reply.js';
import { firstHeader } from './headers.js';
import { type AccessDeps, admitAdminSession, admitServiceToken, noteOrganizationWrite } from './request-auth.js';
import { utf8Body } from './utf8-body.js';

export interface WriteRoutesDeps {
  access: AccessDeps;
  config: ServiceConfig;
  /** told of each commit, so that this instance's waiting long-polls answer at once */
  watcher: ChangeWatcher;
  /** applies and validation results of an organization take turns through it */
  writeQueue: RegistryWriteQueue;
  /** reads the bodies, off the event loop and within a memory and a time budget */
  documentReader: DocumentReader;
  /** removals a prune makes without allow_removals (PRUNE_MAX_REMOVALS); default: the service's default */
  pruneMaxRemovals?: number;
}

/** The query parameters of PUT /api/registry; any other is refused before the body is read. */
export const APPLY_PARAMETERS = [
  'dry_run',
  'prune',
  'format',
  'default_lifecycle',
  'allow_removals',
  'source',
  'force_conflicts',
  'check',
] as const;

/** How the refusal of conflicts tells an HTTP caller to take the fields over. */
export const FORCE_CONFLICTS_HINT = 'force_conflicts=true';

/** An apply of a large document runs for seconds: past the read routes' deadline. */
const WRITE_DEADLINE_MS = 300_000;

const JSON_TYPES = ['application/json'];
const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

function mediaType(request: FastifyRequest): string | undefined {
  return firstHeader(request, 'content-type')?.split(';')[0]?.trim().toLowerCase();
}

const problemsResponse = (lines: readonly string[]) => new HttpError(documentProblems(lines));

function sourceFormatQuery(request: FastifyRequest): SourceFormat {
  const value = (request.query as Record<string, unknown>).format ?? 'registry';
  if (SOURCE_FORMATS.includes(value as SourceFormat)) return value as SourceFormat;
  throw new HttpError(badRequest(`format must be one of ${SOURCE_FORMATS.join(', ')}`));
}

function lifecycleQuery(request: FastifyRequest): LifecycleStatus | undefined {
  const value = (request.query as Record<string, unknown>).default_lifecycle;
  if (value === undefined) return undefined;
  if (Object.values(LifecycleStatus).includes(value as LifecycleStatus)) return value as LifecycleStatus;
  throw new HttpError(badRequest(`default_lifecycle must be one of ${Object.values(LifecycleStatus).join(', ')}`));
}

function booleanQuery(request: FastifyRequest, name: string): boolean {
  const value = (request.query as Record<string, unknown>)[name];
  if (value === undefined || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new HttpError(badRequest(`${name} must be true or false`));
}

/** source=NAME: a string (its spelling is checked with the document, SOURCE_NAME_PATTERN), or absent. */
function sourceQuery(request: FastifyRequest): string | undefined {
  const value = (request.query as Record<string, unknown>).source;
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  throw new HttpError(badRequest('source must be given once'));
}

/** A count of removals: a whole number, as many digits as a document's metrics can need. */
function removalsQuery(request: FastifyRequest): number | undefined {
  const value = (request.query as Record<string, unknown>).allow_removals;
  if (value === undefined) return undefined;
  if (typeof value === 'string' && /^\d{1,7}$/.test(value)) return Number(value);
  throw new HttpError(badRequest('allow_removals must be a whole number of metrics (0 or more)'));
}

/** How the refusal of a prune tells an HTTP caller to accept `count` removals. */
export const confirmRemovals = (count: number) => `allow_removals=${count}`;

function writerOf(principal: Principal, write: RegistryWriter['write']): RegistryWriter {
  if (principal.kind === 'service_token') return { write, by: { kind: 'service_token', id: principal.tokenId } };
  if (principal.kind === 'session') return { write, by: { kind: 'user', id: principal.userId } };
  throw new Error('a read API key reached a write route');
}

/** A body whose reading went past its thread's limits, or waited for a thread for as long as it may. */
async function readBody<T>(reading: Promise<T>): Promise<T> {
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

/** A writer that waited its turn for as long as it may. */
function busyResponse(error: unknown): unknown {
  if (error instanceof RegistryBusyError) {
    return new HttpError(errors.registryBusy(error.holder, error.since, error.retryAfterSeconds));
  }
  if (error instanceof WritesBusyError) return new HttpError(errors.writesBusy(error.retryAfterSeconds));
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

export async function writeRoutes(app: FastifyInstance, deps: WriteRoutesDeps) {
  const { access, config, watcher, writeQueue, documentReader, pruneMaxRemovals } = deps;
  const principals = new WeakMap<FastifyRequest, Principal>();

  function principalOf(request: FastifyRequest): Principal {
    const principal = principals.get(request);
    if (!principal) throw new Error('write route reached without an admitted caller');
    return principal;
  }

  // The body is parsed by the routes (YAML or JSON, with the place of each problem), not by Fastify;
  // its bytes are decoded here, refused when they are not UTF-8 rather than read as U+FFFD.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([...JSON_TYPES, ...YAML_TYPES], { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, utf8Body(body as Buffer));
    } catch (error) {
      done(error as HttpError, undefined);
    }
  });

  app.setErrorHandler(clientErrorHandler);

  app.route({
    method: 'PUT',
    url: '/api/registry',
    bodyLimit: REGISTRY_BODY_LIMIT,
    handlerTimeout: WRITE_DEADLINE_MS,
    onRequest: async (request, reply) => {
      principals.set(request, await admitWriter(access, request, reply, 'registry:write'));
      rejectUnknownParameters(request.query as Query, APPLY_PARAMETERS);
      const type = mediaType(request);
      if (!type || ![...JSON_TYPES, ...YAML_TYPES].includes(type)) {
        throw new HttpError(errors.documentContentTypeRequired);
      }
    },
    handler: async (request) => {
      const principal = principalOf(request);
      // A check plans like a dry run and says whether the registry matches: CI's drift gate.
      const check = booleanQuery(request, 'check');
      const dryRun = check || booleanQuery(request, 'dry_run');
      const forceConflicts = booleanQuery(request, 'force_conflicts');
      const prune = booleanQuery(request, 'prune');
      const allowRemovals = removalsQuery(request);
      const format = sourceFormatQuery(request);
      const source = await readBody(
        documentReader.readRegistry(typeof request.body === 'string' ? request.body : '', {
          format,
          syntax: JSON_TYPES.includes(mediaType(request) ?? '') ? 'json' : 'yaml',
          organization: principal.org.slug,
          defaultLifecycle: lifecycleQuery(request),
          source: sourceQuery(request),
        }),
      );
      if (!source.ok) throw problemsResponse(source.lines);
      const { document } = source;
      if (document.organization !== principal.org.slug && document.organization !== principal.org.id) {
        throw new HttpError(errors.otherOrganization(document.organization, principal.org.slug));
      }
      // The plan's readers include what this instance has counted and not yet written (others' are up to 10 s behind).
      await access.usage?.flush();
      try {
        const apply = () =>
          applyRegistryDocument(access.prisma, principal.org.id, document, {
            dryRun,
            prune,
            forceConflicts,
            forceHint: FORCE_CONFLICTS_HINT,
            refuseConflicts: check,
            allowRemovals,
            maxRemovals: pruneMaxRemovals,
            trust: config.trust,
          });
        // A dry run takes no lock: it reads the registry as any reader does.
        const outcome = dryRun
          ? await apply()
          : await writeQueue.run(principal.org.id, writerOf(principal, 'apply'), apply);
        const { plan, applied, events } = outcome;
        if (!dryRun) await noteOrganizationWrite(access, request, principal.org.id);
        if (events) watcher.poke(principal.org.id);
        return {
          data: {
            organization: principal.org.slug,
            source: plan.source,
            plan: plan.entries,
            totals: plan.totals,
            trust_policy: plan.trustPolicy,
            dry_run: dryRun,
            ...(check ? { in_sync: !plan.changes } : {}),
            applied,
            allow_removals_required: outcome.allowRemovalsRequired,
            impact: outcome.impact,
          },
        };
      } catch (error) {
        if (error instanceof RegistryError) throw problemsResponse(await source.problemLines(error));
        if (error instanceof RemovalsNotAllowed) {
          throw new HttpError(errors.removalsNotAllowed(error.lines(confirmRemovals)));
        }
        throw busyResponse(error);
      }
    },
  });

  /** Both validation routes: a validations:write caller, no query parameter, a JSON body. */
  const admitValidationsWriter = async (request: FastifyRequest, reply: FastifyReply) => {
    principals.set(request, await admitWriter(access, request, reply, 'validations:write'));
    rejectUnknownParameters(request.query as Query, []);
    if (mediaType(request) !== 'application/json') throw new HttpError(errors.jsonContentTypeRequired);
  };

  app.route({
    method: 'POST',
    url: '/api/validations',
    bodyLimit: VALIDATIONS_BODY_LIMIT,
    handlerTimeout: WRITE_DEADLINE_MS,
    onRequest: admitValidationsWriter,
    handler: async (request) => {
      const principal = principalOf(request);
      const read = await readBody(documentReader.readValidations(typeof request.body === 'string' ? request.body : ''));
      if (!read.ok) throw problemsResponse(read.lines);
      const { batch } = read;
      try {
        const { recorded, duplicates, events } = await writeQueue.run(
          principal.org.id,
          writerOf(principal, 'validations'),
          () => recordValidations(access.prisma, principal.org.id, batch, { trust: config.trust }),
        );
        await noteOrganizationWrite(access, request, principal.org.id);
        if (events) watcher.poke(principal.org.id);
        return { data: { recorded, duplicates } };
      } catch (error) {
        if (error instanceof RegistryError) throw problemsResponse(error.lines());
        throw busyResponse(error);
      }
    },
  });

  app.route({
    method: 'POST',
    url: '/api/validations/dbt',
    bodyLimit: DBT_EVIDENCE_BODY_LIMIT,
    handlerTimeout: WRITE_DEADLINE_MS,
    onRequest: admitValidationsWriter,
    handler: async (request) => {
      const principal = principalOf(request);
      const read = await readBody(documentReader.readDbtEvidence(typeof request.body === 'string' ? request.body : ''));
      if (!read.ok) throw problemsResponse(read.lines);
      const { evidence } = read;
      try {
        const summary = await writeQueue.run(principal.org.id, writerOf(principal, 'validations'), () =>
          recordDbtEvidence(access.prisma, principal.org.id, evidence, { trust: config.trust }),
        );
        if (summary.recorded > 0) {
          await noteOrganizationWrite(access, request, principal.org.id);
          watcher.poke(principal.org.id);
        }
        return { data: summary };
      } catch (error) {
        if (error instanceof RegistryError) throw problemsResponse(error.lines());
        throw busyResponse(error);
      }
    },
  });
}
