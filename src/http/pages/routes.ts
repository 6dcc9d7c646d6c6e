/**
 * The signed-in product surface (docs/catalog.md): sign-in and sign-out, the
 * organization's home, the catalog, each metric's page (the contract's
 * `canonical_url`) and its discussion forms, with the pages' files. Its
 * routes answer pages, never JSON: their error handler turns every failure
 * into a page (src/http/pages/page-kit.ts), and form posts are parsed here
 * only (application/x-www-form-urlencoded, at most 256 KiB).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hashSecret } from '../../auth/secrets.js';
import type { ServiceConfig } from '../../context.js';
import { errors, HttpError } from '../../errors.js';
import { PAGE_ASSETS_PATH, PAGE_SCRIPT, PAGE_STYLESHEET } from '../../pages/assets.js';
import { rejectCrossOrigin } from '../cross-origin.js';
import type { DiscussionWriteDeps } from '../discussion-routes.js';
import { sessionCookie } from '../headers.js';
import { type AccessDeps, throttleClient } from '../request-auth.js';
import { IMMUTABLE, sendAsset, staticAsset } from '../static-assets.js';
import { catalogRoutes } from './catalog-routes.js';
import { csrfMatches } from './csrf.js';
import { discussionForms } from './discussion-forms.js';
import { metricPageRoutes } from './metric-routes.js';
import { type FormFields, pageErrorHandler, seeOther } from './page-kit.js';
import { clearSessionCookie } from './session-cookie.js';
import { signInRoutes } from './sign-in-routes.js';

export interface PageRouteOptions {
  access: AccessDeps;
  config: ServiceConfig;
  /** what the discussion forms write with: the same as the REST and GraphQL writes */
  discussionWrites: DiscussionWriteDeps;
}

const FORM_BODY_LIMIT = 256 * 1024;

/** A form's fields, each its first value (a repeated field cannot smuggle a second one past a check). */
function parseForm(body: string): FormFields {
  const fields: FormFields = {};
  for (const [name, value] of new URLSearchParams(body)) if (!(name in fields)) fields[name] = value;
  return fields;
}

export async function pageRoutes(app: FastifyInstance, options: PageRouteOptions) {
  const { access } = options;
  app.setErrorHandler(pageErrorHandler);
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
    (_request, body, done) => done(null, parseForm(body as string)),
  );

  const files = new Map(
    [PAGE_STYLESHEET, PAGE_SCRIPT].map((file) => [file.path, staticAsset(file.content, file.contentType, IMMUTABLE)]),
  );
  app.get(`${PAGE_ASSETS_PATH}/:file`, async (request: FastifyRequest<{ Params: { file: string } }>, reply) => {
    await throttleClient(access, request, reply);
    const asset = files.get(`${PAGE_ASSETS_PATH}/${request.params.file}`);
    if (!asset) throw new HttpError(errors.notFound);
    return sendAsset(request, reply, asset);
  });

  // Sign-out ends the session (its row is deleted, so the cookie is worthless wherever it was copied) and
  // clears the cookie. Without the session's CSRF token it is refused: another site cannot sign a person out.
  app.post('/sign-out', async (request: FastifyRequest<{ Body: FormFields }>, reply: FastifyReply) => {
    rejectCrossOrigin(request);
    await throttleClient(access, request, reply);
    const token = sessionCookie(request);
    if (token) {
      if (!csrfMatches(token, request.body?.csrf)) throw new HttpError(errors.forbidden);
      await access.prisma.session.deleteMany({ where: { tokenHash: hashSecret(token) } });
    }
    clearSessionCookie(request, reply);
    return seeOther(reply, '/sign-in');
  });

  for (const pages of [signInRoutes, catalogRoutes, metricPageRoutes, discussionForms]) {
    await app.register(pages, options);
  }
}
