/**
 * A metric's versions compared (`/{org}/metrics/{id}/versions?from=&to=`):
 * what the registry records of each version (its definition version, status,
 * release, change summary and the approvals given to it) field by field, a
 * field of several lines as a line diff; and the form that picks the two
 * versions, shown on the metric's page too.
 */

import { type Html, html } from './html.js';
import { layout, type Viewer } from './layout.js';
import { type MetricDetail, metricPath } from './metric-data.js';
import { type DiffLine, type FieldDiff, fieldDiff } from './metric-diff.js';

type Version = MetricDetail['versionHistory'][number];

const FIELDS = ['Definition version', 'Status', 'Released at', 'Change summary', 'Approvals'] as const;

/** A version's fields as text. */
function versionFields(detail: MetricDetail, version: Version): Record<string, string> {
  const approvals = detail.approvals
    .filter((approval) => approval.version_id === version.id)
    .map(
      (approval) =>
        `${approval.decision} by ${approval.approver_role} at ${approval.decided_at}${approval.comment ? `: ${approval.comment}` : ''}`,
    );
  return {
    'Definition version': version.definition_version,
    Status: version.status,
    'Released at': version.released_at ?? 'not released',
    'Change summary': version.change_summary,
    Approvals: approvals.join('\n'),
  };
}

/** The version of `detail` named by its definition version; undefined when it has none of that name. */
export const versionNamed = (detail: MetricDetail, name: string) =>
  detail.versionHistory.find((version) => version.definition_version === name);

/** The GET form that picks two versions to compare (the newest `shown` versions offered). */
export function compareForm(
  viewer: Viewer,
  detail: MetricDetail,
  shown: readonly Version[],
  from?: string,
  to?: string,
) {
  if (shown.length < 2) return html``;
  const options = (selected: string | undefined) =>
    shown.map(
      (version) =>
        html`<option value="${version.definition_version}"${version.definition_version === selected ? html` selected` : ''}>${version.definition_version} (${version.status})</option>`,
    );
  const [newest, previous] = shown as [Version, Version];
  return html`<form method="get" action="${metricPath(viewer, detail.id, 'versions')}" class="compare">
<label for="compare-from">From version</label>
<select id="compare-from" name="from">${options(from ?? previous.definition_version)}</select>
<label for="compare-to">To version</label>
<select id="compare-to" name="to">${options(to ?? newest.definition_version)}</select>
<p><button type="submit">Compare versions</button></p>
</form>`;
}

const LINE_MARKS: Record<DiffLine['kind'], string> = { same: ' ', removed: '−', added: '+' };
const LINE_LABELS: Record<DiffLine['kind'], string> = { same: 'unchanged', removed: 'removed', added: 'added' };

function lines(diff: readonly DiffLine[]): Html {
  if (!diff.length) return html`<p class="muted">Empty in both versions.</p>`;
  return html`<pre class="diff">${diff.map(
    (line) =>
      html`<span class="diff-${line.kind}"><span class="visually-hidden">${LINE_LABELS[line.kind]}: </span><span aria-hidden="true">${LINE_MARKS[line.kind]} </span>${line.text}</span>\n`,
  )}</pre>`;
}

const shownValue = (value: string) => (value === '' ? html`<span class="muted">(empty)</span>` : html`${value}`);

function fieldRow(diff: FieldDiff): Html {
  const state = diff.changed ? html`<strong>changed</strong>` : html`<span class="muted">same</span>`;
  if (diff.lines)
    return html`<tr><th scope="row">${diff.field}</th><td>${state}</td><td colspan="2">${lines(diff.lines)}</td></tr>`;
  return html`<tr><th scope="row">${diff.field}</th><td>${state}</td><td>${shownValue(diff.before)}</td><td>${shownValue(diff.after)}</td></tr>`;
}

export function versionsPage(viewer: Viewer, detail: MetricDetail, from: Version, to: Version): Html {
  const diffs = fieldDiff(FIELDS, versionFields(detail, from), versionFields(detail, to));
  const changed = diffs.filter((diff) => diff.changed).length;
  const title = `${detail.name}: version ${from.definition_version} to ${to.definition_version}`;
  return layout({
    title,
    viewer,
    main: html`<p><a href="${metricPath(viewer, detail.id)}">Back to ${detail.name}</a></p>
<h1>${title}</h1>
<p>${changed === 0 ? 'The two versions record the same fields.' : `${changed} of ${diffs.length} fields differ.`}
The registry records each version's definition version, status, release, change summary and approvals;
the metric's current definition is on <a href="${metricPath(viewer, detail.id)}">its page</a>.</p>
<div class="table-wrap"><table>
<caption>Fields of version ${from.definition_version} and version ${to.definition_version}</caption>
<thead><tr><th scope="col">Field</th><th scope="col">Difference</th><th scope="col">Version ${from.definition_version}</th><th scope="col">Version ${to.definition_version}</th></tr></thead>
<tbody>${diffs.map(fieldRow)}</tbody>
</table></div>
<h2>Compare other versions</h2>
${compareForm(viewer, detail, detail.versionHistory.slice(0, MAX_OFFERED_VERSIONS), from.definition_version, to.definition_version)}`,
  });
}

/** The compare form offers the newest this many versions (any version can be named in the URL). */
export const MAX_OFFERED_VERSIONS = 50;
