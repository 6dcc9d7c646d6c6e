/**
 * Sign-in (docs/sign-in.md): the sign-in page, a one-time link's
 * confirmation and use, and the OpenID Connect round trip. Every way ends
 * the same: a session of {@link SIGN_IN_SESSION_TTL_HOURS} hours, its cookie,
 * and a 303 to the page asked for (a safe `next`) or the organization's
 * home. Each route is throttled per client; a refused attempt costs the
 * client what a failed authentication does.
 */
import { parseCookie, stringifySetCookie } from 'cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { consumeLoginLink, LOGIN_LINK_PATH } from '../../admin/login-links.js';
import { createSession, SIGN_IN_SESSION_TTL_HOURS } from '../../admin/sessions.js';
import { OIDC_CALLBACK_PATH, oidcClient, ProviderUnavailable, SignInFailed } from '../../auth/oidc.js';
import { memberByEmail } from '../../auth/oidc-member.js';
import { openState, SIGN_IN_STATE_TTL_SECONDS, sealState, stateKey } from '../../auth/oidc-state.js';
import { hashSecret } from '../../auth/secrets.js';
import type { ServiceConfig } from '../../context.js';
import { errors, HttpError } from '../../errors.js';
import { linkPage, linkRefusedPage, notAMemberPage, signInPage } from '../../pages/sign-in.js';
import { rejectCrossOrigin } from '../cross-origin.js';
import { firstHeader } from '../headers.js';
import { type AccessDeps, chargeFailedAttempt, throttleClient } from '../request-auth.js';
import { type FormFields, safeNext, sendPage } from './page-kit.js';
import { setSessionCookie } from './session-cookie.js';

type Query = FastifyRequest<{ Querystring: Record<string, string | string[] | undefined> }>;

/** A query parameter's single value (a repeated one is refused as absent). */
const param = (request: Query, name: string) => {
  const value = request.query[name];
  return typeof value === 'string' ? value : undefined;
};

/** The sealed sign-in state's cookie: sent back only to the callback's path. */
const STATE_COOKIE = 'oidc_sign_in';
const STATE_COOKIE_PATH = '/sign-in/oidc';

function stateCookie(request: FastifyRequest, reply: FastifyReply, value: string, maxAge: number): void {
  reply.header(
    'Set-Cookie',
    stringifySetCookie({
      name: STATE_COOKIE,
      value,
      httpOnly: true,
      // Lax: the browser sends it on the provider's top-level redirect back, never with another site's posts.
      sameSite: 'lax',
      secure: request.protocol === 'https',
      path: STATE_COOKIE_PATH,
      maxAge,
    }),
  );
}

export async function signInRoutes(
  app: FastifyInstance,
  { access, config }: { access: AccessDeps; config: ServiceConfig },
) {
  const provider = config.oidc ? oidcClient(config.oidc, config.publicAppUrl) : null;
  const key = config.oidc ? stateKey(config.oidc.clientSecret) : null;

  /** The session, its cookie, and the way on. */
  async function signIn(
    request: FastifyRequest,
    reply: FastifyReply,
    userId: string,
    orgId: string,
    next: string | null,
  ) {
    const session = await createSession(access.prisma, {
      user: userId,
      org: orgId,
      ttlHours: SIGN_IN_SESSION_TTL_HOURS,
    });
    setSessionCookie(request, reply, session.token, session.expiresAt);
    return reply.redirect(next ?? `/${encodeURIComponent(session.orgSlug)}`, 303);
  }

  app.get('/sign-in', async (request: Query, reply) => {
    await throttleClient(access, request, reply);
    return sendPage(reply, signInPage(provider?.providerName ?? null, safeNext(param(request, 'next'))));
  });

  // A GET only shows a button, and the POST spends the link: mail scanners and link previews fetch
  // links (GET) before the person clicks, and would otherwise use the link up for them.
  app.get(LOGIN_LINK_PATH, async (request: Query, reply) => {
    await throttleClient(access, request, reply);
    const token = param(request, 'token') ?? '';
    const link = token
      ? await access.prisma.loginLink.findUnique({
          where: { tokenHash: hashSecret(token) },
          select: { usedAt: true, expiresAt: true },
        })
      : null;
    if (!link || link.usedAt || link.expiresAt.getTime() <= Date.now()) {
      await chargeFailedAttempt(access, request);
      return sendPage(reply, linkRefusedPage(), 410);
    }
    return sendPage(reply, linkPage(token, safeNext(param(request, 'next'))));
  });

  app.post(LOGIN_LINK_PATH, async (request: FastifyRequest<{ Body: FormFields }>, reply) => {
    // Only this service's own page posts here: another site cannot sign a browser into its own link.
    rejectCrossOrigin(request);
    await throttleClient(access, request, reply);
    const token = request.body?.token;
    const link = typeof token === 'string' && token ? await consumeLoginLink(access.prisma, token) : null;
    if (!link) {
      await chargeFailedAttempt(access, request);
      return sendPage(reply, linkRefusedPage(), 410);
    }
    return signIn(request, reply, link.userId, link.orgId, safeNext(request.body.next) ?? safeNext(link.next));
  });

  app.get('/sign-in/oidc', async (request: Query, reply) => {
    await throttleClient(access, request, reply);
    if (!provider || !key) throw new HttpError(errors.signInProviderNotSetUp);
    const { url, remembered } = await started(request, () => provider.start(safeNext(param(request, 'next'))));
    stateCookie(request, reply, sealState(key, remembered), SIGN_IN_STATE_TTL_SECONDS);
    return reply.redirect(url.href, 303);
  });

  app.get(OIDC_CALLBACK_PATH, async (request: Query, reply) => {
    await throttleClient(access, request, reply);
    if (!provider || !key) throw new HttpError(errors.signInProviderNotSetUp);
    const cookies = parseCookie(firstHeader(request, 'cookie') ?? '');
    const remembered = openState(key, cookies[STATE_COOKIE]);
    // Spent whatever comes next: a state is good for one return.
    stateCookie(request, reply, '', 0);
    if (!remembered) {
      await chargeFailedAttempt(access, request);
      throw new HttpError(errors.signInNotStarted);
    }
    const query = request.url.slice(request.url.indexOf('?') + 1 || request.url.length);
    const identity = await started(request, () => provider.finish(query, remembered)).catch(async (error: unknown) => {
      if (error instanceof SignInFailed) {
        await chargeFailedAttempt(access, request);
        throw new HttpError(errors.signInFailed(error.message));
      }
      throw error;
    });
    const member =
      identity.email && identity.emailVerified
        ? await memberByEmail(access.prisma, identity.email, remembered.next)
        : null;
    if (!member) {
      await chargeFailedAttempt(access, request);
      return sendPage(reply, notAMemberPage(identity.email, identity.emailVerified), 403);
    }
    return signIn(request, reply, member.userId, member.orgId, remembered.next);
  });
}

/** The provider's unavailability as a page (503, try again later). */
async function started<T>(request: FastifyRequest, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ProviderUnavailable) {
      request.log.warn({ err: error }, 'sign-in provider unavailable');
      throw new HttpError(errors.signInProviderUnavailable);
    }
    throw error;
  }
}
