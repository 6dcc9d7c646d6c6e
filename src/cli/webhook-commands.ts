/**
 * The CLI's webhook commands: create (the secret printed once), list and
 * delete an organization's endpoints, with the rules of the HTTP routes
 * (src/webhooks/endpoints.ts) and the server's WEBHOOK_* settings.
 */
import { createWebhook, deleteWebhook, enableWebhook, listWebhooks } from '../webhooks/endpoints.js';
import { DEFAULT_WEBHOOK_SETTINGS } from '../webhooks/settings.js';
import { type Command, iso, printTable, requiredString } from './support.js';

export const WEBHOOK_COMMANDS: Record<string, Command> = {
  'webhooks:create': {
    usage: 'webhooks:create --org ORG --url URL [--types a,b] [--description TEXT]',
    summary: 'create a webhook endpoint for the events after now and print its signing secret once',
    options: {
      org: { type: 'string' },
      url: { type: 'string' },
      types: { type: 'string' },
      description: { type: 'string' },
    },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const types = typeof values.types === 'string' ? values.types.split(',').map((type) => type.trim()) : undefined;
      const created = await createWebhook(
        await prisma(),
        {
          org: requiredString(values, 'org'),
          url: requiredString(values, 'url'),
          types: types?.filter(Boolean),
          description: typeof values.description === 'string' ? values.description : undefined,
        },
        deps.webhooks ?? DEFAULT_WEBHOOK_SETTINGS,
      );
      deps.out(`Created webhook ${created.id} to ${created.url} (${created.types?.join(', ') ?? 'every event type'})`);
      deps.out('Signing secret (shown this once, it will not be shown again; store it now):');
      deps.out(created.secret);
    },
  },
  'webhooks:list': {
    usage: 'webhooks:list --org ORG',
    summary: "list an organization's webhook endpoints, their state and last delivery (never their secrets)",
    options: { org: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const org = requiredString(values, 'org');
      const webhooks = await listWebhooks(await prisma(), org);
      if (webhooks.length === 0) {
        deps.out(`No webhooks in organization ${org}.`);
        return;
      }
      const header = ['id', 'url', 'types', 'created', 'state', 'last delivery'];
      const rows = webhooks.map((webhook) => {
        const last = webhook.lastDelivery;
        const state = webhook.disabledAt
          ? `disabled ${iso(webhook.disabledAt)}: ${webhook.disabledReason ?? ''}`
          : webhook.failingSince
            ? `failing since ${iso(webhook.failingSince)}`
            : 'ok';
        return [
          webhook.id,
          webhook.url,
          webhook.types?.join(',') ?? 'all',
          iso(webhook.createdAt),
          state,
          last ? `${iso(last.time)} ${last.statusCode ?? last.error ?? ''}` : '-',
        ];
      });
      printTable(deps.out, header, rows);
    },
  },
  'webhooks:delete': {
    usage: 'webhooks:delete --org ORG --id WEBHOOK_ID',
    summary: 'delete a webhook endpoint (its deliveries stop at once)',
    options: { org: { type: 'string' }, id: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const id = requiredString(values, 'id');
      await deleteWebhook(await prisma(), requiredString(values, 'org'), id);
      deps.out(`Deleted webhook ${id}`);
    },
  },
  'webhooks:enable': {
    usage: 'webhooks:enable --org ORG --id WEBHOOK_ID',
    summary: 'enable a disabled webhook endpoint again (delivery resumes where it stopped)',
    options: { org: { type: 'string' }, id: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const id = requiredString(values, 'id');
      const { enabled, skippedExpiredEvents } = await enableWebhook(await prisma(), requiredString(values, 'org'), id);
      if (!enabled) deps.out(`Webhook ${id} is not disabled: nothing to do.`);
      else if (skippedExpiredEvents) {
        deps.out(`Enabled webhook ${id}; events it missed were no longer kept: it resumes after the oldest kept.`);
      } else deps.out(`Enabled webhook ${id}; delivery resumes after the last event it got.`);
    },
  },
};
