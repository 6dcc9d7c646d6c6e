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
 * request; a JSON-RPC batch with several `tools/call` costs one per call,
 * all spent before any is run.
 */
import type { FastifyInstance } from 'fastify';
import type { ServiceConfig } from '../context.js';
import { errors, HttpError } from '../errors.js';
import { type AccessDeps, admitApiKey, spendOperationCost } from '../http/request-auth.js';

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

/** The `tools/call` requests in a JSON-RPC message or batch. */
function toolCalls(body: unknown): number {
  const messages = Array.isArray(body) ? body : [body];
  return messages.filter(
    (message) =>
      typeof message === 'object' && message !== null && (message as { method?: unknown }).method === 'tools/call',
  ).length;
}

const methodNotAllowed = JSON.stringify({
  jsonrpc: '2.0',
  error: { code: -32000, message: 'Method not allowed.' },
  id: null,
});

export async function mcpRoutes(app: FastifyInstance, deps: McpDeps) {
  const { access, config } = deps;

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
      const calls = toolCalls(request.body);
      // Admission spent one unit; a batch that cannot pay for the rest is refused whole and keeps only that one.
      if (!(await spendOperationCost(access, reply, principal, calls))) throw new HttpError(errors.rateLimited);

      const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await loadMcp();
      const server = createMcpServer({ access, config, principal, log: request.log });
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
