import { parseCookie } from 'cookie';
import type { FastifyRequest } from 'fastify';

/** A request header's value; a repeated header counts with its first value. */
export function firstHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The `session` cookie of a signed-in browser. Parsed only by the routes
 * that accept a session (/graphql and the key administration), not on every
 * request.
 */
export function sessionCookie(request: FastifyRequest): string | undefined {
  const header = firstHeader(request, 'cookie');
  return header ? parseCookie(header).session : undefined;
}
