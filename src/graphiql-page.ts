/**
 * The GraphiQL page a browser gets at /graphql (GET, Accept: text/html):
 * yoga's bundled GraphiQL, split into a small HTML page and versioned files
 * (script, stylesheet, editor workers, icon) that a browser keeps, each a
 * static asset (src/http/static-assets.ts). The page opens on a working
 * example query, with the headers editor holding the Authorization header to
 * fill in; a 401 from /graphql becomes one line saying how to send a key.
 */
import type { FastifyInstance } from 'fastify';
import type { GraphiQLOptions } from 'graphql-yoga';
import { errors } from './errors.js';
import { pageHeaders } from './http/page-headers.js';
import { type AccessDeps, throttleClient } from './http/request-auth.js';
import { IMMUTABLE, REVALIDATE, type StaticAsset, sendAsset, staticAsset } from './http/static-assets.js';

export const GRAPHIQL_TITLE = 'Metric Governance GraphQL';
/** Where the page's files live; their names carry their content's hash. */
export const GRAPHIQL_ASSETS_PATH = '/graphiql';

/** The headers editor's first content: the one header a request needs. */
export const GRAPHIQL_HEADERS = '{"Authorization": "Bearer <your API key>"}';

/** What a 401 from /graphql shows instead of the error body (the schema fetch included). */
export const GRAPHIQL_KEY_HINT =
  'No valid API key: in Headers below, replace <your API key> in {"Authorization": "Bearer <your API key>"} with your key, then run the query.';

/** The first tab's query: one dashboard page, with the counts and the trust verdict of each metric. */
export const GRAPHIQL_EXAMPLE_QUERY = `# A dashboard page: the organization's metrics with their counts and trust verdicts.
# Put your API key in the Headers tab below, then press Run (Ctrl/Cmd + Enter).
query Dashboard {
  metrics(page: 1, pageSize: 10) {
    pagination {
      total
      totalPages
    }
    items {
      key
      name
      lifecycleStatus
      policyTier
      openChallengesCount
      discussionThreadCount
      trust {
        verdict
        reasons
      }
    }
  }
}
`;

const JS = 'application/javascript; charset=utf-8';

interface GraphiqlAssets {
  page: StaticAsset;
  /** versioned files by path */
  files: Map<string, StaticAsset>;
}

const json = (value: unknown) => JSON.stringify(value).replaceAll('<', '\\u003c');

/**
 * Runs before GraphiQL's bundle: Monaco's workers from their files, and a
 * fetch that turns a 401 of the GraphQL endpoint into one line on the page
 * and one error in the result pane.
 */
function prelude(workers: Record<string, string>, endpoint: string): string {
  return `(function () {
  var workers = ${json(workers)};
  self.MonacoEnvironment = {
    globalAPI: false,
    getWorkerUrl: function (_moduleId, label) { return workers[label] || workers.editorWorkerService; },
  };
  var hint = ${json(GRAPHIQL_KEY_HINT)};
  var nativeFetch = window.fetch.bind(window);
  window.fetch = function (input, init) {
    var url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url, location.href);
    var ours = url.origin === location.origin && url.pathname === ${json(endpoint)};
    return nativeFetch(input, init).then(function (response) {
      if (!ours) return response;
      var line = document.getElementById('key-hint');
      if (line) line.hidden = response.status !== 401;
      if (response.status !== 401) return response;
      return new Response(JSON.stringify({ errors: [{ message: hint }] }), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    });
  };
})();
`;
}

function start(options: GraphiQLOptions): string {
  return `
YogaGraphiQL.renderYogaGraphiQL(document.getElementById('root'), ${json(options)});
`;
}

const PAGE_CSS = `
#key-hint { margin: 0; padding: 6px 12px; font: 14px/1.4 system-ui, sans-serif; background: #fff4d6; color: #4a3800; }
#key-hint[hidden] { display: none; }
body { display: flex; flex-direction: column; height: 100vh; margin: 0; }
#root { flex: 1; min-height: 0; }
`;

async function buildAssets(endpoint: string): Promise<GraphiqlAssets> {
  const bundle = await import('@graphql-yoga/render-graphiql/graphiql');
  const files = new Map<string, StaticAsset>();
  const file = (name: string, extension: string, content: string | Buffer, type: string) => {
    const asset = staticAsset(content, type, IMMUTABLE);
    const path = `${GRAPHIQL_ASSETS_PATH}/${name}.${asset.version}.${extension}`;
    files.set(path, asset);
    return path;
  };
  const workers = {
    editorWorkerService: file('editor.worker', 'js', bundle.editorWorkerService, JS),
    json: file('json.worker', 'js', bundle.jsonWorker, JS),
    graphql: file('graphql.worker', 'js', bundle.graphqlWorker, JS),
  };
  const icon = bundle.favicon.startsWith('data:image/x-icon;base64,')
    ? file(
        'favicon',
        'ico',
        Buffer.from(bundle.favicon.slice('data:image/x-icon;base64,'.length), 'base64'),
        'image/x-icon',
      )
    : null;
  const options: GraphiQLOptions = {
    title: GRAPHIQL_TITLE,
    endpoint,
    defaultQuery: GRAPHIQL_EXAMPLE_QUERY,
    headers: GRAPHIQL_HEADERS,
    defaultEditorToolsVisibility: 'headers',
    // A key typed into the editor is not kept in the browser's storage.
    shouldPersistHeaders: false,
  };
  const script = file('graphiql', 'js', prelude(workers, endpoint) + bundle.js + start(options), JS);
  const styles = file('graphiql', 'css', bundle.css + PAGE_CSS, 'text/css; charset=utf-8');
  const html = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${GRAPHIQL_TITLE}</title>
    ${icon ? `<link rel="icon" href="${icon}" />` : ''}
    <link rel="stylesheet" href="${styles}" />
  </head>
  <body id="body" class="no-focus-outline">
    <noscript>GraphiQL needs JavaScript. POST queries to ${endpoint} with an Authorization: Bearer header.</noscript>
    <p id="key-hint" hidden>${GRAPHIQL_KEY_HINT.replaceAll('<', '&lt;').replaceAll('>', '&gt;')}</p>
    <div id="root"></div>
    <script src="${script}"></script>
  </body>
</html>
`;
  return { page: staticAsset(html, 'text/html; charset=utf-8', REVALIDATE, pageHeaders()), files };
}

let assets: Promise<GraphiqlAssets> | undefined;

/**
 * Built once per process, on the first request for the page or a file of it
 * (about 9 MB of bundle, and its compressed forms once asked for): an
 * instance that never serves GraphiQL never holds it. Every app of a test run
 * shares it.
 */
export function graphiqlAssets(endpoint = '/graphql'): Promise<GraphiqlAssets> {
  assets ??= buildAssets(endpoint);
  assets.catch(() => {
    assets = undefined;
  });
  return assets;
}

/** The page's versioned files, each counted in the client's throttle. */
export async function graphiqlRoutes(app: FastifyInstance, { access }: { access: AccessDeps }) {
  app.addHook('onRequest', async (request, reply) => {
    await throttleClient(access, request, reply);
  });
  app.get(`${GRAPHIQL_ASSETS_PATH}/*`, async (request, reply) => {
    const asset = (await graphiqlAssets()).files.get(request.url.split('?')[0] ?? '');
    if (!asset) return reply.status(404).send(errors.notFound.body);
    return sendAsset(request, reply, asset);
  });
}
