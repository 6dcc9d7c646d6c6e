/**
 * Webhook administration for signed-in admins and owners, admitted as the
 * credential administration is (src/http/admin-routes.ts): create (the secret
 * shown once), list, delete, the latest attempts, and a test event sent
 * synchronously. The logic is src/webhooks/endpoints.ts, shared with the CLI.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { badRequest, errors, HttpError } from '../errors.js';
import {
  createWebhook,
  deleteWebhook,
  enableWebhook,
  listDeliveries,
  listWebhooks,
  MAX_WEBHOOKS_PER_ORGANIZATION,
  sendTestEvent,
  TooManyWebhooksError,
  WebhookInputError,
  WebhookNotFoundError,
} from '../webhooks/endpoints.js';
import type { WebhookSettings } from '../webhooks/settings.js';
import { guardAdminRoutes, iso, validationMessage } from './admin-routes.js';
import { untilReplyCloses } from './reply-closed.js';
import type { AccessDeps } from './request-auth.js';

export interface WebhookRoutesDeps {
  access: AccessDeps;
  settings: WebhookSettings;
}

/** A webhook's body is a URL, a few types and a description: far below the app's limit. */
const BODY_LIMIT = 16 * 1024;

export const createWebhookBody = z.strictObject({
  url: z.string({ error: 'url must be a string' }),
  types: z
    .array(z.string({ error: 'types must be strings' }), { error: 'types must be an array' })
    .max(50)
    .optional(),
  description: z.string({ error: 'description must be a string' }).nullable().optional(),
});

function translated(error: unknown): never {
  if (error instanceof WebhookInputError) throw new HttpError(badRequest(error.message));
  if (error instanceof WebhookNotFoundError) throw new HttpError(errors.webhookNotFound);
  if (error instanceof TooManyWebhooksError) {
    throw new HttpError(errors.tooManyWebhooks(MAX_WEBHOOKS_PER_ORGANIZATION));
  }
  throw error;
}

const webhookId = (request: FastifyRequest) => (request.params as { webhook_id: string }).webhook_id;

export async function webhookRoutes(app: FastifyInstance, deps: WebhookRoutesDeps) {
  const { access, settings } = deps;
  const { prisma } = access;
  const principalOf = guardAdminRoutes(app, access);
  const org = (request: FastifyRequest) => ({ id: principalOf(request).org.id });

  app.post('/api/webhooks', { bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const parsed = createWebhookBody.safeParse(request.body);
    if (!parsed.success) throw new HttpError(badRequest(validationMessage(parsed.error)));
    const created = await createWebhook(prisma, { org: org(request), ...parsed.data }, settings).catch(translated);
    return reply.status(201).send({
      data: {
        id: created.id,
        url: created.url,
        types: created.types,
        description: created.description,
        secret: created.secret,
        created_at: iso(created.createdAt),
      },
    });
  });

  app.get('/api/webhooks', async (request) => {
    const webhooks = await listWebhooks(prisma, org(request));
    return {
      data: webhooks.map((webhook) => ({
        id: webhook.id,
        url: webhook.url,
        types: webhook.types,
        description: webhook.description,
        created_at: iso(webhook.createdAt),
        disabled_at: iso(webhook.disabledAt),
        disabled_reason: webhook.disabledReason,
        failing_since: iso(webhook.failingSince),
        next_attempt_at: iso(webhook.nextAttemptAt),
        last_delivery: webhook.lastDelivery && {
          time: iso(webhook.lastDelivery.time),
          status_code: webhook.lastDelivery.statusCode,
          error: webhook.lastDelivery.error,
        },
      })),
    };
  });

  app.delete('/api/webhooks/:webhook_id', async (request) => {
    await deleteWebhook(prisma, org(request), webhookId(request)).catch(translated);
    return { data: { id: webhookId(request), deleted: true } };
  });

  app.get('/api/webhooks/:webhook_id/deliveries', async (request) => {
    const deliveries = await listDeliveries(prisma, org(request), webhookId(request)).catch(translated);
    return {
      data: deliveries.map((delivery) => ({
        event_id: delivery.eventId,
        type: delivery.type,
        attempt: delivery.attempt,
        status_code: delivery.statusCode,
        error: delivery.error,
        duration_ms: delivery.durationMs,
        time: iso(delivery.time),
      })),
    };
  });

  app.post('/api/webhooks/:webhook_id/enable', async (request) => {
    const { enabled, skippedExpiredEvents } = await enableWebhook(prisma, org(request), webhookId(request)).catch(
      translated,
    );
    return { data: { id: webhookId(request), enabled, skipped_expired_events: skippedExpiredEvents } };
  });

  // Synchronous: the answer is the attempt's outcome (within the timeout, below the request deadline).
  app.post('/api/webhooks/:webhook_id/test', async (request, reply) => {
    const { event, outcome } = await sendTestEvent(
      prisma,
      org(request),
      webhookId(request),
      settings,
      untilReplyCloses(reply),
    ).catch(translated);
    return {
      data: {
        event_id: event.id,
        type: event.type,
        delivered: outcome.ok,
        status_code: outcome.statusCode,
        error: outcome.error,
        duration_ms: outcome.durationMs,
      },
    };
  });
}
