/**
 * The catalog, `/{org}/metrics`: the organization's metrics searched with
 * the API's ranking (and its corrections) or listed by name, narrowed by
 * facets in a GET form that works without the script, a page at a time.
 */
import type { FacetValue, MetricFacets } from '../metric/facets.js';
import type { SearchHints } from '../metric/list-page.js';
import { type Html, html } from './html.js';
import { layout, orgPath, type Viewer } from './layout.js';

/** The catalog's query as the page reads it (the names of its GET form's fields). */
export interface CatalogQuery {
  q: string | null;
  lifecycle: string | null;
  scope: string | null;
  domain: string | null;
  owner: string | null;
  trust: string | null;
  page: number;
  pageSize: number;
}

export interface CatalogRow {
  id: string;
  name: string;
  key: string;
  lifecycle: string;
  scope: string;
  /** the domain's name; null without a domain */
  domain: string | null;
  ownerTeam: string;
  verdict: string;
}

export interface CatalogInput {
  viewer: Viewer;
  query: CatalogQuery;
  /** whether the page is of the query's search (relevance) rather than the list by name */
  searched: boolean;
  rows: CatalogRow[];
  total: number;
  hints: SearchHints | null;
  facets: MetricFacets;
  /** every value of each facet offered (counts of 0 included), in the order shown */
  options: Record<FacetField, FacetValue[]>;
  defaultPageSize: number;
}

export type FacetField = 'lifecycle' | 'scope' | 'domain' | 'owner' | 'trust';

const FACET_LABELS: Record<FacetField, string> = {
  lifecycle: 'Lifecycle',
  scope: 'Scope',
  domain: 'Domain',
  owner: 'Owner team',
  trust: 'Trust verdict',
};

/** The catalog's address for `query` with `changes` (page 1 unless a page is given; defaults left out). */
export function catalogHref(
  viewer: Viewer,
  query: CatalogQuery,
  changes: Partial<CatalogQuery>,
  defaultPageSize: number,
): string {
  const next = { ...query, page: 1, ...changes };
  const params = new URLSearchParams();
  for (const name of ['q', 'lifecycle', 'scope', 'domain', 'owner', 'trust'] as const) {
    const value = next[name];
    if (value) params.set(name, value);
  }
  if (next.page > 1) params.set('page', String(next.page));
  if (next.pageSize !== defaultPageSize) params.set('pageSize', String(next.pageSize));
  const search = params.toString();
  return `${orgPath(viewer, 'metrics')}${search ? `?${search}` : ''}`;
}

function facetSelect(field: FacetField, values: FacetValue[], selected: string | null): Html {
  const id = `facet-${field}`;
  return html`<div class="facet"><label for="${id}">${FACET_LABELS[field]}</label>
<select id="${id}" name="${field}">
<option value="">Any</option>
${values.map(
  (v) =>
    html`<option value="${v.value ?? ''}"${v.value === selected ? html` selected` : ''}>${v.label ?? v.value} (${v.count})</option>`,
)}
</select></div>`;
}

/** The query's words as the search read them: each corrected word replaced by its correction. */
function correctedQuery(q: string, hints: SearchHints): string {
  const corrections = new Map(hints.corrected.map((c) => [c.from.toLowerCase(), c.to]));
  return q.replace(/[\p{L}\p{N}]+/gu, (word) => corrections.get(word.toLowerCase()) ?? word);
}

function searchNotes(input: CatalogInput): Html {
  const { query, hints, viewer, defaultPageSize } = input;
  if (!query.q || !hints) return html``;
  const parts: Html[] = [];
  if (hints.corrected.length) {
    parts.push(
      html`<p class="notice" role="status">Showing results for <strong>${correctedQuery(query.q, hints)}</strong> (you searched for ${query.q}).</p>`,
    );
  }
  if (hints.didYouMean.length) {
    parts.push(
      html`<p>Did you mean: ${hints.didYouMean.map(
        (suggestion, i) =>
          html`${i ? ', ' : ''}<a href="${catalogHref(viewer, query, { q: suggestion }, defaultPageSize)}">${suggestion}</a>`,
      )}?</p>`,
    );
  }
  return html`${parts}`;
}

function table(input: CatalogInput): Html {
  const { viewer, rows } = input;
  return html`<div class="table-wrap"><table>
<caption>${input.searched ? 'Metrics by relevance' : 'Metrics by name'}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Lifecycle</th><th scope="col">Scope</th><th scope="col">Domain</th><th scope="col">Owner team</th><th scope="col">Trust</th></tr></thead>
<tbody>
${rows.map(
  (row) => html`<tr>
<td><a href="${orgPath(viewer, 'metrics', row.id)}">${row.name}</a></td>
<td><code>${row.key}</code></td>
<td>${row.lifecycle}</td>
<td>${row.scope}</td>
<td>${row.domain ?? html`<span class="muted">none</span>`}</td>
<td>${row.ownerTeam}</td>
<td><span class="badge verdict-${row.verdict}">${row.verdict}</span></td>
</tr>`,
)}
</tbody>
</table></div>`;
}

function pagination(input: CatalogInput): Html {
  const { query, total, viewer, defaultPageSize } = input;
  const pages = Math.max(1, Math.ceil(total / query.pageSize));
  if (pages <= 1 && query.page <= 1) return html``;
  const href = (page: number) => catalogHref(viewer, query, { page }, defaultPageSize);
  // The current page, its neighbours, the first and the last: a bounded number of links at any depth.
  const shown = [...new Set([1, query.page - 2, query.page - 1, query.page, query.page + 1, query.page + 2, pages])]
    .filter((page) => page >= 1 && page <= pages)
    .sort((a, b) => a - b);
  return html`<nav class="pagination" aria-label="Pages">
${query.page > 1 ? html`<a rel="prev" href="${href(Math.min(query.page - 1, pages))}">Previous</a>` : ''}
<ul class="pages">${shown.map(
    (page, i) =>
      html`${i && page - (shown[i - 1] as number) > 1 ? html`<li aria-hidden="true">…</li>` : ''}<li>${
        page === query.page
          ? html`<a aria-current="page" href="${href(page)}">Page ${page}</a>`
          : html`<a href="${href(page)}">Page ${page}</a>`
      }</li>`,
  )}</ul>
${query.page < pages ? html`<a rel="next" href="${href(query.page + 1)}">Next</a>` : ''}
</nav>`;
}

function results(input: CatalogInput): Html {
  const { query, rows, total, viewer } = input;
  if (!rows.length) {
    const filtered = Boolean(query.q || query.lifecycle || query.scope || query.domain || query.owner || query.trust);
    if (total > 0) {
      return html`<p>There are only ${Math.ceil(total / query.pageSize)} pages of results.
<a href="${catalogHref(viewer, query, { page: 1 }, input.defaultPageSize)}">Go to the first page</a>.</p>`;
    }
    if (!filtered) {
      return html`<p>This organization has no metrics yet. Apply a registry document to add them (see the API reference).</p>`;
    }
    return html`<p>No metric matches ${query.q ? html`<strong>${query.q}</strong>` : 'these filters'}.
Try other words, fewer filters, or <a href="${orgPath(viewer, 'metrics')}">show every metric</a>.</p>`;
  }
  const first = (query.page - 1) * query.pageSize + 1;
  return html`<p role="status">${total} ${total === 1 ? 'metric' : 'metrics'}, ${first} to ${first + rows.length - 1} shown, sorted by ${input.searched ? 'relevance' : 'name'}.</p>
${table(input)}
${pagination(input)}`;
}

export function catalogPage(input: CatalogInput): Html {
  const { viewer, query, options } = input;
  const main = html`<h1>Metrics</h1>
<form class="catalog-filters" method="get" action="${orgPath(viewer, 'metrics')}" role="search" data-autosubmit>
<div class="facet facet-search"><label for="catalog-q">Search</label>
<input id="catalog-q" type="search" name="q" value="${query.q ?? ''}" maxlength="256"></div>
${(Object.keys(FACET_LABELS) as FacetField[]).map((field) => facetSelect(field, options[field], query[field]))}
${query.pageSize !== input.defaultPageSize ? html`<input type="hidden" name="pageSize" value="${query.pageSize}">` : ''}
<div class="facet-actions"><button type="submit" class="primary">Apply</button>
<a href="${orgPath(viewer, 'metrics')}">Clear</a></div>
</form>
<p class="muted">Counts are of all ${input.facets.total} metrics of the organization; the trust counts and filter use each verdict as last announced.</p>
${searchNotes(input)}
${results(input)}`;
  return layout({ title: query.q ? `Metrics matching ${query.q}` : 'Metrics', viewer, main });
}
