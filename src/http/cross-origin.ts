/**
 * Cross-origin rules, one place for every route.
 *
 * Cookie-authenticated requests (key administration, /graphql with a
 * session) are accepted only from this origin: a browser attaches the
 * session cookie to requests other sites make it send, so without this a
 * page elsewhere could act, or read, as the signed-in user. We do not rely on
 * SameSite alone (the cookie is set elsewhere, and `same-site` subdomains are
 * not same-origin), nor on a token (there is no form page to embed one in):
 * - `Sec-Fetch-Site` (set by browsers, not forgeable by page scripts) must
 *   not be `cross-site` or `same-site` (absent is fine: non-browser clients),
 * - `Origin`, when sent, must name the scheme and host the request was sent to.
 *
 * CORS is off by default: no response carries `Access-Control-Allow-*`, so a
 * page elsewhere cannot read any response nor send a request that needs a
 * preflight (an `Authorization` header, a JSON body). `CORS_ORIGINS` opens
 * `/api/v1/*` and `/graphql` to the pages of the origins listed, for bearer
 * keys only: `Access-Control-Allow-Origin` names the requesting origin,
 * never `*`, and `Access-Control-Allow-Credentials` is never sent, so a
 * browser sends no cookie with these requests and reads no cookie-authenticated response.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors, HttpError } from '../errors.js';
import { firstHeader } from './headers.js';

/** The scheme and host of an origin (`http:`, `host:port`), or null when it is no URL (`null`, say). */
function parseOrigin(origin: string): { protocol: string; host: string } | null {
  try {
    const url = new URL(origin);
    return { protocol: url.protocol, host: url.host.toLowerCase() };
  } catch {
    return null;
  }
}

/** True when a browser says the request comes from another site or origin than the host it was sent to. */
export function isCrossOrigin(request: FastifyRequest): boolean {
  const fetchSite = firstHeader(request, 'sec-fetch-site')?.toLowerCase();
  if (fetchSite === 'cross-site' || fetchSite === 'same-site') return true;
  const origin = firstHeader(request, 'origin');
  if (origin === undefined) return false;
  const host = firstHeader(request, 'host')?.toLowerCase();
  const parsed = parseOrigin(origin);
  // The same host under another scheme is another origin (`https://host` is not an `http://host` service);
  // the request's scheme is the socket's, or X-Forwarded-Proto's from a trusted proxy (TRUST_PROXY).
  return !host || !parsed || parsed.host !== host || parsed.protocol !== `${request.protocol}:`;
}

/** 403 `Forbidden` for a request from another origin (see above). */
export function rejectCrossOrigin(request: FastifyRequest): void {
  if (isCrossOrigin(request)) throw new HttpError(errors.forbidden);
}

/** Request headers a page of an allowed origin may send. */
export const CORS_ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-Service-Env', 'X-Request-Id', 'If-None-Match'];
/** Response headers such a page may read (besides the CORS-safelisted ones). */
export const CORS_EXPOSED_HEADERS = [
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'X-Request-Id',
  'X-Discussion-Summary-Charged',
  'X-Discussion-Summary',
  'ETag',
  'WWW-Authenticate',
];
/** How long a browser may keep a granted preflight (seconds). */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

const corsPath = (url: string) => url.startsWith('/api/v1/') || url === '/graphql' || url.startsWith('/graphql?');

/**
 * CORS for the allowlist `origins` on /api/v1/* and /graphql; nothing at all when it is empty.
 * A preflight (OPTIONS with Access-Control-Request-Method) is answered 204 here, before any
 * authentication or throttle (it carries no credentials), with the grant only for a listed origin.
 */
export function allowListedOrigins(app: FastifyInstance, origins: readonly string[]): void {
  if (!origins.length) return;
  const allowed = new Set(origins);
  app.addHook('onRequest', async (request, reply) => {
    if (!corsPath(request.url)) return;
    reply.header('Vary', 'Origin');
    const origin = firstHeader(request, 'origin');
    const granted = origin !== undefined && allowed.has(origin);
    const preflight = request.method === 'OPTIONS' && firstHeader(request, 'access-control-request-method');
    if (granted) reply.header('Access-Control-Allow-Origin', origin);
    if (preflight) {
      if (granted) {
        reply.header('Access-Control-Allow-Methods', 'GET, POST');
        reply.header('Access-Control-Allow-Headers', CORS_ALLOWED_HEADERS.join(', '));
        reply.header('Access-Control-Max-Age', PREFLIGHT_MAX_AGE_SECONDS);
      }
      return reply.status(204).send();
    }
    if (granted) reply.header('Access-Control-Expose-Headers', CORS_EXPOSED_HEADERS.join(', '));
  });
}
