/**
 * Authentication of one HTTP request, in the order the service interface
 * fixes (the throttle and the per-key rate limit slot in around the key
 * checks). Failures become the documented error responses.
 */
import type {} from '@fastify/cookie';
import type { FastifyRequest } from 'fastify';
import { authenticateApiKey, authenticateSession, SERVICE_ENV_HEADER } from '../auth/authenticate.js';
import type { RequestedScope } from '../auth/scopes.js';
import type { Principal } from '../context.js';
import { HttpError } from '../errors.js';
import type { PrismaClient } from '../generated/prisma/client.js';

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Bearer API key with the requested scope; throws HttpError otherwise. */
export async function requireApiKey(
  prisma: PrismaClient,
  request: FastifyRequest,
  scope: RequestedScope,
): Promise<Principal> {
  const result = await authenticateApiKey(
    prisma,
    { authorization: header(request, 'authorization'), serviceEnv: header(request, SERVICE_ENV_HEADER) },
    scope,
  );
  if (!result.ok) throw new HttpError(result.error);
  return result.principal;
}

/**
 * GraphQL callers: an Authorization header means an API key (checked like
 * GET /api/v1/metrics); without one, a signed-in session cookie is accepted.
 */
export async function requireApiKeyOrSession(prisma: PrismaClient, request: FastifyRequest): Promise<Principal> {
  const sessionToken = request.cookies.session;
  if (header(request, 'authorization') === undefined && sessionToken) {
    const result = await authenticateSession(prisma, sessionToken);
    if (!result.ok) throw new HttpError(result.error);
    return result.principal;
  }
  return requireApiKey(prisma, request, 'metrics:read');
}
