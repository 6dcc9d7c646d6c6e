/**
 * A metric's challenges (docs/discussions.md, "In the catalog"): each with
 * its status, who raised it and why, and its decision; a form to raise one
 * (members) and, on an open one, forms to accept or reject it with a reason
 * (admins).
 */
import { MAX_REASON_CHARACTERS } from '../discussions/limits.js';
import type { ChallengeItemFragment, MetricChallengesQuery } from '../rest/operations.generated.js';
import { authorOf, type FieldError, textField, timeOf, VIEWERS_READ } from './discussion-fields.js';
import { type Html, html } from './html.js';
import { csrfField, isAdmin, layout, orgPath, type Viewer } from './layout.js';

export type ChallengePage = NonNullable<MetricChallengesQuery['challenges']>;

/** A refused post: which form, what was typed, why. */
export interface ChallengeFormState {
  /** 'open', or the id of the challenge being decided */
  form: string;
  reason: string;
  error: FieldError;
}

export interface ChallengesInput {
  viewer: Viewer;
  metric: { id: string; name: string };
  challenges: ChallengePage;
  state?: ChallengeFormState;
}

export function challengesPath(viewer: Viewer, metricId: string, page = 1): string {
  return orgPath(viewer, 'metrics', metricId, 'challenges') + (page > 1 ? `?page=${page}` : '');
}

function decisionForm(input: ChallengesInput, c: ChallengeItemFragment): Html {
  const { viewer } = input;
  const state = input.state?.form === c.id ? input.state : undefined;
  return html`<form method="post" action="${challengesPath(viewer, input.metric.id)}/${c.id}/decision">${csrfField(viewer)}
${textField({ name: 'reason', label: 'Reason for the decision', value: state?.reason ?? '', max: MAX_REASON_CHARACTERS, multiline: true, error: state?.error, idPrefix: `decide-${c.id}-` })}
<p class="actions"><button type="submit" name="decision" value="accepted">Accept</button> <button type="submit" name="decision" value="rejected">Reject</button></p>
</form>`;
}

function challenge(input: ChallengesInput, c: ChallengeItemFragment): Html {
  const open = c.status === 'open';
  return html`<li id="challenge-${c.id}"><article class="message" aria-labelledby="challenge-${c.id}-by">
<h3 id="challenge-${c.id}-by" class="message-by">${authorOf(c.raised_by)} <span class="muted">· ${timeOf(c.created_at)}</span>
<span class="badge status-${c.status}">${open ? 'Open' : c.decision === 'accepted' ? 'Accepted' : c.decision === 'rejected' ? 'Rejected' : 'Resolved'}</span></h3>
<p class="reason">${c.reason}</p>
${
  c.decision
    ? html`<p><strong>${c.decision === 'accepted' ? 'Accepted' : 'Rejected'}</strong>${c.decided_by ? html` by ${authorOf(c.decided_by)}` : ''}${
        c.decided_at ? html` · ${timeOf(c.decided_at)}` : ''
      }${c.decision_reason ? html`: ${c.decision_reason}` : ''}</p>`
    : ''
}
${open && isAdmin(input.viewer) ? decisionForm(input, c) : ''}
</article></li>`;
}

function pagination(input: ChallengesInput): Html {
  const { page, total_pages: pages } = input.challenges.pagination;
  if (pages <= 1) return html``;
  const path = (p: number) => challengesPath(input.viewer, input.metric.id, p);
  return html`<nav class="pagination" aria-label="Challenge pages">
${page > 1 ? html`<a href="${path(page - 1)}">Newer challenges</a>` : ''}
<span>Page ${page} of ${pages}</span>
${page < pages ? html`<a href="${path(page + 1)}">Older challenges</a>` : ''}
</nav>`;
}

export function challengesPage(input: ChallengesInput): Html {
  const { viewer, metric, challenges } = input;
  const openState = input.state?.form === 'open' ? input.state : undefined;
  const main = html`<p><a href="${orgPath(viewer, 'metrics', metric.id)}">${metric.name}</a></p>
<h1>Challenges</h1>
<p class="muted">A challenge disputes the metric's definition; an admin accepts or rejects it with a reason.</p>
<h2>Raise a challenge</h2>
${
  viewer.role === 'viewer'
    ? html`<p class="notice">${VIEWERS_READ}</p>`
    : html`<form method="post" action="${challengesPath(viewer, metric.id)}">${csrfField(viewer)}
${textField({ name: 'reason', label: 'Reason', value: openState?.reason ?? '', max: MAX_REASON_CHARACTERS, multiline: true, error: openState?.error, idPrefix: 'open-' })}
<p><button type="submit" class="primary">Raise challenge</button></p>
</form>`
}
<h2>All challenges (${challenges.pagination.total})</h2>
${
  challenges.items.length === 0
    ? html`<p>No challenges yet.</p>`
    : html`${pagination(input)}<ol class="messages">${challenges.items.map((c) => challenge(input, c))}</ol>${pagination(input)}`
}`;
  return layout({ title: `Challenges · ${metric.name}`, viewer, main });
}
