/**
 * GET /api/v1/openapi.json (no authentication) and the interactive reference
 * at /docs, rendered by Scalar from that document. Scalar's script comes from
 * its Fastify package and is served by the app itself, so the page needs no
 * CDN; its configuration turns off everything that would call Scalar's own
 * services (the AI agent, the developer toolbar with its SDK, MCP, share and
 * deploy panels, telemetry, web fonts). The page, its script and the document
 * are static assets (src/http/static-assets.ts), counted in the client's throttle.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { errors } from '../errors.js';
import { pageHeaders } from '../http/page-headers.js';
import { type AccessDeps, throttleClient } from '../http/request-auth.js';
import { IMMUTABLE, REVALIDATE, type StaticAsset, sendAsset, staticAsset } from '../http/static-assets.js';
import { openApiDocument } from './document.js';

export const OPENAPI_PATH = '/api/v1/openapi.json';
export const DOCS_PATH = '/docs';
/** The script's unversioned address (what Scalar's Fastify plugin serves); revalidated on every use. */
export const DOCS_SCRIPT_PATH = `${DOCS_PATH}/js/scalar.js`;

const PAGE_TITLE = 'Metric Governance API reference';

/** What the page hands Scalar: the document's URL, and nothing that reaches past this service. */
export const scalarConfiguration = {
  url: OPENAPI_PATH,
  // No web fonts from Scalar's CDN, no telemetry.
  withDefaultFonts: false,
  telemetry: false,
  // "Ask AI" uploads the document to Scalar's agent; on localhost it is on unless disabled.
  agent: { disabled: true },
  // The developer toolbar (share/upload, SDK and MCP generation, deploy and its waitlist).
  showDeveloperTools: 'never',
  mcp: { disabled: true },
  // "Open API Client" is a link to Scalar's hosted client (client.scalar.com) with this document's URL.
  hideClientButton: true,
  // Every other link to Scalar's sites ("Powered by Scalar"): the page stays inside the product.
  customCss: 'a[href*="scalar.com"] { display: none !important; }',
} as const;

interface DocsAssets {
  page: StaticAsset;
  script: StaticAsset;
  versionedScript: StaticAsset;
  versionedScriptPath: string;
}

/**
 * Scalar's standalone script, as its Fastify plugin serves it, taken once from a private instance.
 * The plugin is imported here, not with this module: it holds the script as text (about 20 MB of
 * heap), which a process that never serves the reference does not load.
 */
async function scalarScript(): Promise<string> {
  const { default: scalarApiReference } = await import('@scalar/fastify-api-reference');
  const source = Fastify({ logger: false });
  await source.register(scalarApiReference, { routePrefix: '/reference', configuration: { url: OPENAPI_PATH } });
  const response = await source.inject({ method: 'GET', url: '/reference/js/scalar.js' });
  await source.close();
  if (response.statusCode !== 200) throw new Error(`Scalar's script is missing (${response.statusCode})`);
  return response.body;
}

const escapeAttribute = (value: string) =>
  value.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

function docsPage(scriptPath: string): string {
  // The configuration travels in a data attribute of a non-executed element, which Scalar's script
  // reads: the page has no inline script, so its CSP needs no 'unsafe-inline' for scripts.
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${PAGE_TITLE}</title>
  </head>
  <body>
    <noscript>This page needs JavaScript. The API description itself is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</noscript>
    <script id="api-reference" type="application/json" data-configuration="${escapeAttribute(JSON.stringify(scalarConfiguration))}"></script>
    <script src="${scriptPath}"></script>
  </body>
</html>
`;
}

let assets: Promise<DocsAssets> | undefined;

/**
 * Rendered once per process, on the first request for /docs or its script
 * (the script is 5 MB): an instance that never serves the reference never
 * holds it. Every app of a test run shares it.
 */
function docsAssets(): Promise<DocsAssets> {
  assets ??= scalarScript().then((script) => {
    const versionedScript = staticAsset(script, 'application/javascript; charset=utf-8', IMMUTABLE);
    const versionedScriptPath = `${DOCS_PATH}/js/scalar.${versionedScript.version}.js`;
    return {
      page: staticAsset(docsPage(versionedScriptPath), 'text/html; charset=utf-8', REVALIDATE, pageHeaders()),
      // The same bytes and tag at the plugin's old address, for pages and bookmarks that name it.
      script: { ...versionedScript, cacheControl: REVALIDATE },
      versionedScript,
      versionedScriptPath,
    };
  });
  assets.catch(() => {
    assets = undefined;
  });
  return assets;
}

let documentAsset: StaticAsset | undefined;

export async function openApiRoutes(app: FastifyInstance, { access }: { access: AccessDeps }) {
  documentAsset ??= staticAsset(JSON.stringify(openApiDocument()), 'application/json; charset=utf-8', REVALIDATE);
  const document = documentAsset;

  app.addHook('onRequest', async (request, reply) => {
    await throttleClient(access, request, reply);
  });
  app.get(OPENAPI_PATH, (request, reply) => sendAsset(request, reply, document));
  app.get(DOCS_PATH, async (request, reply) => sendAsset(request, reply, (await docsAssets()).page));
  app.get(`${DOCS_PATH}/`, (_request, reply) => reply.redirect(DOCS_PATH, 301));
  app.get(DOCS_SCRIPT_PATH, async (request, reply) => sendAsset(request, reply, (await docsAssets()).script));
  // The versioned script's address carries its hash: any other name under /docs/js/ is not found.
  app.get(`${DOCS_PATH}/js/:file`, async (request, reply) => {
    const docs = await docsAssets();
    if (request.url.split('?')[0] !== docs.versionedScriptPath) return reply.status(404).send(errors.notFound.body);
    return sendAsset(request, reply, docs.versionedScript);
  });
}
