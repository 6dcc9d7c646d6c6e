/**
 * The session cookie a sign-in sets and sign-out clears: `HttpOnly` (no
 * script reads it), `SameSite=Lax` (sent on a top-level navigation from
 * elsewhere, such as the sign-in provider's redirect, never with another
 * site's form posts or fetches), `Secure` when the request came over TLS
 * (directly or through a trusted proxy's X-Forwarded-Proto), `Path=/`, and
 * expiring with the session.
 */
import { stringifySetCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';

export const SESSION_COOKIE = 'session';

export function setSessionCookie(request: FastifyRequest, reply: FastifyReply, token: string, expiresAt: Date): void {
  reply.header(
    'Set-Cookie',
    stringifySetCookie({
      name: SESSION_COOKIE,
      value: token,
      httpOnly: true,
      sameSite: 'lax',
      secure: request.protocol === 'https',
      path: '/',
      expires: expiresAt,
    }),
  );
}

export function clearSessionCookie(request: FastifyRequest, reply: FastifyReply): void {
  reply.header(
    'Set-Cookie',
    stringifySetCookie({
      name: SESSION_COOKIE,
      value: '',
      httpOnly: true,
      sameSite: 'lax',
      secure: request.protocol === 'https',
      path: '/',
      expires: new Date(0),
    }),
  );
}
