/**
 * A thread's page (docs/discussions.md, "In the catalog"): the metric it is
 * about, its intent and status, its messages oldest first (a deleted one in
 * its place, without its body; bodies as rendered Markdown, raw HTML shown as
 * text), and the forms the viewer's role allows: reply (members), edit and
 * delete (the message's author or an admin), resolve and reopen (the thread's
 * author or an admin), pin and unpin as an agent context note (admins).
 * Every form posts and comes back here; nothing needs the script.
 */
import { MAX_BODY_CHARACTERS } from '../discussions/limits.js';
import type { DiscussionMessageItemFragment, DiscussionThreadByIdQuery } from '../rest/operations.generated.js';
import { authorOf, type FieldError, intentLabel, textField, timeOf, VIEWERS_READ } from './discussion-fields.js';
import { type Html, html } from './html.js';
import { csrfField, isAdmin, layout, orgPath, type Viewer } from './layout.js';
import { renderMarkdown } from './markdown.js';

export type ThreadView = NonNullable<DiscussionThreadByIdQuery['thread']>;

/** A refused reply or edit: the form shown again with what was typed. */
export interface ThreadFormState {
  form: 'reply' | 'edit';
  /** the message being edited */
  messageId?: string;
  body: string;
  error: FieldError;
}

export interface ThreadPageInput {
  viewer: Viewer;
  /** the viewer's user id: what they wrote is theirs to edit */
  userId: string;
  metric: { id: string; name: string };
  thread: ThreadView;
  /** the message whose edit form is open (`?edit=`) */
  editing: string | null;
  state?: ThreadFormState;
}

/** The thread's page in the viewer's organization, at message page `page` (1 is omitted). */
export function threadPath(viewer: Viewer, threadId: string, page = 1): string {
  return orgPath(viewer, 'threads', threadId) + (page > 1 ? `?page=${page}` : '');
}

function writtenBy(userId: string, author: { kind: string; id: string } | null): boolean {
  return author?.kind === 'user' && author.id === userId;
}

function postButton(viewer: Viewer, action: string, label: string, extra?: Html): Html {
  return html`<form method="post" action="${action}" class="inline">${csrfField(viewer)}${extra ?? ''}<button type="submit">${label}</button></form>`;
}

function message(input: ThreadPageInput, m: DiscussionMessageItemFragment, page: number): Html {
  const { viewer } = input;
  const base = orgPath(viewer, 'threads', input.thread.id, 'messages', m.id);
  const deleted = m.deleted_at !== null;
  const mayChange = !deleted && viewer.role !== 'viewer' && (writtenBy(input.userId, m.author) || isAdmin(viewer));
  const editing = mayChange && input.editing === m.id;
  const state = input.state?.form === 'edit' && input.state.messageId === m.id ? input.state : undefined;
  const pageQuery = page > 1 ? `?page=${page}` : '';
  const editLink = `${threadPath(viewer, input.thread.id)}${page > 1 ? `?page=${page}&` : '?'}edit=${m.id}#message-${m.id}`;
  const body = deleted
    ? html`<p class="muted">deleted</p>`
    : editing
      ? html`<form method="post" action="${base}/edit${pageQuery}">${csrfField(viewer)}
${textField({ name: 'body', label: 'Edit message', value: state ? state.body : (m.body ?? ''), max: MAX_BODY_CHARACTERS, multiline: true, error: state?.error, idPrefix: `edit-${m.id}-` })}
<p class="actions"><button type="submit" class="primary">Save</button> <a href="${threadPath(viewer, input.thread.id, page)}#message-${m.id}">Cancel</a></p>
</form>`
      : html`<div class="body">${renderMarkdown(m.body ?? '')}</div>`;
  const actions: Html[] = [];
  if (mayChange && !editing)
    actions.push(html`<a href="${editLink}">Edit<span class="visually-hidden"> this message</span></a>`);
  if (mayChange) actions.push(postButton(viewer, `${base}/delete`, 'Delete'));
  if (!deleted && isAdmin(viewer)) {
    actions.push(
      m.pinned_at
        ? postButton(viewer, `${base}/unpin`, 'Unpin agent context note')
        : postButton(viewer, `${base}/pin`, 'Pin as agent context note'),
    );
  }
  return html`<li id="message-${m.id}"><article class="message" aria-labelledby="message-${m.id}-by">
<h3 id="message-${m.id}-by" class="message-by">${authorOf(m.author)} <span class="muted">· ${timeOf(m.created_at)}${
    m.edited_at && !deleted ? html` · edited ${timeOf(m.edited_at)}` : ''
  }</span></h3>
${m.pinned_at && !deleted ? html`<p class="badge pinned">Pinned as agent context note${m.pinned_by ? html` by ${authorOf(m.pinned_by)}` : ''}</p>` : ''}
${body}
${actions.length > 0 ? html`<div class="actions">${actions}</div>` : ''}
</article></li>`;
}

function pagination(viewer: Viewer, thread: ThreadView): Html {
  const { page, total_pages: pages } = thread.messages.pagination;
  if (pages <= 1) return html``;
  return html`<nav class="pagination" aria-label="Message pages">
${page > 1 ? html`<a href="${threadPath(viewer, thread.id, page - 1)}">Earlier messages</a>` : ''}
<span>Page ${page} of ${pages}</span>
${page < pages ? html`<a href="${threadPath(viewer, thread.id, page + 1)}">Later messages</a>` : ''}
</nav>`;
}

export function threadPage(input: ThreadPageInput): Html {
  const { viewer, thread, metric } = input;
  const page = thread.messages.pagination.page;
  const open = thread.resolution_status === 'open';
  const mayResolve = viewer.role !== 'viewer' && (writtenBy(input.userId, thread.author) || isAdmin(viewer));
  const threadBase = orgPath(viewer, 'threads', thread.id);
  const replyState = input.state?.form === 'reply' ? input.state : undefined;
  const main = html`<p><a href="${orgPath(viewer, 'metrics', metric.id)}">${metric.name}</a></p>
<h1>${thread.title}</h1>
<dl class="facts">
<dt>Intent</dt><dd>${intentLabel(thread.intent)}</dd>
<dt>Status</dt><dd><span class="badge status-${thread.resolution_status}">${open ? 'Open' : 'Resolved'}</span>${
    !open && thread.resolved_at
      ? html` <span class="muted">by ${authorOf(thread.resolved_by)} · ${timeOf(thread.resolved_at)}</span>`
      : ''
  }</dd>
<dt>Opened by</dt><dd>${authorOf(thread.author)} · ${timeOf(thread.created_at)}</dd>
<dt>Messages</dt><dd>${thread.message_count}</dd>
</dl>
${
  mayResolve
    ? open
      ? postButton(viewer, `${threadBase}/resolve`, 'Resolve thread')
      : postButton(viewer, `${threadBase}/reopen`, 'Reopen thread')
    : ''
}
<h2>Messages</h2>
${pagination(viewer, thread)}
<ol class="messages">${thread.messages.items.map((m) => message(input, m, page))}</ol>
${pagination(viewer, thread)}
<h2>Reply</h2>
${
  viewer.role === 'viewer'
    ? html`<p class="notice">${VIEWERS_READ}</p>`
    : html`<form method="post" action="${threadBase}/reply">${csrfField(viewer)}
${textField({ name: 'body', label: 'Your reply', value: replyState?.body ?? '', max: MAX_BODY_CHARACTERS, multiline: true, error: replyState?.error, idPrefix: 'reply-' })}
<p><button type="submit" class="primary">Reply</button></p>
</form>`
}`;
  return layout({ title: thread.title, viewer, main });
}
