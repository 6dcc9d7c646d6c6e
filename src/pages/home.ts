/**
 * The organization's home, `/{org}`: how its metrics stand (counts per
 * trust verdict and per lifecycle status, each a link into the catalog),
 * what changed lately (the change feed's newest events) and what needs
 * someone's attention.
 */
import type { CloudEvent } from '../changes/event.js';
import type { AttentionKind, MetricsNeedingAttention } from '../metric/attention.js';
import type { MetricFacets } from '../metric/facets.js';
import { type Html, html } from './html.js';
import { layout, orgPath, type Viewer } from './layout.js';

export interface HomeInput {
  viewer: Viewer;
  facets: MetricFacets;
  changes: CloudEvent[];
  attention: MetricsNeedingAttention;
}

const ATTENTION_TITLES: Record<AttentionKind, string> = {
  validation: 'Failing or stale validation evidence',
  objections: 'Open objections',
  do_not_use: 'Verdict do_not_use',
};

const text = (value: unknown) => (typeof value === 'string' ? value : '');

/** What an event says, in a few words (its metric is linked beside it). */
function changeSummary(event: CloudEvent): string {
  const data = event.data;
  const verdictOf = (value: unknown) => text((value as { verdict?: unknown } | null)?.verdict);
  switch (event.type) {
    case 'metric.created':
      return 'created';
    case 'metric.updated': {
      const fields = Array.isArray(data.changed_fields) ? data.changed_fields.map(text).join(', ') : '';
      return fields ? `updated: ${fields}` : 'updated';
    }
    case 'metric.removed':
      return 'removed';
    case 'metric.restored':
      return 'restored';
    case 'metric.lifecycle_changed':
      return `lifecycle ${text(data.from)} to ${text(data.to)}`;
    case 'metric.version_released':
      return `version ${text(data.definition_version)} ${text(data.status)}`;
    case 'metric.validated':
      return `validation ${text(data.status)}${data.source ? ` (${text(data.source)})` : ''}`;
    case 'metric.trust_changed':
      return `trust ${verdictOf(data.from)} to ${verdictOf(data.to)}`;
    case 'metric.discussion_changed':
      return `discussion: ${text(data.action)}`;
    default:
      return event.type;
  }
}

function countList(viewer: Viewer, label: string, values: MetricFacets['trust'], param: string): Html {
  return html`<ul class="cards" aria-label="${label}">${values.map((v) =>
    v.value === null
      ? html`<li><strong>${v.count}</strong> not evaluated yet</li>`
      : html`<li><a href="${orgPath(viewer, 'metrics')}?${param}=${encodeURIComponent(v.value)}"><strong>${v.count}</strong> ${param === 'trust' ? html`<span class="badge verdict-${v.value}">${v.label}</span>` : v.label}</a></li>`,
  )}</ul>`;
}

function changesList(viewer: Viewer, changes: CloudEvent[]): Html {
  if (!changes.length) return html`<p>Nothing has changed yet.</p>`;
  return html`<ol class="changes">${changes.map((event) => {
    const name = text(event.data.name) || text(event.data.key) || event.subject;
    const metric =
      event.type === 'metric.removed'
        ? html`${name}`
        : html`<a href="${orgPath(viewer, 'metrics', event.subject)}">${name}</a>`;
    return html`<li><time datetime="${event.time}">${event.time.slice(0, 16).replace('T', ' ')} UTC</time> ${metric}: ${changeSummary(event)}</li>`;
  })}</ol>`;
}

function attentionSection(viewer: Viewer, attention: MetricsNeedingAttention): Html {
  return html`${(Object.keys(ATTENTION_TITLES) as AttentionKind[]).map((kind) => {
    const { total, metrics } = attention[kind];
    return html`<h3>${ATTENTION_TITLES[kind]} (${total})</h3>
${
  metrics.length
    ? html`<ul>${metrics.map(
        (m) =>
          html`<li><a href="${orgPath(viewer, 'metrics', m.id)}">${m.name}</a> <code>${m.key}</code> <span class="badge verdict-${m.verdict}">${m.verdict}</span></li>`,
      )}</ul>${
        total > metrics.length
          ? html`<p class="muted">${metrics.length} of ${total} shown${
              kind === 'do_not_use'
                ? html`: <a href="${orgPath(viewer, 'metrics')}?trust=do_not_use">see them all</a>`
                : ''
            }.</p>`
          : ''
      }`
    : html`<p class="muted">None.</p>`
}`;
  })}`;
}

export function homePage({ viewer, facets, changes, attention }: HomeInput): Html {
  const main = html`<h1>${viewer.org.name}</h1>
<p><a href="${orgPath(viewer, 'metrics')}">Browse all ${facets.total} metrics</a></p>
<h2>Trust verdicts</h2>
${countList(viewer, 'Metrics per trust verdict', facets.trust, 'trust')}
<h2>Lifecycle</h2>
${countList(viewer, 'Metrics per lifecycle status', facets.lifecycle, 'lifecycle')}
<h2>Latest changes</h2>
${changesList(viewer, changes)}
<h2>Needs attention</h2>
${attentionSection(viewer, attention)}`;
  return layout({ title: viewer.org.name, viewer, main });
}
