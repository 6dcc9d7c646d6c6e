/**
 * The CSRF token of a signed-in page's forms: derived from the session's
 * token (`SHA-256("csrf:" + token)`), so it needs no storage and no server
 * secret, changes with every session, and cannot be made by a page
 * elsewhere, which never sees the HttpOnly cookie. Every form post of a page
 * carries it in its `csrf` field and is refused (403) without the right one,
 * besides the cross-origin check every cookie-authenticated write has
 * (src/http/cross-origin.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export function csrfTokenOf(sessionToken: string): string {
  return createHash('sha256').update(`csrf:${sessionToken}`).digest('base64url');
}

/** Whether `presented` is the session's token, compared in constant time. */
export function csrfMatches(sessionToken: string, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const expected = Buffer.from(csrfTokenOf(sessionToken));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
