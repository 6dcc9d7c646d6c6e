/**
 * The organization's settings, `/{org}/settings`, for its admins and
 * owners: its API keys, service tokens and webhooks as listed by the JSON
 * admin API (never a secret: only their prefixes are stored in the clear).
 * Creating and revoking them is the JSON admin API's (docs/api.md).
 */
import type { ApiKeySummary } from '../admin/api-keys.js';
import type { ServiceTokenSummary } from '../admin/service-tokens.js';
import type { ListedWebhook } from '../webhooks/endpoints.js';
import { type Html, html } from './html.js';
import { layout, type Viewer } from './layout.js';

export interface SettingsInput {
  viewer: Viewer;
  apiKeys: ApiKeySummary[];
  serviceTokens: ServiceTokenSummary[];
  webhooks: ListedWebhook[];
}

const when = (date: Date | null) =>
  date ? html`<time datetime="${date.toISOString()}">${date.toISOString().slice(0, 10)}</time>` : html`never`;

const state = (revokedAt: Date | null) => (revokedAt ? html`revoked ${when(revokedAt)}` : 'active');

function credentialTable(
  caption: string,
  rows: {
    name: string;
    prefix: string;
    scopes: string[];
    createdAt: Date;
    lastUsedAt: Date | null;
    revokedAt: Date | null;
  }[],
): Html {
  if (!rows.length) return html`<p>None yet.</p>`;
  return html`<div class="table-wrap"><table>
<caption>${caption}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th></tr></thead>
<tbody>${rows.map(
    (row) => html`<tr><td>${row.name}</td><td><code>${row.prefix}</code></td><td>${row.scopes.join(', ')}</td>
<td>${when(row.createdAt)}</td><td>${when(row.lastUsedAt)}</td><td>${state(row.revokedAt)}</td></tr>`,
  )}</tbody>
</table></div>`;
}

function webhookTable(webhooks: ListedWebhook[]): Html {
  if (!webhooks.length) return html`<p>None yet.</p>`;
  return html`<div class="table-wrap"><table>
<caption>Webhook endpoints</caption>
<thead><tr><th scope="col">Address</th><th scope="col">Events</th><th scope="col">Description</th><th scope="col">State</th><th scope="col">Last delivery</th></tr></thead>
<tbody>${webhooks.map(
    (w) => html`<tr><td><code>${w.url}</code></td><td>${w.types ? w.types.join(', ') : 'every event'}</td>
<td>${w.description ?? ''}</td>
<td>${w.disabledAt ? html`disabled ${when(w.disabledAt)}${w.disabledReason ? `: ${w.disabledReason}` : ''}` : w.failingSince ? html`failing since ${when(w.failingSince)}` : 'enabled'}</td>
<td>${w.lastDelivery ? html`${when(w.lastDelivery.time)} ${w.lastDelivery.statusCode ?? w.lastDelivery.error ?? ''}` : 'none'}</td></tr>`,
  )}</tbody>
</table></div>`;
}

export function settingsPage({ viewer, apiKeys, serviceTokens, webhooks }: SettingsInput): Html {
  const main = html`<h1>Keys, tokens and webhooks</h1>
<p>What reads and writes ${viewer.org.name}'s registry. Secrets are shown once, when created, and never again.
Create and revoke them with the JSON admin API while signed in as an admin: <code>POST /api/api-keys</code> and
<code>DELETE /api/api-keys/{key_id}</code>, <code>POST /api/service-tokens</code> and
<code>DELETE /api/service-tokens/{token_id}</code>, <code>POST /api/webhooks</code> and
<code>DELETE /api/webhooks/{webhook_id}</code> (see the <a href="/docs">API reference</a>).</p>
<h2>API keys</h2>
${credentialTable(
  'API keys, newest first',
  apiKeys.map((k) => ({ ...k, prefix: k.keyPrefix })),
)}
<h2>Service tokens</h2>
${credentialTable(
  'Service tokens, newest first',
  serviceTokens.map((s) => ({ ...s, prefix: s.tokenPrefix })),
)}
<h2>Webhooks</h2>
${webhookTable(webhooks)}`;
  return layout({ title: 'Keys, tokens and webhooks', viewer, main });
}
