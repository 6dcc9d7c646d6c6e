/**
 * The one catalogue of error responses: status and exact body. The strings
 * are the public contract's (metric-governance-read-api-v1 section 7 and the
 * service interface); nothing else spells them.
 */

export interface ErrorResponse {
  status: number;
  body: { error: string; details?: string[] } | { error: { code: string; message: string } };
  /** a 401's `WWW-Authenticate` challenge (RFC 9110 section 11.6.1, RFC 6750 section 3) */
  challenge?: string;
  /** whole seconds to wait before trying again (`Retry-After`) */
  retryAfter?: number;
}

function plain(status: number, message: string): ErrorResponse {
  return { status, body: { error: message } };
}

/** The challenge of a 401 that presented no credential. */
export const BEARER_CHALLENGE = 'Bearer';

/**
 * A 401 with its challenge: `Bearer` when no credential came, with
 * `error="invalid_request"` for a malformed header and `error="invalid_token"`
 * for a key that is malformed, unknown or revoked.
 */
function unauthorized(message: string, error?: 'invalid_request' | 'invalid_token'): ErrorResponse {
  return { ...plain(401, message), challenge: error ? `${BEARER_CHALLENGE} error="${error}"` : BEARER_CHALLENGE };
}

export const errors = {
  missingAuthorization: unauthorized('Missing Authorization header'),
  invalidAuthorizationFormat: unauthorized(
    'Invalid Authorization header format. Expected: Bearer <api_key>',
    'invalid_request',
  ),
  invalidApiKeyFormat: unauthorized('Invalid API key format', 'invalid_token'),
  invalidApiKey: unauthorized('Invalid API key', 'invalid_token'),
  revokedApiKey: unauthorized('API key has been revoked', 'invalid_token'),
  insufficientScope: plain(403, 'Insufficient scope'),
  sandboxKeyRequiresSandbox: {
    status: 403,
    body: {
      error: {
        code: 'sandbox_key_requires_sandbox',
        message: 'This API key is a sandbox key and can only be used with the header X-Service-Env: sandbox',
      },
    },
  },
  rateLimited: plain(429, 'Rate limit exceeded'),
  invalidMetricId: plain(400, 'Invalid metric ID format'),
  metricNotFound: plain(404, 'Metric not found'),
  fetchFailed: plain(500, 'Failed to fetch metric'),
  notSignedIn: unauthorized('Not signed in'),
  forbidden: plain(403, 'Forbidden'),
  apiKeyNotFound: plain(404, 'API key not found'),
  serviceTokenNotFound: plain(404, 'Service token not found'),
  webhookNotFound: plain(404, 'Webhook not found'),
  tooManyWebhooks: (max: number) =>
    plain(409, `An organization has at most ${max} webhooks: delete one before creating another`),
  jsonContentTypeRequired: plain(415, 'Content-Type must be application/json'),
  documentContentTypeRequired: plain(415, 'Content-Type must be application/json or application/yaml'),
  bodyTooLarge: plain(413, 'Request body is too large'),
  /** a query parameter a write route does not take (src/rest/query.ts) */
  unknownQueryParameter: (name: string, known: readonly string[]) =>
    plain(
      400,
      `unknown query parameter ${JSON.stringify(name)}: ` +
        (known.length ? `this route takes ${known.join(', ')}` : 'this route takes none'),
    ),
  bodyNotUtf8: plain(400, 'The request body is not valid UTF-8'),
  /** a query parameter (or GraphQL argument) of a read outside its documented values: `<name> must be <rule>` */
  invalidParameter: (name: string, rule: string) => plain(400, `${name} must be ${rule}`),
  /** a registry document for another organization than the caller's */
  otherOrganization: (named: string, own: string) =>
    plain(403, `the document's organization "${named}" is not the caller's organization (${own})`),
  notFound: plain(404, 'Not found'),
  /** an upload in parts that is not the organization's, or no longer open (applied, deleted, expired) */
  uploadNotFound: plain(404, 'Upload not found'),
  tooManyUploads: (max: number) =>
    plain(409, `An organization has at most ${max} uploads open at once: apply or delete one before creating another`),
  uploadTooLarge: (max: number) => plain(413, `An upload lists at most ${max} metrics`),
  uploadTooManyBytes: (mib: number) => plain(413, `An upload's parts hold at most ${mib} MiB in all`),
  /** /sign-in/oidc and its callback when OIDC_* are not set (docs/sign-in.md) */
  signInProviderNotSetUp: plain(404, 'Sign-in with a provider is not set up on this service'),
  /** the provider did not answer (its discovery, token or userinfo endpoint) */
  signInProviderUnavailable: {
    ...plain(503, 'The sign-in provider could not be reached: try again in a minute'),
    retryAfter: 30,
  },
  /** a return from the provider without this browser's sealed state, or after it expired */
  signInNotStarted: plain(
    400,
    'This sign-in was not started in this browser, or took longer than 10 minutes: start again from the sign-in page',
  ),
  /** the provider's answer was refused: `reason` says why */
  signInFailed: (reason: string) => plain(400, `The sign-in could not be completed (${reason}): start again`),
  /**
   * a prune past the removals the request accepts (src/registry/removals.ts): why, then the metrics
   * it would remove (the first of them; the dry run's plan lists every one)
   */
  removalsNotAllowed: (lines: readonly string[]) => documentProblems(lines),
  /** a change-feed cursor whose following events retention removed (src/changes/feed.ts says why) */
  cursorExpired: (message: string) => plain(410, message),
  internal: plain(500, 'Internal server error'),
  /**
   * A write of a registry another writer has been writing for longer than a write may wait, or
   * with as many writers waiting as may (src/registry/write-queue.ts): 409 rather than 429, since
   * it is the organization's registry that is busy, not the caller that asks too often.
   */
  registryBusy: (holder: string, since: Date | null, retryAfter: number): ErrorResponse => ({
    ...plain(
      409,
      `${holder.charAt(0).toUpperCase()}${holder.slice(1)}${since ? ` (started ${since.toISOString()})` : ''} is in progress for this organization, ` +
        'and the writes queued behind it may wait no longer: retry after it has ended',
    ),
    retryAfter,
  }),
  /** a write's transaction ran out of its time (src/db/unavailable.ts, isOutOfTime): rolled back */
  writeOutOfTime: {
    ...plain(
      503,
      'The write did not finish within the time a write has, and was rolled back: nothing was written. Retry later, or send fewer metrics at once',
    ),
    retryAfter: 60,
  },
  /** every connection registry writes may hold on this instance was held for longer than a write may wait */
  writesBusy: (retryAfter: number): ErrorResponse => ({
    ...plain(503, 'Registry writes are busy on this instance: retry shortly'),
    retryAfter,
  }),
  /**
   * The database did not answer (down, restarting, refusing connections: src/db/unavailable.ts). A
   * pooled connection is made again on the next request, so a client retrying after a few seconds
   * is served as soon as the database is back. Every route's 500 `Failed to fetch metric` or
   * `Internal server error` for the same cause was this.
   */
  serviceUnavailable: { ...plain(503, 'Service temporarily unavailable'), retryAfter: 5 },
  /**
   * A document whose reading went past a limit of its worker thread (src/registry/read-off-thread.ts):
   * 422, the document's syntax was fine but it costs more than a read may spend; `within` names the limit.
   */
  /** GET /api/registry of an organization with more metrics than one document lists (src/registry/export.ts) */
  exportTooLarge: (count: number, parts: number) =>
    plain(
      422,
      `The registry holds ${count} metrics, more than one document lists: export it by source, or in ${parts} parts (part=1 to ${parts})`,
    ),
  documentNotRead: (within: string) =>
    plain(422, `The document could not be read within ${within}: send a smaller or simpler document`),
  /** every thread reading documents on this instance was busy for longer than a document may wait */
  documentReadsBusy: (retryAfter: number): ErrorResponse => ({
    ...plain(503, 'Documents are being read on this instance: retry shortly'),
    retryAfter,
  }),
  /** a free-text input past its documented bound (src/metric/input.ts); never cut short */
  inputTooLong: (name: string, max: number) => plain(400, `${name} must be at most ${max} characters`),
  tooManyWords: (name: string, max: number) => plain(400, `${name} must be at most ${max} words`),
  /** a parameter that takes one of a few values (the list's `trust` filter), given another */
  notOneOf: (name: string, allowed: readonly string[]) => plain(400, `${name} must be one of ${allowed.join(', ')}`),
  /** a discussion's thread, message or challenge that is not the caller organization's (docs/discussions.md) */
  threadNotFound: plain(404, 'Thread not found'),
  messageNotFound: plain(404, 'Message not found'),
  challengeNotFound: plain(404, 'Challenge not found'),
  /** an API key presented to a discussion write: keys only read */
  readOnlyApiKey: plain(
    403,
    'API keys are read-only: discussions are written by a signed-in member or a service token with discussions:write',
  ),
  /** an API key asking for a discussion's threads or challenges, which the contract summarizes for it */
  threadsNotForApiKeys: plain(
    403,
    'API keys read discussions through the contract (counts, discourse_summary, agent_context_notes, ' +
      'discussion_summary); threads and challenges are read by signed-in members and service tokens with ' +
      'discussions:write',
  ),
  /** a service token on /graphql asking for more than discussions */
  serviceTokenDiscussionsOnly: plain(
    403,
    'A service token reads and writes discussions only on /graphql (threads, thread, challenges and the ' +
      'mutations); metrics are read with an API key',
  ),
  /** a discussion write that the thing's state refuses (a deleted message edited, a challenge decided twice) */
  discussionConflict: (message: string) => plain(409, message),
  /** past DISCUSSION_WRITES_PER_MINUTE for one member or service token */
  discussionWritesLimited: (perMinute: number, retryAfter: number): ErrorResponse => ({
    ...plain(429, `Too many discussion writes: at most ${perMinute} a minute per member or service token`),
    retryAfter,
  }),
  /** text input holding what no metric's text can (src/metric/input.ts): control characters, unpaired surrogates */
  invalidCharacters: (name: string) =>
    plain(400, `${name} must not contain control characters (other than tab and line breaks) or unpaired surrogates`),
} as const satisfies Record<string, ErrorResponse | ((...args: never[]) => ErrorResponse)>;

/** 400 for a request body that fails validation; the message says what is wrong. */
export function badRequest(message: string): ErrorResponse {
  return plain(400, message);
}

/**
 * 400 for a document with problems (a registry document, validation
 * evidence): the first as the message, every one in `details` when there are
 * several, each naming its place.
 */
export function documentProblems(lines: readonly string[]): ErrorResponse {
  const [first = 'invalid document'] = lines;
  return { status: 400, body: lines.length > 1 ? { error: first, details: [...lines] } : { error: first } };
}

/** A failure with a documented response, thrown through route handlers. */
export class HttpError extends Error {
  constructor(readonly response: ErrorResponse) {
    super(typeof response.body.error === 'string' ? response.body.error : response.body.error.code);
  }
}
