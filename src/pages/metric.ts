/**
 * A metric's page, the contract's `canonical_url` (docs/catalog.md, "Metric
 * page"): who may use it and why, what it means, how it is computed, its
 * versions, approvals, evidence, relationships and lineage, its discussion,
 * its change history and how to read it from the APIs. Sections in a fixed
 * order, each an h2 listed in the table of contents; every list is the
 * newest items only (the reads bound them).
 */
import type { CloudEvent } from '../changes/event.js';
import type { ThreadRow } from '../discussions/read.js';
import { type Html, html } from './html.js';
import { layout, orgPath, type Viewer } from './layout.js';
import { renderMarkdown } from './markdown.js';
import { type MetricContract, type MetricDetail, type MetricPageData, metricPath } from './metric-data.js';
import { trustSentences, VERDICT_LABELS } from './metric-trust.js';
import { compareForm, MAX_OFFERED_VERSIONS } from './metric-versions.js';

/** The version history lists the newest this many versions. */
export const LISTED_VERSIONS = 20;

const SECTIONS = [
  ['trust', 'Trust'],
  ['definition', 'Business definition'],
  ['computation', 'Computation'],
  ['lifecycle', 'Lifecycle and ownership'],
  ['versions', 'Versions'],
  ['approvals', 'Approvals'],
  ['validation', 'Validation evidence'],
  ['relationships', 'Relationships and lineage'],
  ['discussion', 'Discussion'],
  ['changes', 'Change history'],
  ['use', 'How to use it'],
] as const;

type SectionId = (typeof SECTIONS)[number][0];

function section(id: SectionId, body: Html): Html {
  const title = SECTIONS.find(([name]) => name === id)?.[1] as string;
  return html`<section aria-labelledby="${id}-title"><h2 id="${id}-title">${title}</h2>${body}</section>`;
}

const toc = () =>
  html`<nav aria-label="On this page" class="toc"><h2 class="toc-title">On this page</h2><ol>${SECTIONS.map(
    ([id, title]) => html`<li><a href="#${id}-title">${title}</a></li>`,
  )}</ol></nav>`;

/** A time as the page shows it: the instant, readable, in UTC, in a <time> element. */
function when(value: string | Date | null | undefined): Html {
  if (value === null || value === undefined) return html`<span class="muted">never</span>`;
  const date = typeof value === 'string' ? new Date(value) : value;
  return html`<time datetime="${date.toISOString()}">${date.toISOString().replace('T', ' ').slice(0, 16)} UTC</time>`;
}

const verdictBadge = (verdict: string | null | undefined) =>
  verdict
    ? html`<span class="badge verdict-${verdict}">${VERDICT_LABELS[verdict] ?? verdict}</span>`
    : html`<span class="muted">not evaluated yet</span>`;

const none = (text: string) => html`<p class="muted">${text}</p>`;

/** A free-form JSON member (dimensions, source references) as text: an object's members as `name: value`. */
function jsonText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return Object.entries(value)
      .map(([name, member]) => `${name}: ${typeof member === 'string' ? member : JSON.stringify(member)}`)
      .join(', ');
  }
  return JSON.stringify(value);
}

function jsonList(value: unknown, empty: string): Html {
  if (value === null || value === undefined || (Array.isArray(value) && value.length === 0)) return none(empty);
  if (!Array.isArray(value)) return html`<pre>${JSON.stringify(value, null, 2)}</pre>`;
  return html`<ul>${value.map((item) => html`<li>${jsonText(item)}</li>`)}</ul>`;
}

function header(detail: MetricDetail, contract: MetricContract): Html {
  return html`<h1>${detail.name}</h1>
<dl class="facts">
<dt>Key</dt><dd><code>${detail.key}</code></dd>
<dt>Also called</dt><dd>${detail.aliases.length ? detail.aliases.join(', ') : html`<span class="muted">no aliases</span>`}</dd>
<dt>Verdict</dt><dd>${verdictBadge(contract.trust.verdict)}</dd>
<dt>Lifecycle</dt><dd>${detail.lifecycle_status}</dd>
</dl>
${detail.description ? html`<p>${detail.description}</p>` : ''}`;
}

function trustSection(viewer: Viewer, detail: MetricDetail, contract: MetricContract, now: Date): Html {
  const { trust } = contract;
  const sentences = trustSentences(viewer, {
    verdict: trust.verdict,
    reasons: trust.reasons,
    preferredMetricId: trust.preferred_metric_id,
    untrustedInputs: trust.untrusted_inputs,
    lifecycleStatus: detail.lifecycle_status,
    policyTier: detail.policy_tier,
    openObjections: contract.discourse_summary?.open_objections_count ?? 0,
    lastValidatedAt: contract.last_validated_at,
    now,
  });
  return section(
    'trust',
    html`<p>Verdict: ${verdictBadge(trust.verdict)}</p>
${
  sentences.length
    ? html`<ul class="reasons">${sentences.map((sentence, i) => html`<li data-reason="${trust.reasons[i]}">${sentence}</li>`)}</ul>`
    : html`<p>Nothing stands against using this metric: it is approved or released, validated recently and undisputed.</p>`
}`,
  );
}

function definitionSection(contract: MetricContract): Html {
  const bd = contract.business_definition;
  const parts = [
    ['Included', bd.included],
    ['Excluded', bd.excluded],
    ['Time window', bd.time_window],
    ['Caveats', bd.caveats],
    ['Earlier description', bd.legacy_description],
  ].filter(([, text]) => text !== '');
  return section(
    'definition',
    parts.length
      ? html`<dl class="facts">${parts.map(([name, text]) => html`<dt>${name}</dt><dd>${text}</dd>`)}</dl>`
      : html`<p class="notice">No business definition is recorded for this metric: what it includes and excludes is not written down. Ask its owner team before relying on it.</p>`,
  );
}

function computationSection(detail: MetricDetail): Html {
  return section(
    'computation',
    html`<h3>SQL</h3>
${detail.sql_expression ? html`<pre><code>${detail.sql_expression}</code></pre>` : none('No SQL expression is recorded.')}
<h3>Grains</h3>
${
  detail.grains.length
    ? html`<p>${detail.grains.join(', ')}${detail.default_grain ? html` (default: ${detail.default_grain})` : ''}</p>`
    : none('No grains are recorded.')
}
<h3>Dimensions</h3>
${jsonList(detail.dimensions, 'No dimensions are recorded.')}
<h3>Filters</h3>
${detail.filters.length ? html`<ul>${detail.filters.map((filter) => html`<li><code>${filter}</code></li>`)}</ul>` : none('No filters are recorded.')}
<h3>Source references</h3>
${jsonList(detail.source_refs, 'No source references are recorded.')}`,
  );
}

function lifecycleSection(detail: MetricDetail): Html {
  const g = detail.governance_facts;
  return section(
    'lifecycle',
    html`<dl class="facts">
<dt>Lifecycle status</dt><dd>${detail.lifecycle_status}</dd>
<dt>Owner team</dt><dd>${detail.owner_team || html`<span class="muted">none recorded</span>`}${detail.owner_display_name ? ` (${detail.owner_display_name})` : ''}</dd>
<dt>Policy tier</dt><dd>${detail.policy_tier}</dd>
<dt>Scope</dt><dd>${detail.scope}</dd>
<dt>Type</dt><dd>${detail.metric_type}</dd>
<dt>Tags</dt><dd>${detail.tags.length ? detail.tags.join(', ') : html`<span class="muted">none</span>`}</dd>
<dt>Effective</dt><dd>${g.effective_from ? html`from ${when(g.effective_from)}` : html`<span class="muted">no start recorded</span>`}${g.effective_to ? html`, until ${when(g.effective_to)}` : ''}</dd>
<dt>Next review</dt><dd>${g.next_review_date ? when(g.next_review_date) : html`<span class="muted">none scheduled</span>`}</dd>
<dt>Created</dt><dd>${when(detail.created_at)}</dd>
<dt>Updated</dt><dd>${when(detail.updated_at)}</dd>
</dl>`,
  );
}

function versionsSection(viewer: Viewer, detail: MetricDetail, contract: MetricContract): Html {
  const current = contract.current_approved_version;
  const versions = detail.versionHistory;
  const listed = versions.slice(0, LISTED_VERSIONS);
  return section(
    'versions',
    html`<p>Current approved version: ${
      current
        ? html`<strong>${current.definition_version}</strong>, released ${when(current.released_at)}`
        : html`<span class="muted">none: no version is approved or released</span>`
    }.</p>
${
  versions.length
    ? html`<div class="table-wrap"><table>
<caption>Version history, newest first${versions.length > listed.length ? html` (the newest ${listed.length} of ${versions.length})` : ''}</caption>
<thead><tr><th scope="col">Version</th><th scope="col">Status</th><th scope="col">Released</th><th scope="col">Change summary</th></tr></thead>
<tbody>${listed.map(
        (version) =>
          html`<tr><th scope="row">${version.definition_version}</th><td>${version.status}</td><td>${when(version.released_at)}</td><td>${version.change_summary || html`<span class="muted">none</span>`}</td></tr>`,
      )}</tbody></table></div>
${compareForm(viewer, detail, versions.slice(0, MAX_OFFERED_VERSIONS))}`
    : none('No versions are recorded.')
}`,
  );
}

function approvalsSection(detail: MetricDetail): Html {
  const versionOf = new Map(detail.versionHistory.map((version) => [version.id, version.definition_version]));
  const listed = detail.approvals.slice(0, LISTED_VERSIONS);
  return section(
    'approvals',
    listed.length
      ? html`<div class="table-wrap"><table>
<caption>Approvals, newest first${detail.approvals.length > listed.length ? html` (the newest ${listed.length} of ${detail.approvals.length})` : ''}</caption>
<thead><tr><th scope="col">Decided</th><th scope="col">Decision</th><th scope="col">Approver role</th><th scope="col">Version</th><th scope="col">Comment</th></tr></thead>
<tbody>${listed.map(
          (approval) =>
            html`<tr><td>${when(approval.decided_at)}</td><td>${approval.decision}</td><td>${approval.approver_role}</td><td>${
              approval.version_id ? (versionOf.get(approval.version_id) ?? '') : html`<span class="muted">none</span>`
            }</td><td>${approval.comment}</td></tr>`,
        )}</tbody></table></div>`
      : none('No approvals are recorded.'),
  );
}

function validationSection(data: MetricPageData): Html {
  const { runs, total } = data.validations;
  return section(
    'validation',
    runs.length
      ? html`<p>${total} validation run${total === 1 ? '' : 's'} recorded${total > runs.length ? html`; the newest ${runs.length} are listed` : ''}.</p>
<ol class="timeline">${runs.map(
          (run) =>
            html`<li><span class="badge run-${run.status}">${run.status}</span> ${when(run.ranAt)}${run.source ? html` <span class="muted">from ${run.source}</span>` : ''}${run.details ? html`<p>${run.details}</p>` : ''}</li>`,
        )}</ol>`
      : none('No validation run is recorded for this metric.'),
  );
}

const RELATIONS: Record<string, string> = {
  variant_of: 'is a variant of',
  supersedes: 'supersedes',
  related_to: 'is related to',
  conflicts_with: 'conflicts with',
};

function metricItem(viewer: Viewer, metric: { id: string; key: string; name: string }, verdict?: string | null) {
  return html`<a href="${metricPath(viewer, metric.id)}">${metric.name}</a> <code>${metric.key}</code>${
    verdict === undefined ? '' : html` ${verdictBadge(verdict)}`
  }`;
}

function relationshipsSection(viewer: Viewer, data: MetricPageData): Html {
  const { detail, contract, dependents } = data;
  const inputs = contract.inputs;
  const candidates = contract.requires_disambiguation?.candidates ?? [];
  return section(
    'relationships',
    html`<h3>Relationships</h3>
${
  detail.relationships.length
    ? html`<ul>${detail.relationships.map(
        (r) =>
          html`<li>This metric ${RELATIONS[r.kind] ?? r.kind} ${metricItem(viewer, { id: r.target_metric_id, key: r.target.key, name: r.target.name })}</li>`,
      )}</ul>`
    : none('This metric names no related metric.')
}
${
  candidates.length
    ? html`<p>Metrics a reader may confuse with this one: ${candidates.map(
        (c, i) =>
          html`${i > 0 ? ', ' : ''}${metricItem(viewer, { id: c.metric_id, key: c.key, name: c.name })} (${c.relation})`,
      )}.</p>`
    : ''
}
<h3>Inputs</h3>
${
  inputs === null
    ? none('The inputs could not be read.')
    : inputs.length
      ? html`<ol>${inputs.map((input) => html`<li>${metricItem(viewer, input, input.verdict)}</li>`)}</ol>`
      : none('This metric is computed from no other metric.')
}
<h3>Dependents</h3>
${
  dependents.nodes.length
    ? html`<p>${dependents.total} metric${dependents.total === 1 ? ' is' : 's are'} computed from this one${
        dependents.total > dependents.nodes.length ? html`; the first ${dependents.nodes.length} are listed` : ''
      }.</p><ul>${dependents.nodes.map((node) => html`<li>${metricItem(viewer, node, node.verdict)}</li>`)}</ul>`
    : none('No metric is computed from this one.')
}`,
  );
}

function threadItem(viewer: Viewer, thread: ThreadRow): Html {
  return html`<li><a href="${orgPath(viewer, 'threads', thread.id)}">${thread.title || 'Untitled thread'}</a>
<span class="muted">${thread.intent}, ${thread.resolutionStatus}, ${thread.messageCount} message${thread.messageCount === 1 ? '' : 's'}, opened ${when(thread.createdAt)}</span></li>`;
}

function discussionSection(viewer: Viewer, data: MetricPageData): Html {
  const notes = data.contract.agent_context_notes ?? [];
  const { items, total } = data.threads;
  const id = data.detail.id;
  return section(
    'discussion',
    html`<p class="actions"><a href="${metricPath(viewer, id, 'threads', 'new')}">Start a discussion</a>
<a href="${metricPath(viewer, id, 'challenges')}">Challenges</a>${
      data.contract.open_challenges_count
        ? html` <span class="muted">(${data.contract.open_challenges_count} open)</span>`
        : ''
    }</p>
<h3>Pinned notes</h3>
${
  notes.length
    ? notes.map(
        (note) =>
          html`<article class="message"><p class="muted">${note.author_display_name}, ${note.intent}, pinned ${when(note.pinned_at)}
(<a href="${orgPath(viewer, 'threads', note.thread_id)}">its thread</a>)</p><div class="body">${renderMarkdown(note.body)}</div></article>`,
      )
    : none('No note is pinned.')
}
<h3>Threads</h3>
${
  items.length
    ? html`<p>${total} thread${total === 1 ? '' : 's'}${total > items.length ? html`; the newest ${items.length} are listed` : ''}.</p>
<ul class="threads">${items.map((thread) => threadItem(viewer, thread))}</ul>`
    : none('No one has discussed this metric yet.')
}`,
  );
}

/** A change event in a sentence of its own data (the feed's `data` members, README "Change feed"). */
function eventText(event: CloudEvent): Html {
  const data = event.data;
  const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value ?? null));
  switch (event.type) {
    case 'metric.updated':
      return html`Updated: ${Array.isArray(data.changed_fields) ? data.changed_fields.map(text).join(', ') : 'fields changed'}.`;
    case 'metric.lifecycle_changed':
      return html`Lifecycle changed from ${text(data.from)} to ${text(data.to)}.`;
    case 'metric.version_released':
      return html`Version ${text(data.definition_version)} became ${text(data.status)}.`;
    case 'metric.trust_changed':
      return html`Verdict changed to ${text(data.verdict)}${
        Array.isArray(data.reasons) && data.reasons.length ? ` (${data.reasons.map(text).join(', ')})` : ''
      }.`;
    case 'metric.validated':
      return html`Validation evidence recorded${data.status === undefined ? '' : `: ${text(data.status)}`}.`;
    case 'metric.discussion_changed':
      return html`Discussion: ${text(data.action).replace(/_/g, ' ')}${data.intent === undefined ? '' : ` (${text(data.intent)})`}.`;
    default:
      return html`${event.type.replace(/^metric\./, '').replace(/_/g, ' ')}.`;
  }
}

function changesSection(data: MetricPageData): Html {
  return section(
    'changes',
    data.history.length
      ? html`<p>The newest ${data.history.length} events of the change feed about this metric, newest first.</p>
<ol class="timeline">${data.history.map(
          (event) => html`<li>${when(event.time)} <code>${event.type}</code> ${eventText(event)}</li>`,
        )}</ol>`
      : none('The change feed holds no event about this metric.'),
  );
}

function useSection(detail: MetricDetail, baseUrl: string): Html {
  const base = baseUrl.replace(/\/+$/, '');
  const query = `query($id: ID!) { metric(id: $id) { name trust { verdict reasons } businessDefinition { included excluded } sqlExpression } }`;
  const body = JSON.stringify({ query, variables: { id: detail.id } });
  const call = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'get_metric_contract', arguments: { id: detail.id } },
  });
  return section(
    'use',
    html`<p>Read this metric with an API key of your organization (scope <code>canonical-metric-api:read</code>);
the <a href="/docs">API reference</a> says more.</p>
<h3>REST</h3>
<pre><code>curl -H 'Authorization: Bearer &lt;your API key&gt;' \\
  ${base}/api/v1/metrics/${detail.id}/contract</code></pre>
<h3>GraphQL</h3>
<pre><code>curl -X POST ${base}/graphql \\
  -H 'Authorization: Bearer &lt;your API key&gt;' -H 'Content-Type: application/json' \\
  -d '${body}'</code></pre>
<h3>MCP</h3>
<p>Connect an MCP client to <code>${base}/mcp</code> with the header <code>Authorization: Bearer &lt;your API key&gt;</code>, then call the tool <code>get_metric_contract</code>:</p>
<pre><code>${call}</code></pre>`,
  );
}

export function metricPage(viewer: Viewer, data: MetricPageData, baseUrl: string, now: Date): Html {
  const { detail, contract } = data;
  return layout({
    title: detail.name,
    viewer,
    main: html`<p><a href="${orgPath(viewer, 'metrics')}">All metrics</a></p>
${header(detail, contract)}
${toc()}
${trustSection(viewer, detail, contract, now)}
${definitionSection(contract)}
${computationSection(detail)}
${lifecycleSection(detail)}
${versionsSection(viewer, detail, contract)}
${approvalsSection(detail)}
${validationSection(data)}
${relationshipsSection(viewer, data)}
${discussionSection(viewer, data)}
${changesSection(data)}
${useSection(detail, baseUrl)}`,
  });
}
