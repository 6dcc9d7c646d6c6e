/**
 * GET /api/registry: the caller's organization's registry as a registry
 * document (`format=registry`, the default) or an OSI document
 * (`format=osi`), JSON; `source=S` keeps the metrics that source created,
 * `part=N` the N-th MAX_DOCUMENT_METRICS of them by key, a document of an
 * upload in parts (docs/registry.md#exporting-the-registry). Callers are those of
 * PUT /api/registry: a service token with `registry:write` or a signed-in
 * admin or owner. A registry document is streamed a page of metrics at a
 * time; an OSI document, grouped by project, is built whole. Either holds
 * at most MAX_DOCUMENT_METRICS metrics (what one document may list).
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest, errors, HttpError } from '../errors.js';
import {
  EXPORT_FORMATS,
  type ExportFormat,
  type ExportOptions,
  ExportTooLarge,
  exportedMetrics,
  exportHead,
  exportRegistry,
  MAX_EXPORT_SOURCE_LENGTH,
  NoSuchExportPart,
} from '../registry/export.js';
import { osiDocument } from '../registry/export-osi.js';
import { type Query, rejectUnknownParameters } from '../rest/query.js';
import { clientErrorHandler } from './error-reply.js';
import type { AccessDeps } from './request-auth.js';
import { admittedWriters, admitWriter } from './write-requests.js';

export interface ExportRoutesDeps {
  access: AccessDeps;
}

export const EXPORT_PARAMETERS = ['format', 'source', 'part'] as const;

/** The header of a registry document's export naming the parts it is in (docs/registry.md). */
export const PARTS_HEADER = 'x-registry-parts';

function exportOptions(request: FastifyRequest): { format: ExportFormat; options: ExportOptions } {
  const query = request.query as Record<string, unknown>;
  const format = query.format ?? 'registry';
  if (!EXPORT_FORMATS.includes(format as never))
    throw new HttpError(badRequest(`format must be one of ${EXPORT_FORMATS.join(', ')}`));
  const source = query.source;
  if (
    source !== undefined &&
    (typeof source !== 'string' || source === '' || source.length > MAX_EXPORT_SOURCE_LENGTH)
  ) {
    throw new HttpError(badRequest(`source must be 1 to ${MAX_EXPORT_SOURCE_LENGTH} characters`));
  }
  const part = query.part;
  if (part !== undefined && (typeof part !== 'string' || !/^\d{1,5}$/.test(part) || Number(part) < 1)) {
    throw new HttpError(errors.invalidParameter('part', 'a whole number from 1'));
  }
  if (part !== undefined && format !== 'registry') throw new HttpError(badRequest('part goes with format=registry'));
  return {
    format: format as ExportFormat,
    options: { ...(source === undefined ? {} : { source }), ...(part === undefined ? {} : { part: Number(part) }) },
  };
}

/** The registry document as JSON text, its metrics a page at a time. */
async function* documentText(
  access: AccessDeps,
  orgId: string,
  head: { organization: string; trust_policy?: unknown },
  options: ExportOptions,
): AsyncGenerator<string> {
  const top = JSON.stringify(head);
  yield `${top.slice(0, -1)},"metrics":[`;
  let separator = '';
  for await (const page of exportedMetrics(access.prisma, orgId, options)) {
    yield separator + page.map((metric) => JSON.stringify(metric)).join(',');
    separator = ',';
  }
  yield ']}';
}

export async function exportRoutes(app: FastifyInstance, deps: ExportRoutesDeps) {
  const { access } = deps;
  const writers = admittedWriters();
  app.setErrorHandler(clientErrorHandler);

  app.get('/api/registry', {
    onRequest: async (request, reply) => {
      writers.admit(request, await admitWriter(access, request, reply, 'registry:write'));
      rejectUnknownParameters(request.query as Query, EXPORT_PARAMETERS);
    },
    handler: async (request, reply) => {
      const principal = writers.of(request);
      const { format, options } = exportOptions(request);
      const orgId = principal.org.id;
      try {
        reply.header('cache-control', 'no-store').type('application/json');
        if (format === 'osi') return osiDocument((await exportRegistry(access.prisma, orgId, options)).metrics);
        const { count: _count, parts, ...head } = await exportHead(access.prisma, orgId, options);
        reply.header(PARTS_HEADER, String(parts));
        return reply.send(Readable.from(documentText(access, orgId, head, options)));
      } catch (error) {
        if (error instanceof ExportTooLarge) throw new HttpError(errors.exportTooLarge(error.count, error.parts));
        if (error instanceof NoSuchExportPart) {
          throw new HttpError(errors.invalidParameter('part', `a whole number from 1 to ${error.parts}`));
        }
        throw error;
      }
    },
  });
}
