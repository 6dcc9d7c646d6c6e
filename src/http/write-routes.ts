/**
 * The registry's write routes: `PUT /api/registry` (apply a registry
 * document), `POST /api/validations` (validation evidence) and
 * `POST /api/validations/dbt` (the evidence of a dbt run's tests). Callers are
 * automation with a service token holding the route's scope, or a signed-in
 * admin or owner (with the key administration routes' cross-origin rules).
 * A read API key is never accepted here, nor a service token on a read route.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ChangeWatcher } from '../changes/watcher.js';
import type { ServiceConfig } from '../context.js';
import { badRequest, errors, HttpError } from '../errors.js';
import { LifecycleStatus } from '../generated/prisma/enums.js';
import { applyRegistryDocument } from '../registry/apply.js';
import { recordDbtEvidence } from '../registry/dbt-validations.js';
import { DBT_EVIDENCE_BODY_LIMIT, REGISTRY_BODY_LIMIT, VALIDATIONS_BODY_LIMIT } from '../registry/limits.js';
import type { DocumentReader } from '../registry/read-off-thread.js';
import { RegistryError } from '../registry/registry-error.js';
import { SOURCE_FORMATS, type SourceFormat } from '../registry/source.js';
import { recordValidations } from '../registry/validations.js';
import type { RegistryWriteQueue } from '../registry/write-queue.js';
import { type Query, rejectUnknownParameters } from '../rest/query.js';
import { clientErrorHandler } from './error-reply.js';
import { type AccessDeps, noteOrganizationWrite } from './request-auth.js';
import {
  acceptDocumentBodies,
  admittedWriters,
  admitWriter,
  applyOptions,
  applyQuery,
  applyRefusal,
  applyResponse,
  busyResponse,
  documentSyntax,
  mediaType,
  problemsResponse,
  readBody,
  sourceQuery,
  WRITE_DEADLINE_MS,
  writerOf,
} from './write-requests.js';

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

export async function writeRoutes(app: FastifyInstance, deps: WriteRoutesDeps) {
  const { access, config, watcher, writeQueue, documentReader, pruneMaxRemovals } = deps;
  const writers = admittedWriters();

  acceptDocumentBodies(app);
  app.setErrorHandler(clientErrorHandler);

  app.route({
    method: 'PUT',
    url: '/api/registry',
    bodyLimit: REGISTRY_BODY_LIMIT,
    handlerTimeout: WRITE_DEADLINE_MS,
    onRequest: async (request, reply) => {
      writers.admit(request, await admitWriter(access, request, reply, 'registry:write'));
      rejectUnknownParameters(request.query as Query, APPLY_PARAMETERS);
      documentSyntax(request);
    },
    handler: async (request) => {
      const principal = writers.of(request);
      const asked = applyQuery(request);
      const format = sourceFormatQuery(request);
      const source = await readBody(
        documentReader.readRegistry(typeof request.body === 'string' ? request.body : '', {
          format,
          syntax: documentSyntax(request),
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
          applyRegistryDocument(
            access.prisma,
            principal.org.id,
            document,
            applyOptions(asked, { trust: config.trust, pruneMaxRemovals }),
          );
        // A dry run takes no lock: it reads the registry as any reader does.
        const outcome = asked.dryRun
          ? await apply()
          : await writeQueue.run(principal.org.id, writerOf(principal, 'apply'), apply);
        if (!asked.dryRun) await noteOrganizationWrite(access, request, principal.org.id);
        if (outcome.events) watcher.poke(principal.org.id);
        return { data: applyResponse(principal.org.slug, outcome, asked) };
      } catch (error) {
        throw await applyRefusal(error, (refused) => source.problemLines(refused));
      }
    },
  });

  /** Both validation routes: a validations:write caller, no query parameter, a JSON body. */
  const admitValidationsWriter = async (request: FastifyRequest, reply: FastifyReply) => {
    writers.admit(request, await admitWriter(access, request, reply, 'validations:write'));
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
      const principal = writers.of(request);
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
      const principal = writers.of(request);
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
