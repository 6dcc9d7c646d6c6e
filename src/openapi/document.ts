/**
 * The OpenAPI 3.1 document of the REST routes, built from the zod schemas of
 * src/openapi/schemas.ts (response shapes) and of src/http/admin-routes.ts
 * (the key creation body), the error catalogue (src/errors.ts) and the
 * headers the routes send. Served at GET /api/v1/openapi.json and rendered
 * at /docs.
 */
import { z } from 'zod';
import { AGENT_CONTRACT_SCOPES } from '../auth/scopes.js';
import { badRequest, type ErrorResponse, errors } from '../errors.js';
import { createKeyBody } from '../http/admin-routes.js';
import {
  contractExample,
  contractWithSummaryExample,
  createdKeyExample,
  createKeyRequestExample,
  detailExample,
  keyListExample,
  listExample,
  revokedKeyExample,
} from './examples.js';
import { DEGRADED_REASONS, LEGACY_STATUSES, LIFECYCLE_STATUSES, METRIC_SCOPES, responseSchemas } from './schemas.js';

type Json = Record<string, unknown>;

export interface OpenApiDocument {
  openapi: string;
  info: Json;
  paths: Record<string, Record<string, Json>>;
  components: {
    schemas: Record<string, Json>;
    responses: Record<string, Json>;
    headers: Record<string, Json>;
    parameters: Record<string, Json>;
    securitySchemes: Record<string, Json>;
  };
  [member: string]: unknown;
}

const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });
const schemaRef = (name: keyof typeof responseSchemas | 'CreateApiKeyRequest') => ref('schemas', name);

/**
 * Response objects are open: v1 adds fields, and consumers must not reject
 * unknown ones (contract section 9), so `additionalProperties: false`, which
 * zod emits for every object, is dropped. The tests close them again.
 */
function openObjects(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(openObjects);
  if (node === null || typeof node !== 'object') return node;
  const result: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$schema' || key === '$id') continue;
    if (key === 'additionalProperties' && value === false) continue;
    result[key] = openObjects(value);
  }
  return result;
}

function componentSchemas(): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(responseSchemas)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io: 'output',
    uri: (id) => `#/components/schemas/${id}`,
  });
  const result = openObjects(schemas) as Record<string, Json>;

  // The request body is the route's own zod schema; unknown members are a 400, so it stays closed.
  const { $schema: _, ...body } = z.toJSONSchema(createKeyBody, { target: 'draft-2020-12', io: 'input' }) as Json;
  const properties = body.properties as Record<string, Json>;
  properties.scopes = {
    type: 'array',
    items: { type: 'string', enum: [...AGENT_CONTRACT_SCOPES] },
    minItems: 2,
    maxItems: 2,
    uniqueItems: true,
    description: `default and only allowed value: exactly ${AGENT_CONTRACT_SCOPES.join(' and ')}, any order`,
  };
  result.CreateApiKeyRequest = body;
  return result;
}

const header = (description: string, schema: Json, example?: unknown) => ({
  description,
  schema,
  ...(example === undefined ? {} : { example }),
});

const headers = {
  'X-Request-Id': header(
    'The request id: an incoming X-Request-Id of up to 128 characters [A-Za-z0-9._:-], else a new UUID.',
    { type: 'string' },
  ),
  'RateLimit-Limit': header('Requests allowed per minute for this key.', { type: 'integer' }, 60),
  'RateLimit-Remaining': header('Requests left in the current window.', { type: 'integer' }, 59),
  'RateLimit-Reset': header('Seconds until the window resets.', { type: 'integer' }, 42),
  'Retry-After': header('Whole seconds to wait before retrying (>= 1).', { type: 'integer', minimum: 1 }, 30),
  'X-Discussion-Summary-Charged': header('With summary=true: 1 when this call was billed, else 0.', {
    type: 'string',
    enum: ['0', '1'],
  }),
  'X-Discussion-Summary': header('With summary=true, when discussion_summary is null: why.', {
    type: 'string',
    enum: [...DEGRADED_REASONS],
  }),
};

const requestIdHeader = { 'X-Request-Id': ref('headers', 'X-Request-Id') };
const rateLimitHeaders = {
  ...requestIdHeader,
  'RateLimit-Limit': ref('headers', 'RateLimit-Limit'),
  'RateLimit-Remaining': ref('headers', 'RateLimit-Remaining'),
  'RateLimit-Reset': ref('headers', 'RateLimit-Reset'),
};

function errorExamples(...responses: ErrorResponse[]) {
  return Object.fromEntries(
    responses.map((response) => {
      const body = response.body.error;
      return [typeof body === 'string' ? body : body.code, { value: response.body }];
    }),
  );
}

function json(schema: Json, examples?: Json, extra: Json = {}) {
  return { content: { 'application/json': { schema, ...(examples ? { examples } : {}) } }, ...extra };
}

function errorResponse(description: string, responseHeaders: Json, ...responses: ErrorResponse[]) {
  return { description, headers: responseHeaders, ...json(schemaRef('ErrorMessage'), errorExamples(...responses)) };
}

const responses = {
  Unauthorized: errorResponse(
    'No, malformed, unknown or revoked API key.',
    requestIdHeader,
    errors.missingAuthorization,
    errors.invalidAuthorizationFormat,
    errors.invalidApiKeyFormat,
    errors.invalidApiKey,
    errors.revokedApiKey,
  ),
  Forbidden: {
    description: 'The key lacks the scope, or a sandbox key was sent without `X-Service-Env: sandbox`.',
    headers: requestIdHeader,
    ...json(
      { oneOf: [schemaRef('ErrorMessage'), schemaRef('SandboxError')] },
      errorExamples(errors.insufficientScope, errors.sandboxKeyRequiresSandbox),
    ),
  },
  RateLimited: errorResponse(
    'Per-key rate limit or pre-verification throttle exceeded.',
    { ...rateLimitHeaders, 'Retry-After': { ...ref('headers', 'Retry-After'), required: true } as Json },
    errors.rateLimited,
  ),
  InvalidMetricId: errorResponse('The id is not a UUID.', rateLimitHeaders, errors.invalidMetricId),
  MetricNotFound: errorResponse(
    'No such metric in the key’s organization (other organizations’ metrics look the same).',
    rateLimitHeaders,
    errors.metricNotFound,
  ),
  FetchFailed: errorResponse(
    'The metric could not be read; the cause is logged.',
    rateLimitHeaders,
    errors.fetchFailed,
  ),
  NotSignedIn: errorResponse('No session cookie, or an unknown or expired one.', requestIdHeader, errors.notSignedIn),
  AdminForbidden: errorResponse(
    'Not an admin or owner of the active organization, or a cross-site request (CSRF defence).',
    rateLimitHeaders,
    errors.forbidden,
  ),
  InternalError: errorResponse('Unexpected failure; the cause is logged.', rateLimitHeaders, errors.internal),
};

const readErrors = {
  '401': ref('responses', 'Unauthorized'),
  '403': ref('responses', 'Forbidden'),
  '429': ref('responses', 'RateLimited'),
};
const adminErrors = {
  '401': ref('responses', 'NotSignedIn'),
  '403': ref('responses', 'AdminForbidden'),
  '429': ref('responses', 'RateLimited'),
  '500': ref('responses', 'InternalError'),
};

const queryParameter = (name: string, description: string, schema: Json) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});

const parameters = {
  metricId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Metric id (UUID); anything else is 400.',
    schema: { type: 'string', format: 'uuid' },
  },
  serviceEnv: {
    name: 'X-Service-Env',
    in: 'header',
    required: false,
    description: 'Required with value `sandbox` when the key is a sandbox key.',
    schema: { type: 'string', enum: ['sandbox'] },
  },
};

const listParameters = [
  queryParameter(
    'q',
    'Search text in web search syntax (words, "quoted phrases", `or`, `-excluded`) over name, key, concept, tags and ' +
      "description; a word that is none of the organization's words is corrected to those it is part of or similar " +
      'to, ranked below what the query matched as written. When not whitespace-only, results are ordered by relevance.',
    { type: 'string' },
  ),
  queryParameter('page', 'Page number; invalid or missing becomes 1.', { type: 'integer', minimum: 1, default: 1 }),
  queryParameter('pageSize', 'Page size; invalid or missing becomes 20, values above 100 become 100.', {
    type: 'integer',
    minimum: 1,
    default: 20,
  }),
  queryParameter('lifecycle_status', 'Canonical lifecycle filter, passed through (other values match nothing).', {
    type: 'string',
    examples: [...LIFECYCLE_STATUSES],
  }),
  queryParameter('status', 'Legacy status filter, used only without lifecycle_status; unknown values are ignored.', {
    type: 'string',
    examples: [...LEGACY_STATUSES],
  }),
  queryParameter('policy_tier', 'Policy-tier filter (the old `tier` parameter is not translated).', {
    type: 'string',
  }),
  queryParameter('scope', 'Scope filter; invalid values are ignored.', {
    type: 'string',
    examples: [...METRIC_SCOPES],
  }),
  queryParameter('type', 'Metric type filter, for example base or derived.', { type: 'string' }),
  ref('parameters', 'serviceEnv'),
];

const bearer = [{ bearerAuth: [] }];
const session = [{ sessionCookie: [] }];

function buildPaths() {
  const ok = (description: string, schema: Json, example: unknown, responseHeaders: Json = rateLimitHeaders) => ({
    description,
    headers: responseHeaders,
    ...json(schema, { default: { value: example } }),
  });
  return {
    '/api/v1/metrics': {
      get: {
        operationId: 'listMetrics',
        tags: ['Metrics'],
        summary: 'List or search metrics',
        description: 'Scope `metrics:read` (or an Agent Contract key). Plain listing is by name, then id.',
        security: bearer,
        parameters: listParameters,
        responses: { '200': ok('A page of metrics.', schemaRef('MetricList'), listExample), ...readErrors },
      },
    },
    '/api/v1/metrics/{id}': {
      get: {
        operationId: 'getMetric',
        tags: ['Metrics'],
        summary: 'Metric detail',
        description: 'Scope `metrics:read` (or an Agent Contract key).',
        security: bearer,
        parameters: [ref('parameters', 'metricId'), ref('parameters', 'serviceEnv')],
        responses: {
          '200': ok('The metric and its governance context.', schemaRef('MetricDetailResponse'), detailExample),
          '400': ref('responses', 'InvalidMetricId'),
          ...readErrors,
          '404': ref('responses', 'MetricNotFound'),
          '500': ref('responses', 'FetchFailed'),
        },
      },
    },
    '/api/v1/metrics/{id}/contract': {
      get: {
        operationId: 'getMetricContract',
        tags: ['Metrics'],
        summary: 'Agent contract of a metric',
        description:
          'Scope `canonical-metric-api:read` (or `metrics:read`). With `summary=true` the response adds ' +
          '`discussion_summary` and `discussion_summary_meta` and may bill the organization.',
        security: bearer,
        parameters: [
          ref('parameters', 'metricId'),
          queryParameter('summary', 'Only the exact value `true` asks for the discussion summary.', {
            type: 'string',
            enum: ['true'],
          }),
          ref('parameters', 'serviceEnv'),
        ],
        responses: {
          '200': {
            description: 'The agent contract.',
            headers: {
              ...rateLimitHeaders,
              'X-Discussion-Summary-Charged': ref('headers', 'X-Discussion-Summary-Charged'),
              'X-Discussion-Summary': ref('headers', 'X-Discussion-Summary'),
            },
            ...json(schemaRef('MetricContractResponse'), {
              default: { value: contractExample },
              withSummary: { summary: 'summary=true', value: contractWithSummaryExample },
            }),
          },
          '400': ref('responses', 'InvalidMetricId'),
          ...readErrors,
          '404': ref('responses', 'MetricNotFound'),
          '500': ref('responses', 'FetchFailed'),
        },
      },
    },
    '/api/api-keys': {
      post: {
        operationId: 'createApiKey',
        tags: ['API keys'],
        summary: 'Create an API key',
        description: 'Signed-in admin or owner. The secret is returned this once.',
        security: session,
        requestBody: {
          required: true,
          ...json(schemaRef('CreateApiKeyRequest'), { default: { value: createKeyRequestExample } }),
        },
        responses: {
          '201': ok(
            'The new key with its secret.',
            schemaRef('CreatedApiKeyResponse'),
            createdKeyExample,
            rateLimitHeaders,
          ),
          '400': errorResponse(
            'The body is not valid; the message says why.',
            rateLimitHeaders,
            badRequest('name: name must not be empty'),
          ),
          ...adminErrors,
          '415': errorResponse('The body is not application/json.', rateLimitHeaders, errors.jsonContentTypeRequired),
        },
      },
      get: {
        operationId: 'listApiKeys',
        tags: ['API keys'],
        summary: 'List the organization’s API keys',
        description: 'Signed-in admin or owner; newest first; never a secret.',
        security: session,
        responses: {
          '200': ok('The keys.', schemaRef('ApiKeyListResponse'), keyListExample, rateLimitHeaders),
          ...adminErrors,
        },
      },
    },
    '/api/api-keys/{key_id}': {
      delete: {
        operationId: 'revokeApiKey',
        tags: ['API keys'],
        summary: 'Revoke an API key',
        description: 'Signed-in admin or owner. Idempotent: an already revoked key keeps its revoked_at.',
        security: session,
        parameters: [{ name: 'key_id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': ok('The revoked key.', schemaRef('RevokedApiKeyResponse'), revokedKeyExample, rateLimitHeaders),
          ...adminErrors,
          '404': errorResponse('No such key in the active organization.', rateLimitHeaders, errors.apiKeyNotFound),
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'healthz',
        tags: ['Operations'],
        summary: 'Liveness',
        security: [],
        responses: { '200': ok('The process serves.', schemaRef('Health'), { status: 'ok' }, requestIdHeader) },
      },
    },
    '/readyz': {
      get: {
        operationId: 'readyz',
        tags: ['Operations'],
        summary: 'Readiness',
        security: [],
        responses: {
          '200': ok(
            'Database and Redis (when configured) answer.',
            schemaRef('Readiness'),
            readyExample(true),
            requestIdHeader,
          ),
          '503': ok('A dependency does not answer.', schemaRef('Readiness'), readyExample(false), requestIdHeader),
        },
      },
    },
  };
}

function readyExample(ready: boolean) {
  return { status: ready ? 'ready' : 'unavailable', database: ready ? 'up' : 'down', redis: 'up' };
}

function buildDocument(): OpenApiDocument {
  const paths = buildPaths();
  return {
    openapi: '3.1.0',
    info: {
      title: 'Metric Governance API',
      version: 'v1',
      description:
        'Governed metric context (definitions, lifecycle status, approved versions, curated discussion notes) ' +
        'for BI tools, AI agents and CI checks. Read routes take `Authorization: Bearer <API key>`; key ' +
        'administration takes a signed-in `session` cookie. v1 responses may gain fields: ignore unknown ones.',
    },
    servers: [{ url: '/' }],
    tags: [
      { name: 'Metrics', description: 'Public read routes (API key).' },
      { name: 'API keys', description: 'Key administration (signed-in admin or owner).' },
      { name: 'Operations', description: 'Health and readiness (no authentication).' },
    ],
    paths,
    components: {
      schemas: componentSchemas(),
      responses,
      headers,
      parameters,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'cl_ followed by 40 lowercase hex characters',
          description: 'An API key of the organization.',
        },
        sessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'session',
          description: 'A signed-in session (`npm run cli -- session:create`).',
        },
      },
    },
  };
}

let cached: OpenApiDocument | undefined;

/** The document, built once per process (it depends on nothing at run time). */
export function openApiDocument(): OpenApiDocument {
  cached ??= buildDocument();
  return cached;
}
