/**
 * The form that opens a thread on a metric (docs/discussions.md, "In the
 * catalog"): its intent, a one-line title and the first message, each with
 * its documented limit. A viewer reads why there is no form.
 */
import { DISCUSSION_INTENTS, MAX_BODY_CHARACTERS, MAX_TITLE_CHARACTERS } from '../discussions/limits.js';
import { type FieldError, INTENT_LABELS, selectField, textField, VIEWERS_READ } from './discussion-fields.js';
import { type Html, html } from './html.js';
import { csrfField, layout, orgPath, type Viewer } from './layout.js';

export interface NewThreadInput {
  viewer: Viewer;
  metric: { id: string; name: string };
  /** what was posted, when the post was refused */
  values?: { intent: string; title: string; body: string };
  error?: FieldError;
}

export function newThreadPage({ viewer, metric, values, error }: NewThreadInput): Html {
  const form =
    viewer.role === 'viewer'
      ? html`<p class="notice">${VIEWERS_READ}</p>`
      : html`<form method="post" action="${orgPath(viewer, 'metrics', metric.id, 'threads', 'new')}">${csrfField(viewer)}
${selectField({
  name: 'intent',
  label: 'Intent',
  value: values?.intent ?? 'question',
  options: DISCUSSION_INTENTS.map((intent) => [intent, INTENT_LABELS[intent] ?? intent] as const),
  error,
})}
<p class="muted">An open objection cautions the metric's trust verdict until it is resolved.</p>
${textField({ name: 'title', label: 'Title', value: values?.title ?? '', max: MAX_TITLE_CHARACTERS, error })}
${textField({ name: 'body', label: 'First message', value: values?.body ?? '', max: MAX_BODY_CHARACTERS, multiline: true, error })}
<p><button type="submit" class="primary">Open thread</button></p>
</form>`;
  const main = html`<p><a href="${orgPath(viewer, 'metrics', metric.id)}">${metric.name}</a></p>
<h1>Start a discussion</h1>
${form}`;
  return layout({ title: `Start a discussion · ${metric.name}`, viewer, main });
}
