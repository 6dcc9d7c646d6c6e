/**
 * GET /api/v1/openapi.json (no authentication) and the interactive reference
 * at /docs, rendered by Scalar from that document. Scalar's JavaScript is
 * served by the plugin itself (/docs/js/scalar.js), so the page needs no CDN.
 */
import scalarApiReference from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import { openApiDocument } from './document.js';

export const OPENAPI_PATH = '/api/v1/openapi.json';
export const DOCS_PATH = '/docs';

export async function openApiRoutes(app: FastifyInstance) {
  app.get(OPENAPI_PATH, async () => openApiDocument());

  await app.register(scalarApiReference, {
    routePrefix: DOCS_PATH,
    configuration: {
      url: OPENAPI_PATH,
      pageTitle: 'Metric Governance API reference',
      // Offline: no web fonts from Scalar's CDN, no telemetry.
      withDefaultFonts: false,
      telemetry: false,
    },
  });
}
