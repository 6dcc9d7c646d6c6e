/**
 * One attempt to deliver one event to one endpoint: signed, sent, and
 * recorded among the endpoint's latest attempts (the last 100 are kept).
 */
import type { CloudEvent } from '../changes/event.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { type SendOutcome, sendSigned } from './send.js';
import type { WebhookSettings } from './settings.js';
import { signatureHeaders } from './signature.js';

/** Attempts kept per endpoint (GET /api/webhooks/{id}/deliveries). */
export const KEPT_DELIVERIES = 100;

/** The longest error text recorded. */
const MAX_ERROR_LENGTH = 500;

export interface Endpoint {
  id: string;
  url: string;
  secret: string;
}

export interface Attempt {
  event: CloudEvent;
  /** null for a test event, which is not of the feed */
  seq: bigint | null;
  /** 1 for the first attempt at the event */
  attempt: number;
}

/** Sends `attempt` (SendAborted when `stop` aborts: nothing recorded) and records its outcome. */
export async function deliverEvent(
  prisma: PrismaClient,
  endpoint: Endpoint,
  { event, seq, attempt }: Attempt,
  settings: WebhookSettings,
  stop: AbortSignal,
): Promise<SendOutcome> {
  const body = JSON.stringify(event);
  const headers = signatureHeaders(endpoint.secret, event.id, body, new Date());
  const outcome = await sendSigned(endpoint.url, body, headers, settings, stop);
  await prisma.$executeRaw`
    INSERT INTO webhook_delivery (webhook_id, event_id, event_seq, type, attempt, status_code, error, duration_ms, time)
    VALUES (${endpoint.id}::uuid, ${event.id}::uuid, ${seq}, ${event.type}, ${attempt}, ${outcome.statusCode},
            ${outcome.error?.slice(0, MAX_ERROR_LENGTH) ?? null}, ${outcome.durationMs}, now())`;
  await prisma.$executeRaw`
    DELETE FROM webhook_delivery WHERE webhook_id = ${endpoint.id}::uuid AND id <= (
      SELECT id FROM webhook_delivery WHERE webhook_id = ${endpoint.id}::uuid
      ORDER BY id DESC OFFSET ${KEPT_DELIVERIES} LIMIT 1)`;
  return outcome;
}
