/**
 * The MCP tools: read-only, each answering `structuredContent` (checked
 * against its `outputSchema`) and a short text rendering of it. They run the
 * same named GraphQL operations as the REST routes (src/rest/operations),
 * in process, and the contract tool the contract route's own operation and
 * envelope, so what a tool says equals what the REST routes say. A failure
 * for the caller's input is a tool result with `isError: true` and the
 * contract's message.
 */
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { type CallToolResult, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { scopeSatisfied } from '../auth/scopes.js';
import { type Context, createContext, type Principal, type ServiceConfig } from '../context.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { type ErrorResponse, errors, HttpError } from '../errors.js';
import { LifecycleStatus, MetricScope } from '../generated/prisma/enums.js';
import type { AccessDeps } from '../http/request-auth.js';
import { checkCharactersDeep } from '../metric/input.js';
import { type TrustFacts, trustReasonSentences } from '../metric/trust.js';
import { countRead } from '../metric/usage.js';
import type { MetricContract, Trust } from '../openapi/schemas.js';
import { contractEnvelope } from '../rest/envelopes.js';
import { ChangesDocument, MetricContractDocument, runOperation } from '../rest/execute.js';
import {
  AgentMetricByIdDocument,
  AgentMetricByKeyDocument,
  AgentMetricIdByKeyDocument,
  AgentMetricsByIdsDocument,
  AgentResolveExactDocument,
  AgentResolveSearchDocument,
  AgentSearchMetricsDocument,
  type ResolvedMetricFragment,
} from '../rest/operations.generated.js';
import { CURSOR_EXPIRED, INVALID_CURSOR } from '../schema/change-event.js';
import { isUuid } from '../uuid.js';
import { fitContract, fitInputs, fitToBytes, shorten } from './fit.js';
import {
  type ChangeItem,
  ChangesOutput,
  ContractOutput,
  MetricOutput,
  type ResolvedValue,
  ResolveOutput,
  type SearchItem,
  SearchOutput,
  type TrustOutputValue,
} from './output-schemas.js';

export const SEARCH_MAX_PAGE_SIZE = 25;
export const SEARCH_DEFAULT_PAGE_SIZE = 10;
/**
 * Bytes of serialized structuredContent a contract answers (commentary is left out or cut to fit; the
 * facts never are, and a contract whose facts alone pass it is answered larger) and a search page
 * answers at most (descriptions are cut to fit).
 */
export const CONTRACT_MAX_BYTES = 4096;
/** Bytes of serialized structuredContent get_metric answers at most, as far as leaving out inputs makes it. */
export const METRIC_MAX_BYTES = 4096;
export const SEARCH_PAGE_MAX_BYTES = 8192;
/** list_changes: events a call answers by default and at most, and the bytes a page answers at most. */
export const CHANGES_DEFAULT_LIMIT = 20;
export const CHANGES_MAX_LIMIT = 50;
export const CHANGES_PAGE_MAX_BYTES = 8192;
/** resolve_metric lists at most this many candidates. */
export const MAX_CANDIDATES = 5;
const MAX_PAGE = 2 ** 31 - 1;

/** A failure the caller can act on: its message is the tool result's text. */
class ToolFailure extends Error {}

/** The contract's message of an error response (src/errors.ts spells them). */
const messageOf = (response: ErrorResponse): string => new HttpError(response).message;

const messages = {
  notFound: messageOf(errors.metricNotFound),
  invalidId: messageOf(errors.invalidMetricId),
  insufficientScope: messageOf(errors.insufficientScope),
  fetchFailed: messageOf(errors.fetchFailed),
  unavailable: `${messageOf(errors.serviceUnavailable)}: the database does not answer; retry in ${errors.serviceUnavailable.retryAfter} seconds`,
  exactlyOne: 'Invalid arguments: give exactly one of id or key',
};

/** What a tool says of a read that failed with `causes`: the database not answering is said as such. */
const failureMessage = (causes: readonly unknown[]): string =>
  causes.some(isDatabaseUnavailable) ? messages.unavailable : messages.fetchFailed;

export interface ToolDeps {
  access: AccessDeps;
  config: ServiceConfig;
  principal: Principal;
  log: FastifyBaseLogger;
}

const lifecycleStatus = z.enum(LifecycleStatus);

const metricRef = {
  id: z.string().max(1000).optional().describe('UUID'),
  key: z.string().max(1000).optional().describe('for example net_revenue'),
};

// destructiveHint and idempotentHint mean something only when readOnlyHint is false (MCP tool annotations).
const readOnly = { readOnlyHint: true, openWorldHint: false } as const;

type Structured = Record<string, unknown>;

/** A tool's schema as JSON Schema (draft 7), without `$schema`: every agent reads tools/list on every connection. */
function jsonSchema(schema: unknown, io: 'input' | 'output'): Tool['inputSchema'] {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema as z.ZodType, { target: 'draft-7', io });
  return rest as Tool['inputSchema'];
}

/**
 * tools/list as the SDK answers it, less what costs every agent bytes and says nothing: each
 * schema's `$schema` (draft 7, as the protocol assumes) and `execution` (tasks are forbidden,
 * the default). It stays within 8 KB with five tools.
 */
function answerToolsList(server: McpServer, tools: Record<string, RegisteredTool>): void {
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: Object.entries(tools).map(([name, tool]) => ({
      name,
      title: tool.title,
      description: tool.description,
      inputSchema: jsonSchema(tool.inputSchema, 'input'),
      ...(tool.outputSchema ? { outputSchema: jsonSchema(tool.outputSchema, 'output') } : {}),
      annotations: tool.annotations,
    })),
  }));
}

export function createMcpServer(deps: ToolDeps): McpServer {
  const server = new McpServer(
    { name: 'metric-governance', version: '1.0.0' },
    {
      instructions:
        'Governed metric definitions of one organization. resolve_metric finds the canonical metric for a name; ' +
        'get_metric_contract gives its contract and a trust verdict (use, use_with_caution, do_not_use) with reasons.',
    },
  );

  const tools: Record<string, RegisteredTool> = {};

  /** A GraphQL context per tool call, as the REST routes make one per request. */
  // Each tool decides its scope (get_metric_contract asks for the contract's); the others carry the
  // trust verdict under metrics:read, as their descriptions say.
  const context = (countReads = true): Context =>
    createContext(deps.access, deps.principal, deps.config, deps.access.metrics, { contractFields: true, countReads });

  function handler<A>(work: (args: A) => Promise<Structured>, render: (result: Structured) => string) {
    return async (args: A): Promise<CallToolResult> => {
      try {
        // Control characters and unpaired surrogates in any text argument: a tool error naming it, nothing read.
        const invalid = checkCharactersDeep('', args);
        if (invalid) throw new ToolFailure(messageOf(invalid));
        const structuredContent = await work(args);
        return { content: [{ type: 'text', text: render(structuredContent) }], structuredContent };
      } catch (error) {
        if (!(error instanceof ToolFailure)) deps.log.error({ err: error }, 'MCP tool failed');
        const text = error instanceof ToolFailure ? error.message : failureMessage([error]);
        return { content: [{ type: 'text', text }], isError: true };
      }
    };
  }

  /** A failed operation is logged and answered as the REST routes' 500 message. */
  function dataOf<T>(result: { data: T | null; errors: readonly Error[] }): T {
    if (result.errors.length || !result.data) {
      deps.log.error({ errors: result.errors.map((e) => e.message) }, 'MCP tool operation failed');
      throw new ToolFailure(failureMessage(result.errors));
    }
    return result.data;
  }

  /**
   * Each metric's trust with one sentence per reason. The facts come from the
   * context's trust loader, which the operation that computed the verdict
   * has already filled (no further statement in the usual case).
   */
  async function explained(ctx: Context, ids: string[], trusts: TrustOut[]): Promise<TrustOutputValue[]> {
    const needed = [...new Set(ids.filter((_, i) => trusts[i]?.reasons.length))];
    const loaded = needed.length ? await ctx.loaders.trust.loadMany(needed) : [];
    const facts = new Map<string, TrustFacts>();
    for (const [i, value] of loaded.entries()) {
      if (value instanceof Error) throw value;
      facts.set(needed[i] as string, value);
    }
    const now = new Date();
    return trusts.map((trust, i) => {
      const known = facts.get(ids[i] as string);
      const verdict = {
        verdict: trust.verdict,
        reasons: trust.reasons,
        preferredMetricId: trust.preferred_metric_id,
        untrustedInputs: trust.untrusted_inputs,
      };
      return {
        verdict: trust.verdict,
        reasons: trust.reasons,
        explanations: known ? trustReasonSentences(verdict, known, deps.config.trust, now) : [],
        preferred_metric_id: trust.preferred_metric_id,
        untrusted_inputs: trust.untrusted_inputs,
      };
    });
  }

  function exactlyOne(args: { id?: string; key?: string }): { id: string } | { key: string } {
    if ((args.id === undefined) === (args.key === undefined)) throw new ToolFailure(messages.exactlyOne);
    if (args.id !== undefined) {
      if (!isUuid(args.id)) throw new ToolFailure(messages.invalidId);
      return { id: args.id };
    }
    return { key: args.key as string };
  }

  tools.search_metrics = server.registerTool(
    'search_metrics',
    {
      title: 'Search metrics',
      description: 'Find metrics by words (typos corrected) and filters, best first; without query, by name.',
      inputSchema: {
        query: z.string().max(1000).optional().describe('words, "quoted phrases", or, -excluded'),
        lifecycle_status: lifecycleStatus.optional(),
        scope: z.enum(MetricScope).optional(),
        policy_tier: z.string().max(200).optional().describe('for example tier_1'),
        page: z.int().min(1).max(MAX_PAGE).optional().describe('default 1'),
        page_size: z
          .int()
          .min(1)
          .max(SEARCH_MAX_PAGE_SIZE)
          .optional()
          .describe(`1 to ${SEARCH_MAX_PAGE_SIZE}, default ${SEARCH_DEFAULT_PAGE_SIZE}`),
      },
      outputSchema: SearchOutput,
      annotations: readOnly,
    },
    handler(
      async (args: {
        query?: string;
        lifecycle_status?: string;
        scope?: string;
        policy_tier?: string;
        page?: number;
        page_size?: number;
      }) => {
        const data = dataOf(
          await runOperation(
            AgentSearchMetricsDocument,
            {
              page: args.page ?? 1,
              pageSize: args.page_size ?? SEARCH_DEFAULT_PAGE_SIZE,
              filter: {
                lifecycleStatus: args.lifecycle_status ?? null,
                status: null,
                policyTier: args.policy_tier ?? null,
                scope: args.scope ?? null,
                type: null,
                trust: null,
              },
              search: args.query?.trim() ? args.query : null,
            },
            context(),
          ),
        );
        const { items, pagination, search_hints: hints } = data.metrics;
        return fitToBytes(SEARCH_PAGE_MAX_BYTES, (max) => ({
          items: items.map((item) => ({ ...item, description: shorten(item.description, max) })),
          total: pagination.total,
          page: pagination.page,
          page_size: pagination.pageSize,
          // As the list route's meta says them: which words were corrected, and suggestions when nothing matched.
          ...(hints?.corrected.length ? { corrected: hints.corrected } : {}),
          ...(hints && pagination.total === 0 ? { did_you_mean: hints.did_you_mean } : {}),
        }));
      },
      (result) => {
        const items = result.items as (z.infer<typeof SearchItem> & { trust: { verdict: string } })[];
        const lines = items.map((m) => `- ${m.name} (${m.key}, ${m.lifecycle_status}): ${m.trust.verdict} [${m.id}]`);
        const corrected = result.corrected as { from: string; to: string }[] | undefined;
        const suggestions = result.did_you_mean as string[] | undefined;
        return [
          `${result.total} metrics; page ${result.page} (${items.length} shown)`,
          ...(corrected ? [`Corrected: ${corrected.map((c) => `${c.from} → ${c.to}`).join(', ')}`] : []),
          ...(suggestions?.length ? [`Did you mean: ${suggestions.join(', ')}`] : []),
          ...lines,
        ].join('\n');
      },
    ),
  );

  tools.get_metric = server.registerTool(
    'get_metric',
    {
      title: 'Get a metric',
      description: 'One metric (by id or key): SQL, grains, dimensions, filters, sources, owner, trust.',
      inputSchema: metricRef,
      outputSchema: MetricOutput,
      annotations: readOnly,
    },
    handler(
      async (args: { id?: string; key?: string }) => {
        const ref = exactlyOne(args);
        const ctx = context();
        const metric =
          'id' in ref
            ? dataOf(await runOperation(AgentMetricByIdDocument, ref, ctx)).metric
            : dataOf(await runOperation(AgentMetricByKeyDocument, ref, ctx)).metricByKey;
        if (!metric) throw new ToolFailure(messages.notFound);
        const [trust] = await explained(ctx, [metric.id], [metric.trust]);
        return fitInputs(METRIC_MAX_BYTES, { ...metric, trust, inputs: metric.inputs ?? [] });
      },
      (m) =>
        `${m.name} (${m.key}, ${m.lifecycle_status}, v${m.definition_version}): ${trustLine(m.trust as TrustOut)}` +
        inputsLine(m),
    ),
  );

  tools.get_metric_contract = server.registerTool(
    'get_metric_contract',
    {
      title: 'Get a metric contract',
      description:
        "A metric's contract: trust verdict, inputs. Within 4 KB: older notes left out, then the last note and " +
        'summary cut, then inputs; never the definition.',
      inputSchema: {
        ...metricRef,
        summary: z.boolean().optional().describe('adds discussion_summary (billed)'),
      },
      outputSchema: ContractOutput,
      annotations: readOnly,
    },
    handler(
      async (args: { id?: string; key?: string; summary?: boolean }) => {
        if (deps.principal.kind === 'api_key' && !scopeSatisfied(deps.principal.scopes, 'canonical-metric-api:read')) {
          throw new ToolFailure(messages.insufficientScope);
        }
        const ref = exactlyOne(args);
        const ctx = context();
        let id: string;
        if ('id' in ref) id = ref.id;
        else {
          const found = dataOf(await runOperation(AgentMetricIdByKeyDocument, ref, ctx)).metricByKey;
          if (!found) throw new ToolFailure(messages.notFound);
          id = found.id;
        }
        const result = await runOperation(MetricContractDocument, { id, summary: args.summary === true }, ctx);
        // As the contract route: supporting reads degrade in the envelope; only a failed metric read fails.
        // A non-null field that failed (the trust verdict) nulls the metric: a failed read, not a missing metric.
        if (result.errors.some((error) => error.path?.length === 1) || (result.errors.length && !result.data?.metric)) {
          dataOf({ data: null, errors: result.errors });
        }
        if (result.errors.length) {
          deps.log.error({ errors: result.errors.map((e) => e.message) }, 'MCP contract: supporting read failed');
        }
        if (!result.data?.metric) throw new ToolFailure(messages.notFound);
        const { data: contract } = contractEnvelope(result.data.metric).body as {
          data: z.infer<typeof MetricContract>;
        };
        // The dependents count is the REST contract's: tools/list has no byte left to spell it for agents.
        const { dependents_count: _dependents, ...data } = contract;
        const [trust] = await explained(ctx, [data.metric_id], [data.trust]);
        // Commentary first (notes, the summary), then inputs: the facts an agent decides by go last.
        return fitInputs(
          CONTRACT_MAX_BYTES,
          fitContract(CONTRACT_MAX_BYTES, { ...data, trust: trust as TrustOutputValue }),
        );
      },
      (c) => {
        const notes = (c.agent_context_notes as unknown[]).length;
        const validated = c.last_validated_at ? `last validated ${c.last_validated_at}` : 'never validated';
        const charged = c.discussion_summary_meta
          ? `; summary ${(c.discussion_summary_meta as { charged: boolean }).charged ? 'billed' : 'not billed'}`
          : '';
        return `${c.name} (${c.lifecycle_status}): ${trustLine(c.trust as TrustOut)}; ${validated}; ${notes} pinned notes${charged}${inputsLine(c)}`;
      },
    ),
  );

  tools.resolve_metric = server.registerTool(
    'resolve_metric',
    {
      title: 'Resolve a metric name',
      description:
        'The metric a name means: match (by key, name, then best hit), canonical (what to use) and candidates.',
      inputSchema: { name: z.string().min(1).max(1000).describe('a key or a name, for example "net revenue"') },
      outputSchema: ResolveOutput,
      annotations: readOnly,
    },
    handler(
      async ({ name }: { name: string }) => {
        // Its look-ups read several metrics by key and name; what it names (the match) is the read that counts.
        const ctx = context(false);
        const exact = dataOf(await runOperation(AgentResolveExactDocument, { name }, ctx));
        const found = exact.byKey ?? exact.byName;
        let match: ResolvedMetricFragment | null = found;
        let candidateIds: string[];
        const known = new Map<string, ResolvedMetricFragment>();
        if (found) {
          candidateIds = (found.requires_disambiguation?.candidates ?? []).map((c) => c.metric_id);
        } else if (name.trim()) {
          const hits = dataOf(
            await runOperation(AgentResolveSearchDocument, { search: name, pageSize: MAX_CANDIDATES + 2 }, ctx),
          ).metrics.items;
          for (const hit of hits) known.set(hit.id, hit);
          match = hits[0] ?? null;
          candidateIds = hits.slice(1).map((hit) => hit.id);
        } else candidateIds = [];
        if (!match) return { match: null, canonical: null, candidates: [] };
        countRead(deps.access.usage, deps.principal, match.id);
        const canonicalId = match.trust.preferred_metric_id ?? match.id;
        const ids = [...new Set(candidateIds.filter((id) => id !== match.id && id !== canonicalId))].slice(
          0,
          MAX_CANDIDATES,
        );
        const missing = [canonicalId, ...ids].filter((id) => id !== match.id && !known.has(id));
        if (missing.length) {
          const read = dataOf(await runOperation(AgentMetricsByIdsDocument, { ids: missing }, ctx)).metricsByIds;
          for (const metric of read) if (metric) known.set(metric.id, metric);
        }
        const canonical = canonicalId === match.id ? match : (known.get(canonicalId) ?? match);
        const listed = [match, canonical, ...ids.flatMap((id) => known.get(id) ?? [])];
        const trusts = await explained(
          ctx,
          listed.map((metric) => metric.id),
          listed.map((metric) => metric.trust),
        );
        const [matched, canonicalOut, ...candidates] = listed.map(
          ({ id, key, name, lifecycle_status }, i): ResolvedValue => ({
            id,
            key,
            name,
            lifecycle_status,
            trust: trusts[i] as TrustOutputValue,
          }),
        );
        return { match: matched, canonical: canonicalOut, candidates };
      },
      (r) => {
        const match = r.match as ResolvedValue | null;
        if (!match) return 'No metric matches.';
        const canonical = r.canonical as ResolvedValue;
        const candidates = (r.candidates as unknown[]).length;
        const use =
          canonical.id === match.id
            ? 'it is canonical'
            : `use ${canonical.name} (${canonical.key}) [${canonical.id}] instead`;
        return `Match: ${match.name} (${match.key}) [${match.id}]: ${trustLine(match.trust)}; ${use}; ${candidates} other candidates`;
      },
    ),
  );

  tools.list_changes = server.registerTool(
    'list_changes',
    {
      description: 'Metric changes, oldest first, after a next_cursor (trust_changed: from, to, preferred_metric_id).',
      inputSchema: {
        after: z.string().max(100).optional(),
        limit: z.number().int().min(1).max(CHANGES_MAX_LIMIT).optional(),
      },
      outputSchema: ChangesOutput,
      annotations: readOnly,
    },
    handler(
      async (args: { after?: string; limit?: number }) => {
        // The feed's trust and evidence events need the contract's scope, as on REST and /graphql.
        const ctx = createContext(deps.access, deps.principal, deps.config, deps.access.metrics);
        // Fewer events when a page of long names and reasons would pass the budget: the cursor stays exact.
        for (let first = args.limit ?? CHANGES_DEFAULT_LIMIT; ; first = Math.ceil(first / 2)) {
          const result = await runOperation(ChangesDocument, { after: args.after ?? null, first }, ctx);
          const [error] = result.errors;
          if (error?.extensions.code === INVALID_CURSOR || error?.extensions.code === CURSOR_EXPIRED) {
            throw new ToolFailure(error.message);
          }
          const page = dataOf(result).changes;
          const events = page.events.map(({ id, type, time, subject, data }): ChangeItem => {
            const { id: _id, key, name, lifecycle_status, ...change } = data as Record<string, unknown>;
            return {
              id,
              type: type.replace(/^metric\./, ''),
              time,
              metric_id: subject,
              key: String(key),
              name: String(name),
              lifecycle_status: String(lifecycle_status),
              change,
            };
          });
          const out = { events, next_cursor: page.next_cursor };
          if (first === 1 || Buffer.byteLength(JSON.stringify(out)) <= CHANGES_PAGE_MAX_BYTES) return out;
        }
      },
      (r) => {
        const events = r.events as ChangeItem[];
        const lines = events.map((e) => `- ${e.time} ${e.type} ${e.name} (${e.key}) ${JSON.stringify(e.change)}`);
        return [`${events.length} changes; next_cursor ${r.next_cursor}`, ...lines].join('\n');
      },
    ),
  );

  answerToolsList(server, tools);
  // A stateless server never sends notifications/tools/list_changed (the SDK advertises it once a tool is registered).
  server.server.registerCapabilities({ tools: { listChanged: undefined } });
  return server;
}

type TrustOut = z.infer<typeof Trust>;

/** The inputs of a tool's answer in a few words: `; built from a (use), b (do_not_use)`, or nothing. */
function inputsLine(result: Structured): string {
  const inputs = (result.inputs ?? []) as { key: string; verdict: string | null }[];
  const omitted = (result.inputs_omitted as number | undefined) ?? 0;
  if (!inputs.length && !omitted) return '';
  const named = inputs.map((input) => `${input.key} (${input.verdict ?? 'not evaluated'})`).join(', ');
  return `; built from ${named}${omitted ? `${named ? ' and ' : ''}${omitted} more` : ''}`;
}

function trustLine(trust: Pick<TrustOut, 'verdict' | 'reasons'>): string {
  return trust.reasons.length ? `${trust.verdict} (${trust.reasons.join(', ')})` : trust.verdict;
}
