/**
 * What every signed-in page shares: its admission (the session, the
 * organization in its path, the viewer), its form posts' checks (same
 * origin, the CSRF token), how it is sent (CSP without `unsafe-inline`, never
 * cached by anyone else) and how its failures look (a page, not JSON; a
 * signed-out visit goes to sign-in and comes back).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isOrganizationSlug } from '../../admin/organization.js';
import type { Principal } from '../../context.js';
import { isDatabaseUnavailable } from '../../db/unavailable.js';
import { errors, HttpError } from '../../errors.js';
import type { Html } from '../../pages/html.js';
import { messagePage, type Viewer } from '../../pages/layout.js';
import { rejectCrossOrigin } from '../cross-origin.js';
import { sessionCookie } from '../headers.js';
import { pageHeaders } from '../page-headers.js';
import { type AccessDeps, admitPageSession } from '../request-auth.js';
import { csrfMatches, csrfTokenOf } from './csrf.js';

export interface SignedInPage {
  /** the session, acting in the organization of the page's path */
  principal: Extract<Principal, { kind: 'session' }>;
  viewer: Viewer;
  sessionId: string;
}

/**
 * The headers every page sends: scripts and styles from this service only, no
 * inline ones. The referrer goes to this origin only (`same-origin`), not
 * nowhere: under `no-referrer` a browser sends `Origin: null` with a page's
 * form posts, which the same-origin check of every post must refuse.
 */
const PAGE_HEADERS = {
  ...pageHeaders({ 'style-src': "'self'", 'img-src': "'self'", 'font-src': "'self'" }),
  'Referrer-Policy': 'same-origin',
};

/** A signed-in page of organization `orgSlug`; not signed in: to sign-in and back (the page's error handler). */
export async function admitPage(
  access: AccessDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  orgSlug: string,
): Promise<SignedInPage> {
  // A path no organization can have (`/favicon.ico`, `/robots.txt`) is not found, signed in or not:
  // not a sign-in page for a browser's own requests.
  if (!isOrganizationSlug(orgSlug)) throw new HttpError(errors.notFound);
  const { principal, viewer } = await admitPageSession(access, request, reply, orgSlug);
  const token = sessionCookie(request) as string;
  return {
    principal,
    sessionId: viewer.sessionId,
    viewer: {
      email: viewer.email,
      displayName: viewer.displayName,
      role: principal.role,
      org: { slug: principal.org.slug, name: viewer.orgName },
      organizations: viewer.organizations,
      csrfToken: csrfTokenOf(token),
    },
  };
}

/** A parsed form post (application/x-www-form-urlencoded): each field's first value. */
export type FormFields = Record<string, string>;

/**
 * A form post of a signed-in page: from this origin only, with the session's
 * CSRF token in its `csrf` field (403 otherwise), then admitted as {@link admitPage}.
 */
export async function admitPageForm(
  access: AccessDeps,
  request: FastifyRequest<{ Body: FormFields }>,
  reply: FastifyReply,
  orgSlug: string,
): Promise<SignedInPage> {
  rejectCrossOrigin(request);
  const page = await admitPage(access, request, reply, orgSlug);
  if (!csrfMatches(sessionCookie(request) as string, request.body?.csrf)) throw new HttpError(errors.forbidden);
  return page;
}

/** Sends a page: HTML, its security headers, and private to the signed-in browser. */
export function sendPage(reply: FastifyReply, page: Html, status = 200): FastifyReply {
  reply.headers(PAGE_HEADERS);
  // Not `no-referrer`: under it a browser sends `Origin: null` with the page's own form posts, which
  // the same-origin check of every post (src/http/cross-origin.ts) refuses. `same-origin` still sends
  // no referrer to any other site (the sign-in provider, a link in a discussion).
  reply.header('Referrer-Policy', 'same-origin');
  reply.header('Cache-Control', 'no-store');
  reply.header('X-Content-Type-Options', 'nosniff');
  return reply.status(status).type('text/html; charset=utf-8').send(page.value);
}

/** After a form post: back to a page with a GET (303), so a reload does not post again. */
export function seeOther(reply: FastifyReply, path: string): FastifyReply {
  return reply.redirect(path, 303);
}

/** The sign-in page, coming back to `next` after it. */
export function signInPath(next: string): string {
  return `/sign-in?next=${encodeURIComponent(next)}`;
}

/**
 * A `next` to come back to after sign-in: a path of this service only (one
 * leading slash, no scheme, no `//` or backslash that a browser would read
 * as another host), at most 2,000 characters; anything else is no `next`.
 */
export function safeNext(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 2000) return null;
  if (!value.startsWith('/') || value.startsWith('//') || value.includes('\\')) return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(value)) return null;
  return value;
}

const TITLES: Record<number, string> = {
  400: 'That request could not be read',
  403: 'Not allowed',
  404: 'Page not found',
  413: 'That was too large',
  415: 'That request could not be read',
  429: 'Too many requests',
  503: 'The service is unavailable',
};

function messageOf(error: HttpError): string {
  const body = error.response.body.error;
  return typeof body === 'string' ? body : body.message;
}

/**
 * The error handler of the pages: a signed-out visit goes to sign-in (303,
 * back to the page after it); a documented failure is a page with its
 * status and message (and its Retry-After); Fastify's own 4xx (a body too
 * large, of another type) likewise; anything else is logged and answered
 * with a page that shows no detail.
 */
export function pageErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof HttpError && error.response === errors.notSignedIn) {
    const next = request.method === 'GET' ? safeNext(request.url) : null;
    return reply.redirect(next ? signInPath(next) : '/sign-in', 303);
  }
  if (error instanceof HttpError) {
    if (error.response.retryAfter) reply.header('Retry-After', error.response.retryAfter);
    const status = error.response.status;
    return sendPage(reply, messagePage(TITLES[status] ?? 'Something went wrong', messageOf(error)), status);
  }
  const status = error.statusCode;
  if (status && status >= 400 && status < 500) {
    return sendPage(reply, messagePage(TITLES[status] ?? 'That request could not be read', error.message), status);
  }
  if (isDatabaseUnavailable(error)) {
    request.log.warn({ err: error }, 'database unavailable');
    reply.header('Retry-After', errors.serviceUnavailable.retryAfter ?? 5);
    return sendPage(reply, messagePage(TITLES[503] as string, 'Try again in a few seconds.'), 503);
  }
  request.log.error({ err: error }, 'page failed');
  return sendPage(reply, messagePage('Something went wrong', 'The page could not be shown. Try again.'), 500);
}
