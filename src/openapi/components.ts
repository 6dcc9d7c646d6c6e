/**
 * The reusable parts of the OpenAPI document (src/openapi/document.ts):
 * component schemas from zod, headers, responses with their error examples,
 * parameters and security requirements.
 */
import { z } from 'zod';
import { AGENT_CONTRACT_SCOPES } from '../auth/scopes.js';
import type { WriteScope } from '../auth/service-token.js';
import { type ErrorResponse, errors } from '../errors.js';
import { createKeyBody } from '../http/admin-routes.js';
import { MAX_FILTER_CHARACTERS, MAX_SEARCH_CHARACTERS, MAX_SEARCH_WORDS } from '../metric/input.js';
import { LEGACY_STATUSES, LIFECYCLE_STATUSES } from '../metric/lifecycle.js';
import { METRIC_SCOPES } from '../metric/list.js';
import { TRUST_VERDICTS } from '../metric/trust.js';
import { CACHE_CONTROL, VARY } from '../rest/etag.js';
import { requestSchemas } from './requests.js';
import { DEGRADED_REASONS, responseSchemas } from './schemas.js';

type Json = Record<string, unknown>;

export const ref = (kind: string, name: string) => ({ $ref: `#/components/${kind}/${name}` });
export const schemaRef = (name: keyof typeof responseSchemas | keyof typeof requestSchemas | 'CreateApiKeyRequest') =>
  ref('schemas', name);

const schemaUri = (id: string) => `#/components/schemas/${id}`;

/** Drops `$schema` and `$id` (the document is the root); with `open`, also `additionalProperties: false`. */
function withoutIds(node: unknown, open: boolean): unknown {
  if (Array.isArray(node)) return node.map((item) => withoutIds(item, open));
  if (node === null || typeof node !== 'object') return node;
  const result: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$schema' || key === '$id') continue;
    if (open && key === 'additionalProperties' && value === false) continue;
    result[key] = withoutIds(value, open);
  }
  // A reference takes no siblings but summary and description in OpenAPI 3.1 tools (zod puts a
  // field's `default` beside its $ref): the reference goes into allOf, its siblings stay.
  const { $ref, ...siblings } = result;
  if ($ref !== undefined && Object.keys(siblings).some((key) => key !== 'description' && key !== 'summary')) {
    return { allOf: [{ $ref }], ...siblings };
  }
  return result;
}

/**
 * Response objects are open: v1 adds fields, and consumers must not reject
 * unknown ones (contract section 9), so `additionalProperties: false`, which
 * zod emits for every object, is dropped. The tests close them again.
 */
const openObjects = (node: unknown) => withoutIds(node, true);

function toComponents(schemas: Record<string, z.ZodType>, io: 'input' | 'output'): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  return z.toJSONSchema(registry, { target: 'draft-2020-12', io, uri: schemaUri }).schemas as Record<string, Json>;
}

export function componentSchemas(): Record<string, Json> {
  const schemas = toComponents(responseSchemas, 'output');
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

  // Request bodies as a client writes them (defaults may be left out); unknown members are a 400, so they stay closed.
  const requests = withoutIds(toComponents(requestSchemas, 'input'), false) as Record<string, Json>;
  requests.JsonValue = { ...requests.JsonValue, description: 'Any JSON value.' };
  return { ...result, ...requests };
}

const header = (description: string, schema: Json, example?: unknown) => ({
  description,
  schema,
  ...(example === undefined ? {} : { example }),
});
/**
 * A header every response that lists it sends. `required` lives in the
 * component: beside a `$ref` (a Reference Object) OpenAPI 3.1 ignores it.
 */
const requiredHeader = (description: string, schema: Json, example?: unknown) => ({
  ...header(description, schema, example),
  required: true,
});

export const headers = {
  'X-Request-Id': header(
    'The request id: an incoming X-Request-Id of up to 128 characters [A-Za-z0-9._:-], else a new UUID.',
    { type: 'string' },
  ),
  'RateLimit-Limit': header(
    'Requests allowed per minute for this key (or service token, or signed-in user).',
    { type: 'integer' },
    60,
  ),
  'RateLimit-Remaining': header('Requests left in the current window.', { type: 'integer' }, 59),
  'RateLimit-Reset': header('Seconds until the window resets.', { type: 'integer' }, 42),
  'Retry-After': requiredHeader('Whole seconds to wait before retrying (>= 1).', { type: 'integer', minimum: 1 }, 30),
  'X-Discussion-Summary-Charged': header('With summary=true: 1 when this call was billed, else 0.', {
    type: 'string',
    enum: ['0', '1'],
  }),
  'X-Discussion-Summary': header('With summary=true, when discussion_summary is null: why.', {
    type: 'string',
    enum: [...DEGRADED_REASONS],
  }),
  ETag: requiredHeader(
    'A strong entity tag of this representation. Send it back in `If-None-Match`: while the body would be the ' +
      'same, the answer is 304 Not Modified without a body. Opaque; the same on every instance.',
    // No example: a made-up tag would travel into the reference's generated requests.
    { type: 'string', pattern: '^"[A-Za-z0-9_-]+"$' },
  ),
  'Cache-Control': requiredHeader('A client or private cache may keep the response but must revalidate it.', {
    type: 'string',
    enum: [CACHE_CONTROL],
  }),
  Vary: requiredHeader('The representation depends on the key and the sandbox header.', {
    type: 'string',
    enum: [VARY],
  }),
  'WWW-Authenticate': requiredHeader(
    'The challenge (RFC 6750): `Bearer` without a credential, `Bearer error="invalid_request"` for a malformed ' +
      'Authorization header, `Bearer error="invalid_token"` for a malformed, unknown or revoked key.',
    { type: 'string', enum: ['Bearer', 'Bearer error="invalid_request"', 'Bearer error="invalid_token"'] },
    'Bearer error="invalid_token"',
  ),
};

export const requestIdHeader = { 'X-Request-Id': ref('headers', 'X-Request-Id') };
export const rateLimitHeaders = {
  ...requestIdHeader,
  'RateLimit-Limit': ref('headers', 'RateLimit-Limit'),
  'RateLimit-Remaining': ref('headers', 'RateLimit-Remaining'),
  'RateLimit-Reset': ref('headers', 'RateLimit-Reset'),
};
/** Sent with every 200 and 304 of the read routes. */
export const validatorHeaders = {
  ETag: ref('headers', 'ETag'),
  'Cache-Control': ref('headers', 'Cache-Control'),
  Vary: ref('headers', 'Vary'),
};

/** 304 of a read route: no body. */
export function notModified(description: string, extraHeaders: Json = {}) {
  return { description, headers: { ...rateLimitHeaders, ...validatorHeaders, ...extraHeaders } };
}

function errorExamples(...responses: ErrorResponse[]) {
  return Object.fromEntries(
    responses.map((response) => {
      const body = response.body.error;
      return [typeof body === 'string' ? body : body.code, { value: response.body }];
    }),
  );
}

export function json(schema: Json, examples?: Json, extra: Json = {}) {
  return { content: { 'application/json': { schema, ...(examples ? { examples } : {}) } }, ...extra };
}

export function errorResponse(description: string, responseHeaders: Json, ...responses: ErrorResponse[]) {
  return { description, headers: responseHeaders, ...json(schemaRef('ErrorMessage'), errorExamples(...responses)) };
}

/** A 400 of a write route: `{ error, details? }`, the problems of a document or batch. */
export function problemsResponse(description: string, responseHeaders: Json, ...responses: ErrorResponse[]) {
  return { description, headers: responseHeaders, ...json(schemaRef('DocumentProblems'), errorExamples(...responses)) };
}

/**
 * Bodies the write routes spell themselves (src/http/write-routes.ts); the
 * OpenAPI tests compare the real responses with them.
 */
export const writeRouteErrors = {
  bodyTooLarge: errors.bodyTooLarge,
  registryContentType: errors.documentContentTypeRequired,
  otherOrganization: errors.otherOrganization('globex', 'acme'),
} satisfies Record<string, ErrorResponse>;

export const responses = {
  Unauthorized: errorResponse(
    'No, malformed, unknown or revoked API key.',
    { ...requestIdHeader, 'WWW-Authenticate': ref('headers', 'WWW-Authenticate') },
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
    'The caller’s rate limit (per key, service token or signed-in user) or the pre-verification throttle is exceeded.',
    { ...rateLimitHeaders, 'Retry-After': ref('headers', 'Retry-After') },
    errors.rateLimited,
  ),
  InvalidMetricId: errorResponse('The id is not a UUID.', rateLimitHeaders, errors.invalidMetricId),
  InputTooLong: errorResponse(
    `A parameter is past its bound: \`q\` over ${MAX_SEARCH_CHARACTERS} characters (trimmed) or ${MAX_SEARCH_WORDS} words, ` +
      `a filter value over ${MAX_FILTER_CHARACTERS} characters; or a text parameter holds a control character (other ` +
      'than tab and line breaks); or `trust` is not one verdict. Refused, never cut short; the message names the ' +
      'parameter.',
    rateLimitHeaders,
    errors.invalidCharacters('q'),
    errors.inputTooLong('q', MAX_SEARCH_CHARACTERS),
    errors.tooManyWords('q', MAX_SEARCH_WORDS),
    errors.inputTooLong('policy_tier', MAX_FILTER_CHARACTERS),
    errors.notOneOf('trust', TRUST_VERDICTS),
  ),
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
  WriterUnauthorized: errorResponse(
    'Without an `Authorization` header: no session cookie, or an unknown or expired one. With one: a missing, ' +
      'malformed, unknown or revoked service token; a read API key (`cl_…`) is refused here at the format check.',
    requestIdHeader,
    errors.notSignedIn,
    errors.missingAuthorization,
    errors.invalidAuthorizationFormat,
    errors.invalidApiKeyFormat,
    errors.invalidApiKey,
    errors.revokedApiKey,
  ),
  InternalError: errorResponse('Unexpected failure; the cause is logged.', rateLimitHeaders, errors.internal),
  ServiceUnavailable: errorResponse(
    'The database does not answer (stopped, restarting, refusing or dropping connections): retry after ' +
      `\`Retry-After\` seconds (${errors.serviceUnavailable.retryAfter}). A write it interrupted left nothing ` +
      'written. `/readyz` names the dependency that is down.',
    { ...rateLimitHeaders, 'Retry-After': ref('headers', 'Retry-After') },
    errors.serviceUnavailable,
  ),
  NotModified: notModified(
    'The representation is the one `If-None-Match` names: no body. Sent only after authentication, scope and ' +
      'the rate limit (it spends the budget like a 200).',
  ),
};

export const readErrors = {
  '401': ref('responses', 'Unauthorized'),
  '403': ref('responses', 'Forbidden'),
  '429': ref('responses', 'RateLimited'),
  '503': ref('responses', 'ServiceUnavailable'),
};
export const adminErrors = {
  '401': ref('responses', 'NotSignedIn'),
  '403': ref('responses', 'AdminForbidden'),
  '429': ref('responses', 'RateLimited'),
  '500': ref('responses', 'InternalError'),
  '503': ref('responses', 'ServiceUnavailable'),
};

export const queryParameter = (name: string, description: string, schema: Json) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});

export const parameters = {
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
  ifNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description:
      'ETags of representations the client has (a list, `W/` allowed: weak comparison), or `*`. When one is the ' +
      'current tag the answer is 304 Not Modified. A malformed value is ignored (200).',
    schema: { type: 'string' },
  },
};

const filterBound = ` At most ${MAX_FILTER_CHARACTERS} characters; longer is 400.`;
/**
 * The values a filter knows, in its description rather than as schema `examples` or `default`:
 * interactive references (/docs) fill a request with those, and a filled filter (or an
 * If-None-Match) turns "send" into an empty or 304 answer.
 */
const known = (values: readonly string[]) => ` Values: ${values.map((v) => `\`${v}\``).join(', ')}.`;

export const listParameters = [
  queryParameter(
    'q',
    'Search text in web search syntax (words, "quoted phrases", `or`, `-excluded`) over name, key, concept, tags and ' +
      "description; a word that is none of the organization's words is corrected to those it is part of or similar " +
      'to, ranked below what the query matched as written. When not whitespace-only, results are ordered by relevance. ' +
      `At most ${MAX_SEARCH_CHARACTERS} characters once trimmed and ${MAX_SEARCH_WORDS} words; longer is 400.`,
    { type: 'string', maxLength: MAX_SEARCH_CHARACTERS },
  ),
  queryParameter('page', 'Page number; invalid or missing becomes 1.', { type: 'integer', minimum: 1 }),
  queryParameter('pageSize', 'Page size; invalid or missing becomes 20, values above 100 become 100.', {
    type: 'integer',
    minimum: 1,
  }),
  queryParameter(
    'lifecycle_status',
    `Canonical lifecycle filter, passed through (other values match nothing).${known(LIFECYCLE_STATUSES)}${filterBound}`,
    { type: 'string', maxLength: MAX_FILTER_CHARACTERS },
  ),
  queryParameter(
    'status',
    `Legacy status filter, used only without lifecycle_status; unknown values are ignored.${known(LEGACY_STATUSES)}${filterBound}`,
    { type: 'string', maxLength: MAX_FILTER_CHARACTERS },
  ),
  queryParameter('policy_tier', `Policy-tier filter (the old \`tier\` parameter is not translated).${filterBound}`, {
    type: 'string',
    maxLength: MAX_FILTER_CHARACTERS,
  }),
  queryParameter('scope', `Scope filter; invalid values are ignored.${known(METRIC_SCOPES)}${filterBound}`, {
    type: 'string',
    maxLength: MAX_FILTER_CHARACTERS,
  }),
  queryParameter('type', `Metric type filter, for example base or derived.${filterBound}`, {
    type: 'string',
    maxLength: MAX_FILTER_CHARACTERS,
  }),
  queryParameter(
    'trust',
    'Trust verdict filter: the metrics whose verdict, as last evaluated, is this one. One verdict; any other value ' +
      '(several separated by commas included) is 400. The verdict is evaluated by every write that can move it (an ' +
      'apply, validation evidence), in its transaction, and by the trust sweep every `TRUST_SWEEP_INTERVAL_S` ' +
      'seconds (60 by default) for what time alone moves (validation evidence going stale, docs/trust.md): a verdict ' +
      'that time alone moved shows in this filter after the next sweep, and until then an item may carry (in its ' +
      '`trust`, computed at the request) a verdict other than the one filtered on. A metric written outside the ' +
      'service (plain SQL) matches no verdict until the next sweep has evaluated it. Needs a key that may read the ' +
      'contract (`canonical-metric-api:read` or `metrics:read`): 403 for a key of `definition:read` alone.' +
      known(TRUST_VERDICTS),
    { type: 'string', maxLength: MAX_FILTER_CHARACTERS },
  ),
  ref('parameters', 'serviceEnv'),
  ref('parameters', 'ifNoneMatch'),
];

export const bearer = [{ bearerAuth: [] }];
export const session = [{ sessionCookie: [] }];
/** A write route: a service token with `scope`, or a signed-in admin or owner. */
export const writer = (scope: WriteScope) => [{ serviceToken: [scope] }, { sessionCookie: [] }];
