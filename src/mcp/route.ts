/**
 * POST /mcp: the Model Context Protocol server (Streamable HTTP transport of
 * the official SDK, stateless: a new server and transport per request, no
 * session; JSON responses when the client accepts them).
 *
 * Admission runs before any MCP processing, exactly as on the REST read
 * routes (src/http/request-auth.ts): throttle, bearer key and its 401s,
 * revoked, sandbox header, scope `metrics:read` (any key that can call one
 * of the tools; `get_metric_contract` checks `canonical-metric-api:read`
 * itself), and the key's per-minute budget, answered with the contract's
 * statuses and JSON bodies. A request costs 1 of the budget, like one REST
 * request. JSON-RPC batches are refused (MCP 2025-06-18 removed them) with
 * the error the SDK's transport answers for a batch it will not take, so a
 * request is one message and costs its admission unit, nothing more. A body
 * that is not JSON is the JSON-RPC parse error, as the SDK answers it.
 */
import type { FastifyInstance } from 'fastify';
import type { ServiceConfig } from '../context.js';
import { type AccessDeps, admitApiKey, readsOf } from '../http/request-auth.js';

/**
 * The SDK (about 20 MB of heap and code) and the tools load with the first
 * MCP request, so an instance that serves no agent never holds them.
 */
let mcpModules:
  | Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('./tools.js')]>
  | undefined;
const loadMcp = () =>
  (mcpModules ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('./tools.js')]));

export interface McpDeps {
  access: AccessDeps;
  config: ServiceConfig;
}

/** A JSON-RPC error response without an id, as the SDK's transport writes its own. */
const jsonRpcError = (code: number, message: string) =>
  JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });

/** The SDK's code for a batch it refuses (-32600 Invalid Request), with our reason. */
export const BATCH_REFUSED = jsonRpcError(
  -32600,
  'Invalid Request: JSON-RPC batches are not supported (removed in MCP 2025-06-18); send one message per request',
);
/** The SDK's answer to a body that does not parse as JSON. */
export const PARSE_ERROR = jsonRpcError(-32700, 'Parse error: Invalid JSON');
const UNSUPPORTED_MEDIA_TYPE = jsonRpcError(-32000, 'Unsupported Media Type: Content-Type must be application/json');

const methodNotAllowed = jsonRpcError(-32000, 'Method not allowed.');

export async function mcpRoutes(app: FastifyInstance, deps: McpDeps) {
  const { access, config } = deps;

  // Body parsing runs after admission (onRequest); what it refuses is answered in JSON-RPC, not
  // as the REST routes' { error }. Everything else goes on to the app's handler.
  app.setErrorHandler((error: Error & { code?: string }, _request, reply) => {
    if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
      return reply.status(400).header('content-type', 'application/json').send(PARSE_ERROR);
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return reply.status(415).header('content-type', 'application/json').send(UNSUPPORTED_MEDIA_TYPE);
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const tooLarge = jsonRpcError(
        -32000,
        `Payload Too Large: Request body must not exceed ${app.initialConfig.bodyLimit} bytes`,
      );
      return reply.status(413).header('content-type', 'application/json').send(tooLarge);
    }
    throw error;
  });

  app.post(
    '/mcp',
    {
      // Before the body is even parsed: nothing of MCP runs for a caller that is not admitted.
      onRequest: async (request, reply) => {
        await admitApiKey(access, request, reply, 'metrics:read');
      },
    },
    async (request, reply) => {
      const principal = request.principal;
      if (!principal) throw new Error('MCP request without an admitted principal');
      // Admission spent the request's one unit; a batch runs nothing and costs no more.
      if (Array.isArray(request.body)) {
        return reply.status(400).header('content-type', 'application/json').send(BATCH_REFUSED);
      }

      const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await loadMcp();
      const server = createMcpServer({ access: readsOf(access, request), config, principal, log: request.log });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      // From here the transport writes the response; the headers set so far go with it.
      reply.hijack();
      const raw = reply.raw;
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) raw.setHeader(name, value as string | number | string[]);
      }
      raw.setHeader('X-Request-Id', request.id);
      raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(request.raw, raw, request.body);
      } catch (error) {
        request.log.error({ err: error }, 'MCP request failed');
        if (!raw.headersSent) {
          raw
            .writeHead(500, { 'content-type': 'application/json' })
            .end(
              JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }),
            );
        }
      }
    },
  );

  // Stateless: no server-to-client stream (GET) and no session to end (DELETE).
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({
      method,
      url: '/mcp',
      handler: async (_request, reply) =>
        reply.status(405).header('content-type', 'application/json').header('allow', 'POST').send(methodNotAllowed),
    });
  }
}
