/**
 * Credential administration for signed-in admins and owners (service
 * interface, "Routes beyond the public read routes"): create, list and revoke
 * the API keys and the service tokens of the session's active organization.
 * The logic itself is src/admin/api-keys.ts and src/admin/service-tokens.ts,
 * shared with the admin CLI.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AdminError } from '../admin/admin-error.js';
import { ApiKeyNotFoundError, createApiKey, listApiKeys, revokeApiKey } from '../admin/api-keys.js';
import {
  createServiceToken,
  listServiceTokens,
  revokeServiceToken,
  ServiceTokenNotFoundError,
} from '../admin/service-tokens.js';
import { AGENT_CONTRACT_SCOPES, isAgentContractPair } from '../auth/scopes.js';
import type { Principal } from '../context.js';
import { badRequest, errors, HttpError } from '../errors.js';
import { storableText, UNSTORABLE_TEXT } from '../metric/input.js';
import { type Query, rejectUnknownParameters } from '../rest/query.js';
import { rejectCrossOrigin } from './cross-origin.js';
import { clientErrorHandler } from './error-reply.js';
import { firstHeader } from './headers.js';
import { type AccessDeps, admitAdminSession, noteOrganizationWrite } from './request-auth.js';
import { strictJsonBodies } from './utf8-body.js';

export interface ApiKeyRoutesDeps {
  access: AccessDeps;
}

type SessionPrincipal = Extract<Principal, { kind: 'session' }>;

/** Largest value of the `rate_limit_per_minute` column (PostgreSQL integer). */
const MAX_RATE_LIMIT = 2_147_483_647;

/** A credential's name: shown in listings and audit, stored as text. */
const credentialName = z
  .string()
  .trim()
  .min(1, 'name must not be empty')
  .max(200, 'name must be at most 200 characters')
  .refine(storableText, `name ${UNSTORABLE_TEXT}`);

export const createKeyBody = z.strictObject({
  name: credentialName,
  scopes: z
    .array(z.string())
    .refine(isAgentContractPair, `scopes must be exactly ${AGENT_CONTRACT_SCOPES.join(' and ')}`)
    .optional(),
  sandbox: z.boolean().optional(),
  rate_limit_per_minute: z
    .number()
    .int('rate_limit_per_minute must be a whole number')
    .positive('rate_limit_per_minute must be above 0')
    .max(MAX_RATE_LIMIT, `rate_limit_per_minute must be at most ${MAX_RATE_LIMIT}`)
    .nullable()
    .optional(),
});

export const createServiceTokenBody = z.strictObject({
  name: credentialName,
  scopes: z.array(z.string().max(64)).min(1, 'scopes must name at least one scope').max(8),
});

export function validationMessage(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'Invalid request body';
  if (issue.code === 'unrecognized_keys') return `unknown member(s): ${issue.keys.join(', ')}`;
  const path = issue.path.join('.');
  // Messages of our own already name the member.
  return path && !issue.message.startsWith(path) ? `${path}: ${issue.message}` : issue.message;
}

/**
 * CSRF defence: every state-changing request must come from this origin
 * (src/http/cross-origin.ts), and POST bodies must be `application/json`: a
 * cross-origin page can send that only after a CORS preflight, which this
 * service never grants for these routes (CORS_ORIGINS opens only /api/v1/*
 * and /graphql, and never with credentials), while HTML forms can only send
 * urlencoded, multipart or text/plain bodies.
 */
function rejectCrossSite(request: FastifyRequest): void {
  if (request.method !== 'POST' && request.method !== 'DELETE') return;
  rejectCrossOrigin(request);
}

function requireJsonBody(request: FastifyRequest): void {
  if (request.method !== 'POST') return;
  const mediaType = firstHeader(request, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') throw new HttpError(errors.jsonContentTypeRequired);
}

export const iso = (date: Date | null) => (date === null ? null : date.toISOString());

/**
 * The admission of the administration routes of a plugin (credentials here,
 * webhooks in src/http/webhook-routes.ts): cross-site requests refused, an
 * admin or owner session, JSON bodies; returns the session of a request.
 */
export function guardAdminRoutes(
  app: FastifyInstance,
  access: AccessDeps,
): (request: FastifyRequest) => SessionPrincipal {
  const principals = new WeakMap<FastifyRequest, SessionPrincipal>();

  // onRequest runs before the body is read (throttle, session, per-user budget, then the role): a
  // forged or unauthenticated request is turned away without parsing what it sent.
  app.addHook('onRequest', async (request, reply) => {
    rejectCrossSite(request);
    principals.set(request, await admitAdminSession(access, request, reply));
    // No write of these routes takes a query parameter.
    if (request.method !== 'GET' && request.method !== 'HEAD') rejectUnknownParameters(request.query as Query, []);
    requireJsonBody(request);
  });

  // A name or a description with bytes that are not UTF-8 is refused, not stored with U+FFFD.
  strictJsonBodies(app);

  // Scoped to the plugin: a body Fastify cannot parse is a 400 `{ error }`, never a 500.
  app.setErrorHandler(clientErrorHandler);

  return (request) => {
    const principal = principals.get(request);
    if (!principal) throw new Error('admin route reached without an authenticated session');
    return principal;
  };
}

export async function apiKeyRoutes(app: FastifyInstance, deps: ApiKeyRoutesDeps) {
  const { access } = deps;
  const { prisma } = access;
  const principalOf = guardAdminRoutes(app, access);

  app.post('/api/api-keys', async (request, reply) => {
    const parsed = createKeyBody.safeParse(request.body);
    if (!parsed.success) throw new HttpError(badRequest(validationMessage(parsed.error)));
    const principal = principalOf(request);
    const body = parsed.data;
    const key = await createApiKey(prisma, {
      org: { id: principal.org.id },
      name: body.name,
      scopes: body.scopes,
      sandbox: body.sandbox,
      rateLimitPerMinute: body.rate_limit_per_minute,
      actorUserId: principal.userId,
    });
    return reply.status(201).send({
      data: {
        id: key.id,
        name: key.name,
        key: key.secret,
        scopes: key.scopes,
        sandbox: key.sandbox,
        rate_limit_per_minute: key.rateLimitPerMinute,
        created_at: iso(key.createdAt),
      },
    });
  });

  app.get('/api/api-keys', async (request) => {
    const keys = await listApiKeys(prisma, { org: { id: principalOf(request).org.id }, order: 'newest' });
    return {
      data: keys.map((key) => ({
        id: key.id,
        name: key.name,
        key_prefix: key.keyPrefix,
        scopes: key.scopes,
        sandbox: key.sandbox,
        rate_limit_per_minute: key.rateLimitPerMinute,
        created_at: iso(key.createdAt),
        revoked_at: iso(key.revokedAt),
        last_used_at: iso(key.lastUsedAt),
      })),
    };
  });

  app.delete('/api/api-keys/:key_id', async (request) => {
    const { key_id: keyId } = request.params as { key_id: string };
    const principal = principalOf(request);
    try {
      const revoked = await revokeApiKey(prisma, {
        org: { id: principal.org.id },
        id: keyId,
        actorUserId: principal.userId,
      });
      // Refused at once on every instance, not only once the replicas have replayed the revocation.
      await noteOrganizationWrite(access, request, principal.org.id);
      return { data: { id: revoked.id, revoked_at: iso(revoked.revokedAt) } };
    } catch (error) {
      if (error instanceof ApiKeyNotFoundError) throw new HttpError(errors.apiKeyNotFound);
      throw error;
    }
  });

  app.post('/api/service-tokens', async (request, reply) => {
    const parsed = createServiceTokenBody.safeParse(request.body);
    if (!parsed.success) throw new HttpError(badRequest(validationMessage(parsed.error)));
    const principal = principalOf(request);
    try {
      const token = await createServiceToken(prisma, {
        org: { id: principal.org.id },
        name: parsed.data.name,
        scopes: parsed.data.scopes,
        actorUserId: principal.userId,
      });
      return reply.status(201).send({
        data: {
          id: token.id,
          name: token.name,
          token: token.secret,
          scopes: token.scopes,
          created_at: iso(token.createdAt),
        },
      });
    } catch (error) {
      if (error instanceof AdminError) throw new HttpError(badRequest(error.message));
      throw error;
    }
  });

  app.get('/api/service-tokens', async (request) => {
    const tokens = await listServiceTokens(prisma, { org: { id: principalOf(request).org.id } });
    return {
      data: tokens.map((token) => ({
        id: token.id,
        name: token.name,
        token_prefix: token.tokenPrefix,
        scopes: token.scopes,
        created_at: iso(token.createdAt),
        revoked_at: iso(token.revokedAt),
        last_used_at: iso(token.lastUsedAt),
      })),
    };
  });

  app.delete('/api/service-tokens/:token_id', async (request) => {
    const { token_id: tokenId } = request.params as { token_id: string };
    const principal = principalOf(request);
    try {
      const revoked = await revokeServiceToken(prisma, {
        org: { id: principal.org.id },
        id: tokenId,
        actorUserId: principal.userId,
      });
      return { data: { id: revoked.id, revoked_at: iso(revoked.revokedAt) } };
    } catch (error) {
      if (error instanceof ServiceTokenNotFoundError) throw new HttpError(errors.serviceTokenNotFound);
      throw error;
    }
  });
}
