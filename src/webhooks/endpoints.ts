/**
 * Webhook endpoints as the admin routes and the CLI manage them: create (the
 * secret is returned once; it is stored, since every delivery is signed with
 * it), list, delete, the latest attempts, and a test event sent at once.
 */
import { randomUUID } from 'node:crypto';
import { AdminError } from '../admin/admin-error.js';
import { type OrganizationSelector, resolveOrganization } from '../admin/organization.js';
import { CHANGE_EVENT_TYPES, type CloudEvent, cloudEvent, isChangeEventType } from '../changes/event.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { storableText } from '../metric/input.js';
import { isUuid } from '../uuid.js';
import { parseWebhookUrl, resolveWebhookHost, WebhookUrlError } from './address.js';
import { deliverEvent, KEPT_DELIVERIES } from './deliver.js';
import type { SendOutcome } from './send.js';
import type { WebhookSettings } from './settings.js';
import { newWebhookSecret } from './signature.js';

export const MAX_WEBHOOKS_PER_ORGANIZATION = 20;
export const MAX_DESCRIPTION_LENGTH = 500;
/** The type of the event POST /api/webhooks/{id}/test sends (never one of the feed). */
export const TEST_EVENT_TYPE = 'webhook.test';

/** Input refused; the message says why (400). */
export class WebhookInputError extends AdminError {}
export class WebhookNotFoundError extends AdminError {
  constructor() {
    super('no such webhook in the organization');
  }
}
export class TooManyWebhooksError extends AdminError {
  constructor() {
    super(`an organization has at most ${MAX_WEBHOOKS_PER_ORGANIZATION} webhooks`);
  }
}

export interface CreateWebhookInput {
  org: OrganizationSelector;
  url: string;
  /** absent: every type */
  types?: readonly string[];
  description?: string | null;
}

export interface CreatedWebhook {
  id: string;
  orgId: string;
  url: string;
  types: string[] | null;
  description: string | null;
  /** shown this once */
  secret: string;
  createdAt: Date;
}

function checkedTypes(types: readonly string[] | undefined): string[] {
  if (types === undefined) return [];
  if (types.length === 0) {
    throw new WebhookInputError('types must name at least one event type (leave it out for every type)');
  }
  const unknown = types.find((type) => !isChangeEventType(type));
  if (unknown !== undefined) {
    throw new WebhookInputError(`unknown event type "${unknown}" (one of: ${CHANGE_EVENT_TYPES.join(', ')})`);
  }
  return [...new Set(types)];
}

function checkedDescription(description: string | null | undefined): string | null {
  if (description === undefined || description === null) return null;
  if (description.length > MAX_DESCRIPTION_LENGTH) {
    throw new WebhookInputError(`description must be at most ${MAX_DESCRIPTION_LENGTH} characters`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (!storableText(description) || /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(description)) {
    throw new WebhookInputError(
      'description must not contain control characters (other than tab and line breaks) or unpaired surrogates',
    );
  }
  return description;
}

export async function createWebhook(
  prisma: PrismaClient,
  input: CreateWebhookInput,
  settings: WebhookSettings,
): Promise<CreatedWebhook> {
  const types = checkedTypes(input.types);
  const description = checkedDescription(input.description);
  let url: URL;
  try {
    url = parseWebhookUrl(input.url, settings);
    await resolveWebhookHost(url, settings);
  } catch (error) {
    if (error instanceof WebhookUrlError) throw new WebhookInputError(error.message);
    throw error;
  }
  const organization = await resolveOrganization(prisma, input.org);
  const secret = newWebhookSecret();
  const created = await prisma.$transaction(async (tx) => {
    // One creation of an organization's webhooks at a time, so that the limit holds.
    await tx.$queryRaw`SELECT 1 AS locked FROM pg_advisory_xact_lock(hashtextextended(${`webhooks:${organization.id}`}, 0))`;
    if ((await tx.webhook.count({ where: { orgId: organization.id } })) >= MAX_WEBHOOKS_PER_ORGANIZATION) {
      throw new TooManyWebhooksError();
    }
    // Only events after its creation: the cursor starts at the organization's latest.
    const feed = await tx.changeFeed.findUnique({ where: { orgId: organization.id } });
    return tx.webhook.create({
      data: {
        id: randomUUID(),
        orgId: organization.id,
        url: url.href,
        types,
        description,
        secret,
        deliveredSeq: feed?.lastSeq ?? 0n,
      },
    });
  });
  return {
    id: created.id,
    orgId: created.orgId,
    url: created.url,
    types: created.types.length ? created.types : null,
    description: created.description,
    secret,
    createdAt: created.createdAt,
  };
}

export interface ListedWebhook {
  id: string;
  url: string;
  types: string[] | null;
  description: string | null;
  createdAt: Date;
  disabledAt: Date | null;
  disabledReason: string | null;
  failingSince: Date | null;
  nextAttemptAt: Date;
  lastDelivery: { time: Date; statusCode: number | null; error: string | null } | null;
}

export async function listWebhooks(prisma: PrismaClient, org: OrganizationSelector): Promise<ListedWebhook[]> {
  const organization = await resolveOrganization(prisma, org);
  const webhooks = await prisma.webhook.findMany({
    where: { orgId: organization.id },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    include: { deliveries: { orderBy: { id: 'desc' }, take: 1 } },
  });
  return webhooks.map((webhook) => {
    const [last] = webhook.deliveries;
    return {
      id: webhook.id,
      url: webhook.url,
      types: webhook.types.length ? webhook.types : null,
      description: webhook.description,
      createdAt: webhook.createdAt,
      disabledAt: webhook.disabledAt,
      disabledReason: webhook.disabledReason,
      failingSince: webhook.failingSince,
      nextAttemptAt: webhook.nextAttemptAt,
      lastDelivery: last ? { time: last.time, statusCode: last.statusCode, error: last.error } : null,
    };
  });
}

async function findWebhook(prisma: PrismaClient, org: OrganizationSelector, id: string) {
  const organization = await resolveOrganization(prisma, org);
  const webhook = isUuid(id) ? await prisma.webhook.findFirst({ where: { id, orgId: organization.id } }) : null;
  if (!webhook) throw new WebhookNotFoundError();
  return webhook;
}

export async function deleteWebhook(prisma: PrismaClient, org: OrganizationSelector, id: string): Promise<void> {
  const organization = await resolveOrganization(prisma, org);
  const { count } = isUuid(id)
    ? await prisma.webhook.deleteMany({ where: { id, orgId: organization.id } })
    : { count: 0 };
  if (count === 0) throw new WebhookNotFoundError();
}

export interface EnabledWebhook {
  /** false when the endpoint was not disabled (nothing changed) */
  enabled: boolean;
  /** retention removed events after where it stopped: it resumes after them (the feed has what it missed) */
  skippedExpiredEvents: boolean;
}

/**
 * Enables a disabled endpoint again: its failures are forgotten and delivery
 * resumes after the last event it got, or after the oldest event kept when
 * retention has removed some since. An enabled endpoint is left as it is (its
 * delivery may be under way).
 */
export async function enableWebhook(
  prisma: PrismaClient,
  org: OrganizationSelector,
  id: string,
): Promise<EnabledWebhook> {
  const webhook = await findWebhook(prisma, org, id);
  const [feed] = await prisma.$queryRaw<{ pruned: bigint }[]>`
    SELECT pruned_through AS pruned FROM change_feed WHERE org_id = ${webhook.orgId}::uuid`;
  const pruned = feed?.pruned ?? 0n;
  const resumed = await prisma.$executeRaw`
    UPDATE webhook SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL, attempt = 0,
      next_attempt_at = now(), leased_until = NULL, leased_by = NULL,
      delivered_seq = greatest(delivered_seq, ${pruned})
    WHERE id = ${webhook.id}::uuid AND disabled_at IS NOT NULL`;
  return { enabled: resumed === 1, skippedExpiredEvents: resumed === 1 && pruned > webhook.deliveredSeq };
}

/** The latest attempts, newest first. */
export async function listDeliveries(prisma: PrismaClient, org: OrganizationSelector, id: string) {
  const webhook = await findWebhook(prisma, org, id);
  return prisma.webhookDelivery.findMany({
    where: { webhookId: webhook.id },
    orderBy: { id: 'desc' },
    take: KEPT_DELIVERIES,
  });
}

/**
 * Sends a `webhook.test` event now, once (no retry, whatever the endpoint's
 * state), and answers how it went; the attempt is listed with the others.
 */
export async function sendTestEvent(
  prisma: PrismaClient,
  org: OrganizationSelector,
  id: string,
  settings: WebhookSettings,
  signal: AbortSignal,
): Promise<{ event: CloudEvent; outcome: SendOutcome }> {
  const webhook = await findWebhook(prisma, org, id);
  const event = cloudEvent({
    orgId: webhook.orgId,
    seq: '0',
    id: randomUUID(),
    type: TEST_EVENT_TYPE,
    subject: webhook.id,
    time: new Date(),
    data: { webhook_id: webhook.id, message: 'A test event: the endpoint receives and verifies the signed events.' },
  });
  const outcome = await deliverEvent(prisma, webhook, { event, seq: null, attempt: 1 }, settings, signal);
  return { event, outcome };
}
