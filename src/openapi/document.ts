/**
 * The OpenAPI 3.1 document of the REST routes: their paths, over the
 * components of src/openapi/components.ts (built from the zod schemas of
 * src/openapi/schemas.ts and src/http/admin-routes.ts, the error catalogue
 * and the headers the routes send). Served at GET /api/v1/openapi.json and
 * rendered at /docs.
 */
import { badRequest, errors } from '../errors.js';
import {
  adminErrors,
  bearer,
  componentSchemas,
  errorResponse,
  headers,
  json,
  listParameters,
  notModified,
  parameters,
  queryParameter,
  rateLimitHeaders,
  readErrors,
  ref,
  requestIdHeader,
  responses,
  schemaRef,
  session,
  validatorHeaders,
} from './components.js';
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

/** Headers of a read route's 200: the rate limit, the request id and the validators. */
const readHeaders = { ...rateLimitHeaders, ...validatorHeaders };

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
        responses: {
          '200': ok('A page of metrics.', schemaRef('MetricList'), listExample, readHeaders),
          '304': ref('responses', 'NotModified'),
          '400': ref('responses', 'InputTooLong'),
          ...readErrors,
          '500': ref('responses', 'FetchFailed'),
        },
      },
    },
    '/api/v1/metrics/{id}': {
      get: {
        operationId: 'getMetric',
        tags: ['Metrics'],
        summary: 'Metric detail',
        description: 'Scope `metrics:read` (or an Agent Contract key).',
        security: bearer,
        parameters: [ref('parameters', 'metricId'), ref('parameters', 'serviceEnv'), ref('parameters', 'ifNoneMatch')],
        responses: {
          '200': ok(
            'The metric and its governance context.',
            schemaRef('MetricDetailResponse'),
            detailExample,
            readHeaders,
          ),
          '304': ref('responses', 'NotModified'),
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
          ref('parameters', 'ifNoneMatch'),
        ],
        responses: {
          '200': {
            description: 'The agent contract.',
            headers: {
              ...readHeaders,
              'X-Discussion-Summary-Charged': ref('headers', 'X-Discussion-Summary-Charged'),
              'X-Discussion-Summary': ref('headers', 'X-Discussion-Summary'),
            },
            ...json(schemaRef('MetricContractResponse'), {
              default: { value: contractExample },
              withSummary: { summary: 'summary=true', value: contractWithSummaryExample },
            }),
          },
          '304': notModified(
            'The contract is the one `If-None-Match` names: no body. With summary=true only when the summary would ' +
              'come from the cache (or there is no discussion): nothing is generated or billed, and ' +
              '`X-Discussion-Summary-Charged` is 0.',
            {
              'X-Discussion-Summary-Charged': ref('headers', 'X-Discussion-Summary-Charged'),
              'X-Discussion-Summary': ref('headers', 'X-Discussion-Summary'),
            },
          ),
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
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
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
