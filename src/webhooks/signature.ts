/**
 * Standard Webhooks signing (standardwebhooks.com): a secret is `whsec_` and
 * the base64 of random bytes; a request carries `webhook-id`,
 * `webhook-timestamp` (unix seconds) and `webhook-signature`: `v1,` and the
 * base64 HMAC-SHA256, keyed with the secret's bytes, of `id.timestamp.body`.
 */
import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new secret: 32 random bytes. */
export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(32).toString('base64')}`;
}

export function signatureHeaders(secret: string, id: string, body: string, now: Date): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}
