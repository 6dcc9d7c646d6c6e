/**
 * Registry uploads in parts (docs/registry.md, "Uploads in parts"): a
 * registry larger than one document sent as several, then applied whole.
 *
 * - `POST /api/registry/uploads` opens an upload (201).
 * - `PUT /api/registry/uploads/{upload_id}/parts/{part}` sends part `part`
 *   (1 to MAX_UPLOAD_PARTS), a registry document read and checked as
 *   `PUT /api/registry` reads one; sent again, it replaces the part.
 * - `GET /api/registry/uploads/{upload_id}` says what the upload holds.
 * - `POST /api/registry/uploads/{upload_id}/apply` plans and applies every
 *   part as one document, with PUT /api/registry's parameters and response;
 *   applied, the upload is gone. A dry run or check keeps it.
 * - `DELETE /api/registry/uploads/{upload_id}` drops it (204).
 *
 * Callers are those of PUT /api/registry: a service token with
 * `registry:write`, or a signed-in admin or owner. An upload is its
 * organization's: another organization's id is 404, as a wrong one is.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from '../context.js';
import { errors, HttpError } from '../errors.js';
import { applyUpload, UPLOAD_APPLY_TIMEOUT_MS } from '../registry/apply-upload.js';
import { sourceName } from '../registry/document.js';
import { REGISTRY_BODY_LIMIT } from '../registry/limits.js';
import {
  createUpload,
  deleteUpload,
  MAX_OPEN_UPLOADS,
  MAX_UPLOAD_BYTES,
  MAX_UPLOAD_METRICS,
  MAX_UPLOAD_PARTS,
  storeUploadPart,
  TooManyUploads,
  UploadNotFound,
  UploadTooLarge,
  uploadSummary,
} from '../registry/upload.js';
import { type Query, rejectUnknownParameters } from '../rest/query.js';
import { isUuid } from '../uuid.js';
import { clientErrorHandler } from './error-reply.js';
import { noteOrganizationWrite } from './request-auth.js';
import {
  acceptDocumentBodies,
  admittedWriters,
  admitWriter,
  applyOptions,
  applyQuery,
  applyRefusal,
  applyResponse,
  documentSyntax,
  problemsResponse,
  readBody,
  sourceQuery,
  WRITE_DEADLINE_MS,
  writerOf,
} from './write-requests.js';
import type { WriteRoutesDeps } from './write-routes.js';

/** The query parameters of an upload's apply: PUT /api/registry's, but those of reading a document. */
export const UPLOAD_APPLY_PARAMETERS = [
  'dry_run',
  'prune',
  'allow_removals',
  'source',
  'force_conflicts',
  'check',
] as const;

/** The upload named by the path; one that cannot be an id is not found, as an unknown one. */
function uploadIdOf(request: FastifyRequest): string {
  const id = (request.params as { upload_id?: string }).upload_id ?? '';
  if (!isUuid(id)) throw new HttpError(errors.uploadNotFound);
  return id.toLowerCase();
}

function partOf(request: FastifyRequest): number {
  const part = (request.params as { part?: string }).part ?? '';
  if (/^\d{1,3}$/.test(part) && Number(part) >= 1 && Number(part) <= MAX_UPLOAD_PARTS) return Number(part);
  throw new HttpError(errors.invalidParameter('part', `a whole number from 1 to ${MAX_UPLOAD_PARTS}`));
}

/** source=NAME of an apply, spelled as a document's `source` is. */
function applySource(request: FastifyRequest): string | undefined {
  const source = sourceQuery(request);
  if (source === undefined) return undefined;
  const parsed = sourceName.safeParse(source);
  if (!parsed.success) throw problemsResponse([`source: ${parsed.error.issues[0]?.message ?? 'invalid'}`]);
  return source;
}

/** The errors of the upload's own rules as their responses. */
function uploadRefusal(error: unknown): unknown {
  if (error instanceof UploadNotFound) return new HttpError(errors.uploadNotFound);
  if (error instanceof TooManyUploads) return new HttpError(errors.tooManyUploads(MAX_OPEN_UPLOADS));
  if (error instanceof UploadTooLarge) {
    return new HttpError(
      error.limit === 'metrics'
        ? errors.uploadTooLarge(MAX_UPLOAD_METRICS)
        : errors.uploadTooManyBytes(MAX_UPLOAD_BYTES / 1024 / 1024),
    );
  }
  return error;
}

export async function uploadRoutes(app: FastifyInstance, deps: WriteRoutesDeps) {
  const { access, config, watcher, writeQueue, documentReader, pruneMaxRemovals } = deps;
  const writers = admittedWriters();
  const admit =
    (parameters: readonly string[]) => async (request: FastifyRequest, reply: Parameters<typeof admitWriter>[2]) => {
      writers.admit(request, await admitWriter(access, request, reply, 'registry:write'));
      rejectUnknownParameters(request.query as Query, parameters);
    };
  const orgOf = (principal: Principal) => principal.org.id;

  acceptDocumentBodies(app);
  app.setErrorHandler(clientErrorHandler);

  app.post('/api/registry/uploads', { onRequest: admit([]) }, async (request, reply) => {
    try {
      const upload = await createUpload(access.prisma, orgOf(writers.of(request)));
      reply.code(201);
      return { data: upload };
    } catch (error) {
      throw uploadRefusal(error);
    }
  });

  app.get('/api/registry/uploads/:upload_id', { onRequest: admit([]) }, async (request) => {
    const id = uploadIdOf(request);
    try {
      return { data: await uploadSummary(access.prisma, orgOf(writers.of(request)), id) };
    } catch (error) {
      throw uploadRefusal(error);
    }
  });

  app.delete('/api/registry/uploads/:upload_id', { onRequest: admit([]) }, async (request, reply) => {
    const id = uploadIdOf(request);
    if (!(await deleteUpload(access.prisma, orgOf(writers.of(request)), id))) {
      throw new HttpError(errors.uploadNotFound);
    }
    reply.code(204);
  });

  app.route({
    method: 'PUT',
    url: '/api/registry/uploads/:upload_id/parts/:part',
    bodyLimit: REGISTRY_BODY_LIMIT,
    handlerTimeout: WRITE_DEADLINE_MS,
    onRequest: async (request, reply) => {
      await admit([])(request, reply);
      uploadIdOf(request);
      partOf(request);
      documentSyntax(request);
    },
    handler: async (request) => {
      const principal = writers.of(request);
      const body = typeof request.body === 'string' ? request.body : '';
      const bodyBytes = Buffer.byteLength(body);
      const source = await readBody(
        documentReader.readRegistry(body, {
          format: 'registry',
          syntax: documentSyntax(request),
          organization: principal.org.slug,
        }),
      );
      if (!source.ok) throw problemsResponse(source.lines);
      const { document } = source;
      if (document.organization !== principal.org.slug && document.organization !== principal.org.id) {
        throw new HttpError(errors.otherOrganization(document.organization, principal.org.slug));
      }
      try {
        // A part takes its turn with the organization's other registry writes (src/registry/write-queue.ts).
        const summary = await writeQueue.run(orgOf(principal), writerOf(principal, 'upload'), () =>
          storeUploadPart(access.prisma, orgOf(principal), uploadIdOf(request), partOf(request), document, bodyBytes),
        );
        return { data: summary };
      } catch (error) {
        throw await applyRefusal(uploadRefusal(error), (refused) => source.problemLines(refused));
      }
    },
  });

  app.route({
    method: 'POST',
    url: '/api/registry/uploads/:upload_id/apply',
    // A write's deadline (its turn in the write queue included), with an upload's longer apply on top.
    handlerTimeout: WRITE_DEADLINE_MS + UPLOAD_APPLY_TIMEOUT_MS,
    onRequest: admit(UPLOAD_APPLY_PARAMETERS),
    handler: async (request) => {
      const principal = writers.of(request);
      const id = uploadIdOf(request);
      const asked = applyQuery(request);
      const source = applySource(request);
      await access.usage?.flush();
      try {
        const apply = () =>
          applyUpload(access.prisma, orgOf(principal), id, {
            ...applyOptions(asked, { trust: config.trust, pruneMaxRemovals }),
            ...(source === undefined ? {} : { source }),
          });
        const outcome = asked.dryRun
          ? await apply()
          : await writeQueue.run(orgOf(principal), writerOf(principal, 'apply'), apply);
        if (!asked.dryRun) await noteOrganizationWrite(access, request, orgOf(principal));
        if (outcome.events) watcher.poke(orgOf(principal));
        return { data: { upload_id: id, ...applyResponse(principal.org.slug, outcome, asked) } };
      } catch (error) {
        throw await applyRefusal(uploadRefusal(error));
      }
    },
  });
}
