/**
 * The OpenAPI 3.1 document of the REST routes: their paths, over the
 * components of src/openapi/components.ts (built from the zod schemas of
 * src/openapi/schemas.ts and src/http/admin-routes.ts, the error catalogue
 * and the headers the routes send). Served at GET /api/v1/openapi.json and
 * rendered at /docs.
 */
import { WRITE_SCOPES } from '../auth/service-token.js';
import { DEFAULT_CHANGES_LIMIT, ExpiredCursorError, MAX_CHANGES_LIMIT } from '../changes/feed.js';
import { badRequest, documentProblems, type ErrorResponse, errors } from '../errors.js';
import { LifecycleStatus } from '../generated/prisma/enums.js';
import { EXPORT_PARAMETERS } from '../http/export-routes.js';
import { UPLOAD_APPLY_PARAMETERS } from '../http/upload-routes.js';
import { confirmRemovals } from '../http/write-requests.js';
import { APPLY_PARAMETERS } from '../http/write-routes.js';
import {
  MAX_DERIVED_DEPTH,
  MAX_DIMENSIONS,
  MAX_FILTERS,
  MAX_GOVERNANCE_DATA,
  MAX_GOVERNANCE_DEPTH,
  MAX_IMPORTED_SIZE,
  MAX_RENDERED_EXPRESSION,
  MAX_SOURCE_REFS,
} from '../importers/limits.js';
import {
  DEFAULT_LINEAGE_DEPTH,
  DEFAULT_LINEAGE_LIMIT,
  LINEAGE_DIRECTIONS,
  lineageErrors,
  MAX_LINEAGE_DEPTH,
  MAX_LINEAGE_LIMIT,
  MAX_LINEAGE_STEPS,
} from '../metric/lineage.js';
import { USAGE_FLUSH_INTERVAL_MS, USAGE_RETENTION_DAYS, USAGE_WINDOW_DAYS } from '../metric/usage.js';
import { MAX_UPLOAD_PROBLEMS } from '../registry/apply-upload.js';
import { EXPORT_FORMATS, MAX_EXPORT_SOURCE_LENGTH } from '../registry/export.js';
import {
  DBT_EVIDENCE_BODY_LIMIT,
  EARLIEST_YEAR,
  LATEST_YEAR,
  MAX_DEPTH,
  MAX_DOCUMENT_METRICS,
  MAX_JSON_DOCUMENT_NODES,
  MAX_VALIDATION_DETAILS,
  MAX_VALIDATION_FUTURE_MS,
  MAX_VALIDATION_METRIC_KEY,
  MAX_VALIDATION_RESULTS,
  MAX_VALIDATION_SOURCE,
  MAX_YAML_DOCUMENT_NODES,
  REGISTRY_BODY_LIMIT,
  VALIDATIONS_BODY_LIMIT,
} from '../registry/limits.js';
import { DEFAULT_DOCUMENT_READ_SETTINGS } from '../registry/read-off-thread.js';
import { DEFAULT_PRUNE_MAX_REMOVALS, RemovalsNotAllowed } from '../registry/removals.js';
import { SOURCE_FORMATS } from '../registry/source.js';
import {
  MAX_OPEN_UPLOADS,
  MAX_UPLOAD_BYTES,
  MAX_UPLOAD_METRICS,
  MAX_UPLOAD_PARTS,
  UPLOAD_TTL_MS,
} from '../registry/upload.js';
import { DEFAULT_REGISTRY_WRITE_SETTINGS } from '../registry/write-queue.js';
import { MAX_WAIT_SECONDS } from '../rest/changes-route.js';
import { MAX_WEBHOOKS_PER_ORGANIZATION } from '../webhooks/endpoints.js';
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
  problemsResponse,
  queryParameter,
  rateLimitHeaders,
  readErrors,
  ref,
  requestIdHeader,
  responses,
  schemaRef,
  session,
  validatorHeaders,
  writeRouteErrors,
  writer,
} from './components.js';
import { discussionPaths } from './discussion-paths.js';
import {
  changeFeedExample,
  contractExample,
  contractWithSummaryExample,
  createdKeyExample,
  createdServiceTokenExample,
  createdWebhookExample,
  createKeyRequestExample,
  createServiceTokenRequestExample,
  createWebhookRequestExample,
  dbtValidationsExample,
  deletedWebhookExample,
  detailExample,
  keyListExample,
  lineageExample,
  listExample,
  metricSourcesExample,
  metricUsageExample,
  recordedValidationsExample,
  registryDocumentExample,
  registryDocumentYaml,
  registryDryRunExample,
  registryNoChangeExample,
  registryPlanExample,
  revokedKeyExample,
  revokedServiceTokenExample,
  serviceTokenListExample,
  validationsRequestExample,
  webhookDeliveriesExample,
  webhookListExample,
  webhookTestExample,
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

const MiB = 1024 * 1024;
/** The app's body limit (src/app.ts), which POST /api/validations keeps. */
const DEFAULT_BODY_LIMIT = MiB;

const writerDescription = (scope: string) =>
  `A service token with scope \`${scope}\` (\`Authorization: Bearer cls_…\`), or a signed-in admin or owner ` +
  '(session cookie; a cross-site request is 403, as on the key administration routes). With an `Authorization` ' +
  'header the cookie is not looked at. A read API key is never accepted here (401 `Invalid API key format`), ' +
  'nor a service token on the read routes, `/graphql` or `/mcp`. Service tokens have their own rate limit ' +
  '(`SERVICE_TOKEN_RATE_LIMIT_PER_MINUTE`); a session spends its user’s.';

/** How the writes of one organization take turns (src/registry/write-queue.ts), said on each write route. */
const writeQueueDescription =
  'Writes of one organization’s registry (applies, validation results) take turns: one waiting for another ' +
  'holds no database connection, on this instance or across instances, and the registry writes of an instance ' +
  'hold at most a quarter of its database pool, so that reads keep the rest. A write that would wait more than ' +
  `${DEFAULT_REGISTRY_WRITE_SETTINGS.maxWaitMs / 1000} s, or find ${DEFAULT_REGISTRY_WRITE_SETTINGS.maxQueued} ` +
  'writes of the organization waiting on its instance, is 409 with `Retry-After`, naming the write in progress ' +
  '(what it is, who started it and when); nothing is written.\n\n' +
  'A query parameter the route does not take is 400 naming it, answered before the body is read: a misspelt ' +
  'flag never writes as if it were not there.\n\n' +
  'The body is read (parsed, imported, validated) off the event loop, in a worker thread of its own heap ' +
  `(${DEFAULT_DOCUMENT_READ_SETTINGS.memoryMb} MB for long-lived objects, or the process's ` +
  `\`--max-old-space-size\`) and ${DEFAULT_DOCUMENT_READ_SETTINGS.timeBudgetMs / 1000} s ` +
  '(`DOCUMENT_READ_MEMORY_MB`, `DOCUMENT_READ_TIMEOUT_MS`): a body that needs more is 422 naming the limit. ' +
  `An instance reads ${DEFAULT_DOCUMENT_READ_SETTINGS.workers} body at a time; a body waits for it at most ` +
  `${DEFAULT_DOCUMENT_READ_SETTINGS.maxWaitMs / 1000} s, behind at most ${DEFAULT_DOCUMENT_READ_SETTINGS.maxQueued} ` +
  'others, then is 503 with `Retry-After`.';

const registryBusyExample = errors.registryBusy(
  'an apply by service token "CI"',
  new Date('2026-03-01T12:00:00.000Z'),
  12,
);

/** 409 and 503 of a write that waited its turn for as long as it may; 422 of a body its thread could not read. */
const writeQueueResponses = {
  '409': errorResponse(
    'Another write of the organization’s registry has been in progress for longer than a write may wait ' +
      `(${DEFAULT_REGISTRY_WRITE_SETTINGS.maxWaitMs / 1000} s), or ${DEFAULT_REGISTRY_WRITE_SETTINGS.maxQueued} ` +
      'writes of the organization wait on this instance already; the message names the write in progress. ' +
      '`Retry-After`: about as long as it has run so far, 1 to 60 s. Nothing is written.',
    { ...rateLimitHeaders, 'Retry-After': ref('headers', 'Retry-After') },
    registryBusyExample,
  ),
  '422': errorResponse(
    'The body could not be read within the heap or the time of its reading thread (a document past what the ' +
      'reading limits admit); the message names the limit. Nothing is written.',
    rateLimitHeaders,
    errors.documentNotRead('304 MB of memory'),
    errors.documentNotRead(`${DEFAULT_DOCUMENT_READ_SETTINGS.timeBudgetMs / 1000} s`),
  ),
  '503': errorResponse(
    'The connections this instance’s registry writes may hold were all held for longer than a write may wait, ' +
      'or its document reading thread was busy for longer than a body may wait for it (or as many bodies ' +
      'waited already), or the write ran out of the time a write has (5 minutes, 15 for an upload’s apply) and ' +
      'was rolled back. Nothing is written. `Retry-After`: 1 to 60 s.',
    { ...rateLimitHeaders, 'Retry-After': ref('headers', 'Retry-After') },
    errors.writesBusy(1),
    errors.documentReadsBusy(4),
    errors.writeOutOfTime,
  ),
};

const writerForbidden = (description: string, ...more: ErrorResponse[]) =>
  errorResponse(
    `A signed-in member or viewer (not an admin or owner), a cross-site request, or a service token without the ` +
      `route's scope (\`Insufficient scope\`)${description}.`,
    rateLimitHeaders,
    errors.forbidden,
    errors.insufficientScope,
    ...more,
  );

/** The answers of a registry caller's read of one metric (GET /api/metrics/{id}/usage and /sources). */
const metricAdminResponses = (okResponse: unknown) => ({
  '200': okResponse,
  '400': errorResponse(
    'The id is not a UUID, or a query parameter was sent (the route takes none).',
    rateLimitHeaders,
    errors.invalidMetricId,
    errors.unknownQueryParameter('days', []),
  ),
  '401': ref('responses', 'WriterUnauthorized'),
  '403': writerForbidden(''),
  '404': errorResponse(
    'The caller’s organization has no metric with this id.',
    rateLimitHeaders,
    errors.metricNotFound,
  ),
  '429': ref('responses', 'RateLimited'),
  '500': ref('responses', 'InternalError'),
  '503': ref('responses', 'ServiceUnavailable'),
});

const bodyTooLarge = (limit: number) =>
  errorResponse(
    `The body is larger than ${Number.isInteger(limit / MiB) ? `${limit / MiB} MiB` : `${limit} bytes`}.`,
    rateLimitHeaders,
    writeRouteErrors.bodyTooLarge,
  );

const uploadIdParameter = {
  name: 'upload_id',
  in: 'path',
  required: true,
  description: 'The id `POST /api/registry/uploads` answered.',
  schema: { type: 'string', format: 'uuid' },
};
/** What the upload routes without a body answer alike: a query parameter (they take none), their callers, the service's own. */
const bareUploadResponses = (parameter: string) => ({
  '400': errorResponse(
    'A query parameter was sent (the route takes none).',
    rateLimitHeaders,
    errors.unknownQueryParameter(parameter, []),
  ),
  '401': ref('responses', 'WriterUnauthorized'),
  '403': writerForbidden(''),
  '429': ref('responses', 'RateLimited'),
  '500': ref('responses', 'InternalError'),
  '503': ref('responses', 'ServiceUnavailable'),
});
const uploadNotFound = errorResponse(
  'No open upload of this id in the caller’s organization (never opened, applied, deleted or expired).',
  rateLimitHeaders,
  errors.uploadNotFound,
);

const webhookIdParameter = { name: 'webhook_id', in: 'path', required: true, schema: { type: 'string' } };
const webhookNotFound = errorResponse(
  'No such endpoint in the active organization.',
  rateLimitHeaders,
  errors.webhookNotFound,
);

const flag = (name: string, description: string) =>
  queryParameter(name, `${description} \`true\` or \`1\`; \`false\`, \`0\` or absent: no. Any other value is 400.`, {
    type: 'string',
    enum: ['true', 'false', '1', '0'],
    default: 'false',
  });

const registryDescription =
  'Makes the organization’s registry match the document (docs/registry-document.md), in one transaction: a listed ' +
  'metric is created when its key is new and updated when any of its fields, versions, approvals or ' +
  'relationships differ (a field left out takes its default); versions, approvals and relationships of a listed ' +
  'metric are made to match its lists exactly. A metric the document does not list is kept (`absent`), or ' +
  'removed with `prune=true` (`removed`), with what hangs off it. A prune removing more than ' +
  `\`PRUNE_MAX_REMOVALS\` (${DEFAULT_PRUNE_MAX_REMOVALS}) metrics, or every metric of the organization, needs ` +
  '`allow_removals` of at least ' +
  'its count (400 otherwise, naming the metrics); a dry run needs none and answers the count ' +
  '(`allow_removals_required`). A removed metric is kept `CHANGES_RETENTION_DAYS`: a document listing its key ' +
  'again within them restores it (`restored`) with its id, validation evidence and discussions.\n\n' +
  'All or nothing: a document that breaks any rule writes nothing, and the 400 names the place of each problem. ' +
  'Idempotent: applying the same document again writes nothing (no new `updated_at`, ETag or ' +
  '`metrics_version`). Applies to one organization run one after the other, and readers see the registry ' +
  'before or after an apply, never in between. The answer is the plan: each metric with its result, and the ' +
  'totals; with `dry_run=true` the plan of what an apply would do, and nothing is written (drift check: ' +
  'anything but `unchanged` and `absent` is drift). `impact` lists, for each metric of the registry the plan ' +
  'removes, deprecates, supersedes or changes in definition, the metrics built on it (through their inputs) and ' +
  `the credentials that read it in the last ${USAGE_WINDOW_DAYS} days, as before the apply (docs/impact.md).\n\n` +
  `At most ${REGISTRY_BODY_LIMIT / MiB} MiB (this route's body limit, above the service's ` +
  `${DEFAULT_BODY_LIMIT / MiB} MiB) and, counted as the body is read, before anything is built from it: ` +
  `nesting of at most ${MAX_DEPTH} levels, at most ${MAX_DOCUMENT_METRICS} entries in any one list or object ` +
  `(so at most ${MAX_DOCUMENT_METRICS} metrics), at most ${MAX_JSON_DOCUMENT_NODES} values in all in JSON and ` +
  `${MAX_YAML_DOCUMENT_NODES} in YAML (which costs the server more to read; send JSON for the largest ` +
  'registries), each with a 400 naming its place. YAML is read as data only: anchors, aliases, merge keys ' +
  '(`<<`), explicit tags, duplicate keys and several documents in one stream are refused (400), never ' +
  'expanded; duplicate member names in JSON are refused too. The body must be UTF-8. Each text of the ' +
  'document has a length limit by field and holds no control characters but tab and line breaks (see the ' +
  'RegistryDocument schema); a dbt or OSI file is checked in the document it translates to, not in parts ' +
  'that are not imported.\n\n' +
  `${writeQueueDescription}\n\n` +
  `${writerDescription('registry:write')}`;

/** The body of PUT /api/registry: a registry document, or with `format=dbt|osi` a file of that tool. */
const registryBody = {
  anyOf: [
    schemaRef('RegistryDocument'),
    {
      type: 'object',
      title: 'dbt semantic manifest or OSI document',
      description:
        'With `format=dbt` or `format=osi` only: the tool’s own file, read leniently (unknown fields ignored); ' +
        'the registry document imported from it must then be valid. What an import may make is bounded ' +
        `(400 naming the metric past a bound): chains of input metrics at most ${MAX_DERIVED_DEPTH} deep; ` +
        `an expression inlining its inputs at most ${MAX_RENDERED_EXPRESSION} characters (past it, its input ` +
        `metrics are named by key); per metric at most ${MAX_SOURCE_REFS} tables, ${MAX_DIMENSIONS} dimensions ` +
        `and ${MAX_FILTERS} filters; the imported document at most ${MAX_IMPORTED_SIZE} characters; a ` +
        `METRIC_GOVERNANCE data string at most ${MAX_GOVERNANCE_DATA} characters and ${MAX_GOVERNANCE_DEPTH} levels.`,
    },
  ],
};

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
        description:
          'Scope `metrics:read` (or an Agent Contract key). Plain listing is by name, then id. Each item carries ' +
          '`trust`, the verdict as the contract computes it at the request, for a key that may read the contract ' +
          '(`canonical-metric-api:read` or `metrics:read`); `trust=` filters on the verdict as last evaluated (see ' +
          'the parameter). A page with `trust` costs no statement more than one without: the verdicts are read in ' +
          "the page's own statement. The ETag follows the organization's `metrics_version`, which every evaluated " +
          'verdict that changed moves: a verdict that time alone moved changes the tag with the next trust sweep, ' +
          'when it shows in the filter too.',
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
    '/api/v1/changes': {
      get: {
        operationId: 'listChanges',
        tags: ['Metrics'],
        summary: 'Follow the change feed',
        description:
          "Scope `metrics:read` (or an Agent Contract key); charged like the list route. The events of the caller's " +
          'organization after `after`, oldest first, as CloudEvents 1.0: every change an apply or validation ' +
          'evidence makes, and `metric.trust_changed` whenever a verdict changes, whatever caused it (the trust ' +
          'sweep finds those that time makes, `TRUST_SWEEP_INTERVAL_S`). Without `after`: from the oldest event ' +
          'kept. With `wait`, a request with nothing to answer waits until an event is committed (on any instance) ' +
          'or `wait` seconds pass, then answers the page (maybe empty). Events are kept `CHANGES_RETENTION_DAYS` ' +
          '(30); a cursor older than that is 410: resynchronize. `metric.validated` and `metric.trust_changed` ' +
          "(validation evidence, trust verdicts) need the contract route's scope (`canonical-metric-api:read` or " +
          '`metrics:read`): a key of `definition:read` alone reads the feed without them, its cursors moving past them.',
        security: bearer,
        parameters: [
          queryParameter(
            'after',
            'The `next_cursor` of an earlier answer (opaque). A cursor of another organization, one this service did not give or one past the latest event, is 400.',
            {
              type: 'string',
              maxLength: 64,
            },
          ),
          queryParameter('limit', `Events at most, 1 to ${MAX_CHANGES_LIMIT}; default ${DEFAULT_CHANGES_LIMIT}.`, {
            type: 'integer',
            minimum: 1,
            maximum: MAX_CHANGES_LIMIT,
            default: DEFAULT_CHANGES_LIMIT,
          }),
          queryParameter(
            'wait',
            `Long-poll: seconds to wait for an event when there is none, 0 to ${MAX_WAIT_SECONDS}; default 0.`,
            {
              type: 'integer',
              minimum: 0,
              maximum: MAX_WAIT_SECONDS,
              default: 0,
            },
          ),
          ref('parameters', 'serviceEnv'),
        ],
        responses: {
          '200': ok('A page of the feed.', schemaRef('ChangeFeed'), changeFeedExample, {
            ...rateLimitHeaders,
            'Cache-Control': {
              description: 'A page of the feed is never stored: the next one may differ.',
              required: true,
              schema: { type: 'string', enum: ['no-store'] },
            },
          }),
          '400': errorResponse(
            'A malformed cursor, a cursor of another organization or past its latest event, or `limit` or `wait` out of range.',
            rateLimitHeaders,
            badRequest('Invalid cursor'),
            badRequest(`limit must be an integer from 1 to ${MAX_CHANGES_LIMIT}`),
            badRequest(`wait must be an integer from 0 to ${MAX_WAIT_SECONDS}`),
          ),
          ...readErrors,
          '410': errorResponse(
            'The events after the cursor are no longer kept.',
            rateLimitHeaders,
            errors.cursorExpired(new ExpiredCursorError().message),
          ),
          '500': ref('responses', 'InternalError'),
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
    '/api/v1/metrics/{id}/lineage': {
      get: {
        operationId: 'getMetricLineage',
        tags: ['Metrics'],
        summary: 'Lineage of a metric',
        description:
          'Scope `metrics:read` (or an Agent Contract key); charged like the detail. The metrics this one is built ' +
          'from (`upstream`: its inputs, theirs, ...) or that are built on it (`downstream`), to `depth`, a page ' +
          'at a time: each metric once, at the least depth it is found, with the edge it was reached by there, by ' +
          `depth, then id. The walk follows at most ${MAX_LINEAGE_STEPS} edges, nearer ones first; past that ` +
          '`truncated` is true and metrics further away may be missing. Verdicts are the announced ones ' +
          '(docs/lineage.md). No conditional request: a lineage is made of many metrics.',
        security: bearer,
        parameters: [
          ref('parameters', 'metricId'),
          queryParameter(
            'direction',
            'upstream (default): what the metric is built from; downstream: what is built on it.',
            {
              type: 'string',
              enum: [...LINEAGE_DIRECTIONS],
              default: 'upstream',
            },
          ),
          queryParameter('depth', `Edges to walk, 1 to ${MAX_LINEAGE_DEPTH}; default ${DEFAULT_LINEAGE_DEPTH}.`, {
            type: 'integer',
            minimum: 1,
            maximum: MAX_LINEAGE_DEPTH,
            default: DEFAULT_LINEAGE_DEPTH,
          }),
          queryParameter('limit', `Metrics a page, 1 to ${MAX_LINEAGE_LIMIT}; default ${DEFAULT_LINEAGE_LIMIT}.`, {
            type: 'integer',
            minimum: 1,
            maximum: MAX_LINEAGE_LIMIT,
            default: DEFAULT_LINEAGE_LIMIT,
          }),
          queryParameter('after', 'The `next_cursor` of the previous page (opaque); anything else is 400.', {
            type: 'string',
            maxLength: 64,
          }),
          ref('parameters', 'serviceEnv'),
        ],
        responses: {
          '200': ok('A page of the lineage.', schemaRef('MetricLineage'), lineageExample, {
            ...rateLimitHeaders,
            'Cache-Control': {
              description: 'A lineage is never stored: the metrics it is made of change on their own.',
              required: true,
              schema: { type: 'string', enum: ['no-store'] },
            },
          }),
          '400': errorResponse(
            'An id that is no UUID, or a query parameter out of its values.',
            rateLimitHeaders,
            errors.invalidMetricId,
            lineageErrors.direction,
            lineageErrors.depth,
            lineageErrors.limit('limit'),
            lineageErrors.after('after'),
          ),
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
            badRequest('name must not be empty'),
            badRequest('scopes must be exactly canonical-metric-api:read and definition:read'),
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
    '/api/registry': {
      get: {
        operationId: 'exportRegistry',
        tags: ['Registry'],
        summary: 'Export the registry',
        description:
          "The caller's organization's registry as a registry document (`format=registry`: every field of every " +
          'metric, versions, approvals by approver email, relationships and inputs by key, and the trust policy ' +
          'when set) or an Apache Ossie 0.2.0.dev0 document (`format=osi`: one semantic model per project, ' +
          'governance in each metric’s `METRIC_GOVERNANCE` extension). Applied back (`PUT /api/registry`, with ' +
          '`format=osi` for OSI), either plans nothing. A registry document is streamed a page of metrics at a ' +
          `time; an organization of more than ${MAX_DOCUMENT_METRICS} metrics (what one document lists) is 422: ` +
          'export it by `source`, or in parts (`part=1`, `2`, ...; `X-Registry-Parts` says how many), each a ' +
          'document of an upload in parts (docs/registry.md).\n\n' +
          writerDescription('registry:write'),
        security: writer('registry:write'),
        parameters: [
          queryParameter('format', 'What to write: a registry document or an OSI document. Any other value is 400.', {
            type: 'string',
            enum: [...EXPORT_FORMATS],
            default: 'registry',
          }),
          queryParameter(
            'source',
            'Only the metrics this source created (a metric’s `source`: `registry` for a document, an importer’s ' +
              `source for an import). 1 to ${MAX_EXPORT_SOURCE_LENGTH} characters.`,
            { type: 'string', minLength: 1, maxLength: MAX_EXPORT_SOURCE_LENGTH },
          ),
          queryParameter(
            'part',
            `With \`format=registry\`: only the N-th ${MAX_DOCUMENT_METRICS} metrics in key order, the trust policy in ` +
              'the first part only, so that the parts are the documents of an upload in parts ' +
              '(`PUT /api/registry/uploads/{upload_id}/parts/{part}`). Parts are cut when each is read: a ' +
              'registry changed between the requests may move a key across a boundary (into two parts, or ' +
              'none: a prune would then remove it), so export the parts while nothing else writes. Past the ' +
              'last part, or not a whole number from 1, is 400.',
            { type: 'integer', minimum: 1 },
          ),
        ],
        responses: {
          '200': {
            description: 'The document (not wrapped in `data`): apply it back as it is.',
            headers: {
              ...rateLimitHeaders,
              'X-Registry-Parts': {
                description: `With \`format=registry\`: the parts of ${MAX_DOCUMENT_METRICS} metrics the export is in (\`part=\`).`,
                schema: { type: 'integer', minimum: 1 },
              },
            },
            content: { 'application/json': { schema: { type: 'object', additionalProperties: true } } },
          },
          '400': errorResponse(
            'A bad `format`, `source` or `part`, or an unknown query parameter.',
            rateLimitHeaders,
            badRequest('format must be one of registry, osi'),
            errors.invalidParameter('part', 'a whole number from 1 to 5'),
            errors.unknownQueryParameter('page', [...EXPORT_PARAMETERS]),
          ),
          '401': ref('responses', 'WriterUnauthorized'),
          '403': writerForbidden(''),
          '422': errorResponse(
            `More than ${MAX_DOCUMENT_METRICS} metrics to export.`,
            rateLimitHeaders,
            errors.exportTooLarge(MAX_DOCUMENT_METRICS + 1, 2),
          ),
          '429': ref('responses', 'RateLimited'),
          '500': ref('responses', 'InternalError'),
          '503': ref('responses', 'ServiceUnavailable'),
        },
      },
      put: {
        operationId: 'applyRegistry',
        tags: ['Registry'],
        summary: 'Apply a registry document',
        description: registryDescription,
        security: writer('registry:write'),
        parameters: [
          flag('dry_run', 'Plan only: write nothing and answer what an apply would do.'),
          flag(
            'prune',
            'Remove the metrics of the applying source that the document does not list; other sources’ metrics stay (`absent`).',
          ),
          flag(
            'check',
            'Plan only, as dry_run, and answer `in_sync`: whether the registry matches the document. For CI: a conflict ' +
              'with another source is 400 here even without an apply.',
          ),
          flag(
            'force_conflicts',
            'Take over the fields the document sets that another source owns (a conflict is else refused, 400).',
          ),
          queryParameter(
            'source',
            'The source the apply is made as (docs/registry.md#sources): lowercase letters, digits, `_`, `.`, `-` ' +
              "and `:`, at most 128 characters. Default: the document's `source` (`registry`), or the importer's " +
              '(`dbt:<project>`, `osi:<model>`). Another spelling is 400.',
            { type: 'string', pattern: '^[a-z0-9][a-z0-9_.:-]*$', maxLength: 128 },
          ),
          queryParameter(
            'allow_removals',
            'With `prune=true`: how many removals the request accepts, as the reviewed plan (a dry run) counted ' +
              'them. Needed when the plan removes more than `PRUNE_MAX_REMOVALS` metrics or every metric of the ' +
              'organization; when given, a plan removing more than it is refused, whatever their number. A whole ' +
              'number; any other value is 400.',
            { type: 'integer', minimum: 0 },
          ),
          queryParameter(
            'format',
            'What the body is: `registry`, a registry document; `dbt`, a dbt semantic manifest ' +
              '(`target/semantic_manifest.json`); `osi`, an Open Semantic Interchange document. A dbt or OSI file ' +
              'is imported into a registry document for the caller’s organization (governance from each ' +
              'metric’s `config.meta.governance`, or its `METRIC_GOVERNANCE` custom extension), then validated ' +
              'and applied like one. Any other value is 400.',
            { type: 'string', enum: [...SOURCE_FORMATS], default: 'registry' },
          ),
          queryParameter(
            'default_lifecycle',
            'With `format=dbt` or `osi`: the lifecycle of imported metrics whose governance sets none (else ' +
              "the document's default, DRAFT). Any other value is 400.",
            { type: 'string', enum: Object.values(LifecycleStatus) },
          ),
        ],
        requestBody: {
          required: true,
          description:
            'The document as JSON, or as YAML (`application/yaml`; `application/x-yaml`, `text/yaml` and ' +
            '`text/x-yaml` are read as YAML too). For example:\n\n```yaml\n' +
            registryDocumentYaml +
            '```',
          content: {
            'application/json': {
              schema: registryBody,
              examples: { default: { value: registryDocumentExample } },
            },
            'application/yaml': {
              schema: registryBody,
              // An example's value is the data (tools write it out as YAML); the YAML text is in the description.
              examples: { default: { summary: 'The same document, sent as YAML', value: registryDocumentExample } },
            },
          },
        },
        responses: {
          '200': {
            description: 'The plan: what the apply did, or with `dry_run=true` what it would do.',
            headers: rateLimitHeaders,
            ...json(schemaRef('RegistryPlanResponse'), {
              default: { summary: 'An apply that changed the registry', value: registryPlanExample },
              noChange: { summary: 'The same document again: nothing written', value: registryNoChangeExample },
              dryRun: { summary: 'dry_run=true&prune=true', value: registryDryRunExample },
            }),
          },
          '400': problemsResponse(
            'The body is not valid JSON or YAML (or YAML beyond plain data), a dbt or OSI file cannot be ' +
              'imported, the document breaks a rule (every problem is reported, each naming its place), a ' +
              'query parameter has a value it does not take, or the route takes no such query parameter. ' +
              'Nothing is written.',
            rateLimitHeaders,
            documentProblems([
              'metrics[0].lifecycle_status (line 11, column 23): Invalid option: expected one of ' +
                '"DRAFT"|"VALIDATED"|"CANDIDATE"|"APPROVED"|"RELEASED"|"DEPRECATED"',
              'metrics[1].colour (line 39, column 13): unknown field "colour"',
            ]),
            documentProblems([
              'metrics[0].approvals[0].approver (line 28, column 19): bob@acme.example is not a member of this ' +
                'organization',
            ]),
            documentProblems(['metrics[1].key: duplicate key "net_revenue_retention": also metrics[0]']),
            documentProblems(['line 3, column 3: anchors (&d) are not allowed']),
            badRequest('dry_run must be true or false'),
            badRequest(`format must be one of ${SOURCE_FORMATS.join(', ')}`),
            errors.unknownQueryParameter('check', APPLY_PARAMETERS),
            errors.removalsNotAllowed(
              new RemovalsNotAllowed(
                ['arr_old', 'net_revenue_retention'],
                undefined,
                'every_metric',
                DEFAULT_PRUNE_MAX_REMOVALS,
              ).lines(confirmRemovals),
            ),
          ),
          '401': ref('responses', 'WriterUnauthorized'),
          '403': writerForbidden(
            ", or a document whose `organization` is not the caller's",
            writeRouteErrors.otherOrganization,
          ),
          '413': bodyTooLarge(REGISTRY_BODY_LIMIT),
          '415': errorResponse(
            'The body is neither JSON nor YAML (by its Content-Type).',
            rateLimitHeaders,
            writeRouteErrors.registryContentType,
          ),
          ...writeQueueResponses,
          '429': ref('responses', 'RateLimited'),
          '500': ref('responses', 'InternalError'),
          '503': ref('responses', 'ServiceUnavailable'),
        },
      },
    },
    '/api/registry/uploads': {
      post: {
        operationId: 'createRegistryUpload',
        tags: ['Registry'],
        summary: 'Open an upload in parts',
        description:
          `A registry of more metrics than one document lists (${MAX_DOCUMENT_METRICS}) is sent as several ` +
          'registry documents, the parts of an upload, then applied whole in one transaction ' +
          '(`POST /api/registry/uploads/{upload_id}/apply`; docs/registry.md, "Uploads in parts"). This opens one: ' +
          `an organization keeps at most ${MAX_OPEN_UPLOADS} open, each for ${UPLOAD_TTL_MS / 3_600_000} hours ` +
          '(expired ones are removed by the sweep, or when the next is opened). No body and no query parameter.\n\n' +
          writerDescription('registry:write'),
        security: writer('registry:write'),
        responses: {
          '201': {
            description: 'The upload, without parts yet.',
            headers: rateLimitHeaders,
            ...json(schemaRef('RegistryUploadResponse')),
          },
          ...bareUploadResponses('prune'),
          '409': errorResponse(
            `The organization has ${MAX_OPEN_UPLOADS} uploads open: apply or delete one first.`,
            rateLimitHeaders,
            errors.tooManyUploads(MAX_OPEN_UPLOADS),
          ),
        },
      },
    },
    '/api/registry/uploads/{upload_id}': {
      get: {
        operationId: 'getRegistryUpload',
        tags: ['Registry'],
        summary: 'What an upload holds',
        description: `Its parts so far, each with its source and size.\n\n${writerDescription('registry:write')}`,
        security: writer('registry:write'),
        parameters: [uploadIdParameter],
        responses: {
          '200': {
            description: 'The upload.',
            headers: rateLimitHeaders,
            ...json(schemaRef('RegistryUploadResponse')),
          },
          ...bareUploadResponses('part'),
          '404': uploadNotFound,
        },
      },
      delete: {
        operationId: 'deleteRegistryUpload',
        tags: ['Registry'],
        summary: 'Drop an upload unapplied',
        description: `Removes the upload and its parts; the registry is untouched.\n\n${writerDescription('registry:write')}`,
        security: writer('registry:write'),
        parameters: [uploadIdParameter],
        responses: {
          '204': { description: 'Dropped.', headers: rateLimitHeaders },
          ...bareUploadResponses('force'),
          '404': uploadNotFound,
        },
      },
    },
    '/api/registry/uploads/{upload_id}/parts/{part}': {
      put: {
        operationId: 'putRegistryUploadPart',
        tags: ['Registry'],
        summary: 'Send a part of an upload',
        description:
          'A registry document, read and checked as `PUT /api/registry` reads one (its limits, its rules, each ' +
          'problem at its place), and kept as part `part` of the upload; sent again under its number, it ' +
          'replaces the part. What one document cannot see is checked across the parts: a key is listed in one ' +
          'part only (`metrics[1].key: duplicate key "b": also parts[1].metrics[0]`), the parts are one ' +
          "source's, and one part at most sets `trust_policy`. References to other parts' metrics (relationship " +
          `targets, inputs) are checked when the upload is applied. An upload lists at most ${MAX_UPLOAD_METRICS} ` +
          'metrics over all its parts. Nothing is written to the registry, but a part takes its turn with the ' +
          'organization’s registry writes.\n\n' +
          `${writeQueueDescription}\n\n` +
          writerDescription('registry:write'),
        security: writer('registry:write'),
        parameters: [
          uploadIdParameter,
          {
            name: 'part',
            in: 'path',
            required: true,
            description: `The part's number, 1 to ${MAX_UPLOAD_PARTS}; the parts are applied in their order.`,
            schema: { type: 'integer', minimum: 1, maximum: MAX_UPLOAD_PARTS },
          },
        ],
        requestBody: {
          required: true,
          description: 'A registry document as JSON or YAML, as `PUT /api/registry` takes one.',
          content: {
            'application/json': { schema: schemaRef('RegistryDocument') },
            'application/yaml': { schema: schemaRef('RegistryDocument') },
          },
        },
        responses: {
          '200': {
            description: 'The upload with the part.',
            headers: rateLimitHeaders,
            ...json(schemaRef('RegistryUploadResponse')),
          },
          '400': problemsResponse(
            'The document breaks a rule of its own or across the parts, the part number is not one, or a query ' +
              'parameter was sent. Nothing is kept.',
            rateLimitHeaders,
            documentProblems(['metrics[1].key: duplicate key "b": also parts[1].metrics[0]']),
            documentProblems(['trust_policy: part 2 sets the trust policy: one part of an upload may']),
            errors.invalidParameter('part', `a whole number from 1 to ${MAX_UPLOAD_PARTS}`),
          ),
          '401': ref('responses', 'WriterUnauthorized'),
          '403': writerForbidden(
            ", or a document whose `organization` is not the caller's",
            writeRouteErrors.otherOrganization,
          ),
          '404': uploadNotFound,
          '409': writeQueueResponses['409'],
          '413': errorResponse(
            `The body is larger than ${REGISTRY_BODY_LIMIT / MiB} MiB, or the upload would list more than ` +
              `${MAX_UPLOAD_METRICS} metrics or hold more than ${MAX_UPLOAD_BYTES / MiB} MiB of part bodies.`,
            rateLimitHeaders,
            writeRouteErrors.bodyTooLarge,
            errors.uploadTooLarge(MAX_UPLOAD_METRICS),
            errors.uploadTooManyBytes(MAX_UPLOAD_BYTES / MiB),
          ),
          '415': errorResponse(
            'The body is neither JSON nor YAML (by its Content-Type).',
            rateLimitHeaders,
            writeRouteErrors.registryContentType,
          ),
          '422': writeQueueResponses['422'],
          '429': ref('responses', 'RateLimited'),
          '500': ref('responses', 'InternalError'),
          '503': writeQueueResponses['503'],
        },
      },
    },
    '/api/registry/uploads/{upload_id}/apply': {
      post: {
        operationId: 'applyRegistryUpload',
        tags: ['Registry'],
        summary: 'Apply an upload',
        description:
          'Plans and applies every part of the upload as one registry document of all their metrics, as ' +
          '`PUT /api/registry` applies one: one transaction, all or nothing, the same plan, rules, events and ' +
          'answer (with `upload_id`). A part may name the metrics of any other (relationship targets, inputs); ' +
          'a prune removes the metrics of the source that no part lists. Problems are reported at their part ' +
          '(`parts[2].metrics[0].inputs[0]: no metric with key "x" in the document or the registry`), at most ' +
          `${MAX_UPLOAD_PROBLEMS}. Applied, the upload is removed; refused, or with \`dry_run\` or \`check\`, it ` +
          'is kept. No body.\n\n' +
          `${writeQueueDescription}\n\n` +
          writerDescription('registry:write'),
        security: writer('registry:write'),
        parameters: [
          uploadIdParameter,
          flag('dry_run', 'Plan only: write nothing and answer what an apply would do.'),
          flag('prune', 'Remove the metrics of the applying source that no part lists.'),
          flag('check', 'Plan only, as dry_run, and answer `in_sync`.'),
          flag('force_conflicts', 'Take over the fields the parts set that another source owns.'),
          queryParameter('source', "The source the upload is applied as, instead of its parts' `source`.", {
            type: 'string',
            pattern: '^[a-z0-9][a-z0-9_.:-]*$',
            maxLength: 128,
          }),
          queryParameter('allow_removals', 'With `prune=true`: how many removals the request accepts.', {
            type: 'integer',
            minimum: 0,
          }),
        ],
        responses: {
          '200': {
            description: 'The plan: what the apply did, or with `dry_run=true` what it would do.',
            headers: rateLimitHeaders,
            ...json(schemaRef('RegistryUploadPlanResponse')),
          },
          '400': problemsResponse(
            'The upload has no parts, breaks a rule across its parts (a reference to no metric, inputs in a ' +
              'cycle, an approver who is not a member, a conflict), a prune needs `allow_removals`, or a query ' +
              'parameter is not one the route takes. Nothing is written; the upload is kept.',
            rateLimitHeaders,
            documentProblems([
              'parts[2].metrics[1].inputs[0]: no metric with key "nowhere" in the document or the registry',
              'parts[2].metrics[0].inputs[0]: inputs form a cycle: b -> a -> b',
            ]),
            documentProblems(['(document): the upload has no parts yet']),
            errors.unknownQueryParameter('format', UPLOAD_APPLY_PARAMETERS),
          ),
          '401': ref('responses', 'WriterUnauthorized'),
          '403': writerForbidden(''),
          '404': uploadNotFound,
          '409': writeQueueResponses['409'],
          '429': ref('responses', 'RateLimited'),
          '500': ref('responses', 'InternalError'),
          '503': writeQueueResponses['503'],
        },
      },
    },
    '/api/validations': {
      post: {
        operationId: 'recordValidations',
        tags: ['Registry'],
        summary: 'Record validation evidence',
        description:
          `Results of validation runs (a warehouse test of a metric passed or failed), at most ` +
          `${MAX_VALIDATION_RESULTS} a request (counted as the body is read, before anything is built from it) ` +
          `and ${Math.ceil(VALIDATIONS_BODY_LIMIT / MiB)} MiB (a maximal batch: every result at its bounds, ` +
          `\`details\` ${MAX_VALIDATION_DETAILS} characters, \`source\` ${MAX_VALIDATION_SOURCE}, ` +
          `\`metric_key\` ${MAX_VALIDATION_METRIC_KEY}, in UTF-8). \`ran_at\` is from ${EARLIEST_YEAR} to ` +
          `${LATEST_YEAR} and at most ${MAX_VALIDATION_FUTURE_MS / 60_000} minutes ahead of the server's clock; ` +
          'texts hold no control characters but tab and line breaks; the body is UTF-8 JSON without duplicate ' +
          'member names. Recorded all or nothing: one ' +
          'unknown `metric_key` and nothing is recorded. A result already recorded (same metric, `ran_at` and ' +
          '`source`) is not recorded twice. The contract’s `last_validated_at` and the trust verdict follow at once: ' +
          'a metric whose latest validation failed is `use_with_caution` with the reason `failed_validation`.\n\n' +
          `${writeQueueDescription}\n\n` +
          writerDescription('validations:write'),
        security: writer('validations:write'),
        requestBody: {
          required: true,
          ...json(schemaRef('ValidationResultsRequest'), { default: { value: validationsRequestExample } }),
        },
        responses: {
          '200': ok(
            'How many results were recorded, and how many were there already.',
            schemaRef('RecordedValidationsResponse'),
            recordedValidationsExample,
          ),
          '400': problemsResponse(
            'The body is not UTF-8 JSON or breaks a limit, or a result is not valid or names no metric of the ' +
              'organization (every problem is reported, each naming its place), or a query parameter was sent (the ' +
              'route takes none). Nothing is recorded.',
            rateLimitHeaders,
            documentProblems([
              'results[0].metric_key: no metric with key "net_revenue_retentoin" in this organization',
            ]),
            documentProblems([
              'results[0].status: Invalid option: expected one of "passed"|"failed"',
              'results[1].ran_at: expected an ISO 8601 timestamp, e.g. 2026-01-31T09:00:00Z',
            ]),
            errors.unknownQueryParameter('dry_run', []),
          ),
          '401': ref('responses', 'WriterUnauthorized'),
          '403': writerForbidden(''),
          '413': bodyTooLarge(VALIDATIONS_BODY_LIMIT),
          '415': errorResponse('The body is not application/json.', rateLimitHeaders, errors.jsonContentTypeRequired),
          ...writeQueueResponses,
          '429': ref('responses', 'RateLimited'),
          '500': ref('responses', 'InternalError'),
          '503': ref('responses', 'ServiceUnavailable'),
        },
      },
    },
    '/api/validations/dbt': {
      post: {
        operationId: 'importDbtValidations',
        tags: ['Registry'],
        summary: "Record a dbt run's test results as validation evidence",
        description:
          "dbt's `target/run_results.json` and `target/manifest.json` of one run, as dbt wrote them, in a JSON body " +
          `of at most ${DBT_EVIDENCE_BODY_LIMIT / MiB} MiB (a larger project uses the CLI's \`validation:import\`). ` +
          'A test counts for a metric when it is attached to a model behind a semantic model the metric reads, its ' +
          'input metrics’ included (a ratio or derived metric takes its inputs’ models); tests on models upstream ' +
          'of those, or on models no metric reads, count for none. Any failed or errored test makes the metric’s ' +
          'result `failed`, naming the tests in `details`; else it is `passed` (a warning is named in `details`, ' +
          'not a failure); skipped tests are no evidence; a metric no counted test is on gets no result. `ran_at` ' +
          "is the run's `metadata.generated_at`, `source` is `dbt`; metrics are matched by key (the dbt metric's " +
          'name), and those the organization lacks are reported as `unmatched`. Recorded as POST /api/validations ' +
          'records (one transaction, events, trust verdicts of the metrics and their dependents); the same run ' +
          'imported again records nothing (docs/registry.md, "Validation evidence from dbt").\n\n' +
          `${writeQueueDescription}\n\n` +
          writerDescription('validations:write'),
        security: writer('validations:write'),
        requestBody: { required: true, ...json(schemaRef('DbtEvidenceRequest')) },
        responses: {
          '200': ok(
            'Each metric of the manifest: its result, the tests counted and what became of it.',
            schemaRef('DbtValidationsResponse'),
            dbtValidationsExample,
          ),
          '400': problemsResponse(
            'The body is not UTF-8 JSON of `{ run_results, manifest }`, breaks a limit, or a file is not what dbt ' +
              'writes (every problem is reported, each naming its place); or a query parameter was sent. Nothing ' +
              'is recorded.',
            rateLimitHeaders,
            documentProblems(['run_results.results[3].status: expected a string']),
            documentProblems([
              'manifest.semantic_models: this looks like target/semantic_manifest.json, which has no tests; expected ' +
                'dbt\'s target/manifest.json (an object with "nodes", "semantic_models" and "metrics" objects keyed by unique_id)',
            ]),
          ),
          '401': ref('responses', 'WriterUnauthorized'),
          '403': writerForbidden(''),
          '413': bodyTooLarge(DBT_EVIDENCE_BODY_LIMIT),
          '415': errorResponse('The body is not application/json.', rateLimitHeaders, errors.jsonContentTypeRequired),
          ...writeQueueResponses,
          '429': ref('responses', 'RateLimited'),
          '500': ref('responses', 'InternalError'),
          '503': ref('responses', 'ServiceUnavailable'),
        },
      },
    },
    '/api/metrics/{id}/usage': {
      get: {
        operationId: 'getMetricUsage',
        tags: ['Registry'],
        summary: 'Who read a metric lately',
        description:
          `The reads of one metric of the caller's organization over the last ${USAGE_WINDOW_DAYS} UTC days (today ` +
          'included), per credential (most reads first) and per day. A read is a single-metric read by an API ' +
          'key: the detail and the contract (a 304 included), GraphQL `metric`, `metricByKey` and `metricByName`, ' +
          'MCP `get_metric`, `get_metric_contract` and the match of `resolve_metric`; lists and searches are not ' +
          'reads of one metric, and sessions are not counted. Counts are kept in memory and written every ' +
          `${USAGE_FLUSH_INTERVAL_MS / 1000} s by each instance: this instance's are written before answering, ` +
          "another's may be that much behind; counts an instance had not written when it stopped abruptly are " +
          `lost. Kept ${USAGE_RETENTION_DAYS} days (docs/impact.md).\n\n` +
          writerDescription('registry:write'),
        security: writer('registry:write'),
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
        responses: metricAdminResponses(
          ok('The metric’s recent usage.', schemaRef('MetricUsageResponse'), metricUsageExample),
        ),
      },
    },
    '/api/metrics/{id}/sources': {
      get: {
        operationId: 'getMetricSources',
        tags: ['Registry'],
        summary: 'Which source owns which fields of a metric',
        description:
          'The source that created the metric (prune removes it only when that source applies) and, for each ' +
          'field a source set, that source: a source that does not set a field leaves it to its owner, and a ' +
          'document setting a field another source owns is a conflict (docs/registry.md#sources). A field not ' +
          'listed belongs to the creating source.\n\n' +
          writerDescription('registry:write'),
        security: writer('registry:write'),
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
        responses: metricAdminResponses(
          ok('The metric’s sources.', schemaRef('MetricSourcesResponse'), metricSourcesExample),
        ),
      },
    },
    '/api/service-tokens': {
      post: {
        operationId: 'createServiceToken',
        tags: ['Service tokens'],
        summary: 'Create a service token',
        description:
          'Signed-in admin or owner. A token for automation (CI applying the registry, posting validation ' +
          'evidence): `cls_` and 40 lowercase hexadecimal characters, stored hashed, returned this once. It is ' +
          'accepted only by the write routes, with the scopes it holds.',
        security: session,
        requestBody: {
          required: true,
          ...json(schemaRef('CreateServiceTokenRequest'), { default: { value: createServiceTokenRequestExample } }),
        },
        responses: {
          '201': ok(
            'The new token with its secret.',
            schemaRef('CreatedServiceTokenResponse'),
            createdServiceTokenExample,
          ),
          '400': errorResponse(
            'The body is not valid; the message says why.',
            rateLimitHeaders,
            badRequest('name must not be empty'),
            badRequest(`scopes must be one or more of ${WRITE_SCOPES.join(', ')} (got: metrics:read)`),
          ),
          ...adminErrors,
          '415': errorResponse('The body is not application/json.', rateLimitHeaders, errors.jsonContentTypeRequired),
        },
      },
      get: {
        operationId: 'listServiceTokens',
        tags: ['Service tokens'],
        summary: 'List the organization’s service tokens',
        description: 'Signed-in admin or owner; newest first; never a secret.',
        security: session,
        responses: {
          '200': ok('The tokens.', schemaRef('ServiceTokenListResponse'), serviceTokenListExample),
          ...adminErrors,
        },
      },
    },
    '/api/service-tokens/{token_id}': {
      delete: {
        operationId: 'revokeServiceToken',
        tags: ['Service tokens'],
        summary: 'Revoke a service token',
        description:
          'Signed-in admin or owner. Idempotent: an already revoked token keeps its revoked_at. A revoked token ' +
          'is refused at once (401 `API key has been revoked`).',
        security: session,
        parameters: [{ name: 'token_id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          '200': ok('The revoked token.', schemaRef('RevokedServiceTokenResponse'), revokedServiceTokenExample),
          ...adminErrors,
          '404': errorResponse(
            'No such token in the active organization.',
            rateLimitHeaders,
            errors.serviceTokenNotFound,
          ),
        },
      },
    },
    '/api/webhooks': {
      post: {
        operationId: 'createWebhook',
        tags: ['Webhooks'],
        summary: 'Create a webhook endpoint',
        description:
          'Signed-in admin or owner. The events of the organization committed from now on are POSTed to `url`, ' +
          'in order, signed as Standard Webhooks specify (docs/webhooks.md). The secret is returned this once.',
        security: session,
        requestBody: {
          required: true,
          ...json(schemaRef('CreateWebhookRequest'), { default: { value: createWebhookRequestExample } }),
        },
        responses: {
          '201': ok('The new endpoint with its secret.', schemaRef('CreatedWebhookResponse'), createdWebhookExample),
          '400': errorResponse(
            'The body is not valid, or the URL is refused; the message says why.',
            rateLimitHeaders,
            badRequest('url must be an https:// URL'),
            badRequest(
              'url host 127.0.0.1 resolves to 127.0.0.1, which is not a public address (loopback, private, ' +
                'link-local, multicast and other special-purpose addresses are refused)',
            ),
            badRequest('types must name at least one event type (leave it out for every type)'),
          ),
          ...adminErrors,
          '409': errorResponse(
            'The organization has as many endpoints as it may.',
            rateLimitHeaders,
            errors.tooManyWebhooks(MAX_WEBHOOKS_PER_ORGANIZATION),
          ),
          '413': errorResponse('The body is larger than 16 KiB.', rateLimitHeaders, errors.bodyTooLarge),
          '415': errorResponse('The body is not application/json.', rateLimitHeaders, errors.jsonContentTypeRequired),
        },
      },
      get: {
        operationId: 'listWebhooks',
        tags: ['Webhooks'],
        summary: 'List the organization’s webhook endpoints',
        description: 'Signed-in admin or owner; oldest first; their state and last attempt; never a secret.',
        security: session,
        responses: {
          '200': ok('The endpoints.', schemaRef('WebhookListResponse'), webhookListExample),
          ...adminErrors,
        },
      },
    },
    '/api/webhooks/{webhook_id}': {
      delete: {
        operationId: 'deleteWebhook',
        tags: ['Webhooks'],
        summary: 'Delete a webhook endpoint',
        description: 'Signed-in admin or owner. Nothing more is sent to it.',
        security: session,
        parameters: [webhookIdParameter],
        responses: {
          '200': ok('The endpoint is deleted.', schemaRef('DeletedWebhookResponse'), deletedWebhookExample),
          ...adminErrors,
          '404': webhookNotFound,
        },
      },
    },
    '/api/webhooks/{webhook_id}/deliveries': {
      get: {
        operationId: 'listWebhookDeliveries',
        tags: ['Webhooks'],
        summary: 'The latest delivery attempts of an endpoint',
        description: 'Signed-in admin or owner; the latest 100 attempts, newest first.',
        security: session,
        parameters: [webhookIdParameter],
        responses: {
          '200': ok('The attempts.', schemaRef('WebhookDeliveriesResponse'), webhookDeliveriesExample),
          ...adminErrors,
          '404': webhookNotFound,
        },
      },
    },
    '/api/webhooks/{webhook_id}/enable': {
      post: {
        operationId: 'enableWebhook',
        tags: ['Webhooks'],
        summary: 'Enable a disabled endpoint again',
        description:
          'Signed-in admin or owner. A disabled endpoint (failing for `WEBHOOK_DISABLE_AFTER`) is enabled again: ' +
          'its failures are forgotten and delivery resumes after the last event it got, or after the oldest event ' +
          'kept when retention removed some since (`skipped_expired_events`; the feed cannot give them either). ' +
          'An enabled endpoint is left as it is (`enabled: false`). Send `{}` as the body.',
        security: session,
        parameters: [webhookIdParameter],
        responses: {
          '200': ok('What was done.', schemaRef('EnabledWebhookResponse'), {
            data: { id: '5f0c9a1e-2b3d-4c5e-8f70-1a2b3c4d5e6f', enabled: true, skipped_expired_events: false },
          }),
          ...adminErrors,
          '404': webhookNotFound,
          '415': errorResponse('The body is not application/json.', rateLimitHeaders, errors.jsonContentTypeRequired),
        },
      },
    },
    '/api/webhooks/{webhook_id}/test': {
      post: {
        operationId: 'testWebhook',
        tags: ['Webhooks'],
        summary: 'Send a test event to an endpoint',
        description:
          'Signed-in admin or owner. Sends a signed `webhook.test` event now, once (no retry, also to a disabled ' +
          'endpoint), and answers how it went; the attempt is listed with the others. Send `{}` as the body.',
        security: session,
        parameters: [webhookIdParameter],
        responses: {
          '200': ok(
            'The attempt’s outcome (also when it failed).',
            schemaRef('WebhookTestResponse'),
            webhookTestExample,
          ),
          ...adminErrors,
          '404': webhookNotFound,
          '415': errorResponse('The body is not application/json.', rateLimitHeaders, errors.jsonContentTypeRequired),
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
  const paths = { ...buildPaths(), ...discussionPaths() };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Metric Governance API',
      version: 'v1',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      description:
        'Governed metric context (definitions, lifecycle status, approved versions, curated discussion notes) ' +
        'for BI tools, AI agents and CI checks. Read routes take `Authorization: Bearer <API key>`; key and ' +
        'service token administration take a signed-in `session` cookie; the registry’s write routes take a ' +
        '`Bearer <service token>` or the session of an admin or owner; the discussion routes a member’s session or ' +
        'a service token with `discussions:write`. v1 responses may gain fields: ignore unknown ones.',
    },
    servers: [{ url: '/' }],
    tags: [
      { name: 'Metrics', description: 'Public read routes (API key).' },
      { name: 'API keys', description: 'Key administration (signed-in admin or owner).' },
      {
        name: 'Registry',
        description:
          'The registry as code: apply a registry document, record validation evidence (service token or ' +
          'signed-in admin or owner).',
      },
      {
        name: 'Service tokens',
        description: 'Tokens for automation on the write routes, never the read routes (signed-in admin or owner).',
      },
      {
        name: 'Webhooks',
        description: 'Signed deliveries of the change feed to endpoints (signed-in admin or owner).',
      },
      {
        name: 'Discussions',
        description:
          'Threads, messages, pinned notes for agents and challenges of a metric, written by members (session) ' +
          'and bots (service token with discussions:write); API keys read them through the contract.',
      },
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
          description: 'An API key of the organization (read routes).',
        },
        serviceToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'cls_ followed by 40 lowercase hex characters',
          description:
            'A service token of the organization (`POST /api/service-tokens`, `npm run cli -- tokens:create`), for ' +
            'the write routes only (and, with `discussions:write`, discussions on `/graphql`). The requirement ' +
            'lists the scope the route needs: `registry:write`, `validations:write` or `discussions:write`.',
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
