/**
 * What the discussion pages' forms share: a labelled field with its limit
 * (as `maxlength` and as a hint) and, after a refused post, the refusal in an
 * alert the field points at (`aria-describedby`) with what was typed kept;
 * who wrote something and when; the words of intents and statuses.
 */
import type { DiscussionAuthorRefFragment } from '../rest/operations.generated.js';
import { type Html, html } from './html.js';

/** A refused post's message, and the field it is about. */
export interface FieldError {
  field: string;
  message: string;
}

export interface FieldInput {
  /** the form's field name; the element's id is `${idPrefix}${name}` */
  name: string;
  label: string;
  value: string;
  /** characters at most (the write's documented limit) */
  max: number;
  multiline?: boolean;
  error?: FieldError | null;
  /** ids stay unique when one page holds several forms with a field of the same name */
  idPrefix?: string;
}

const count = (n: number) => n.toLocaleString('en-US');

/** A text field with its label, its limit's hint, and its error when the post was refused for it. */
export function textField(input: FieldInput): Html {
  const id = `${input.idPrefix ?? ''}${input.name}`;
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const error = input.error?.field === input.name ? input.error.message : null;
  const describedBy = error ? `${errorId} ${hintId}` : hintId;
  const control = input.multiline
    ? html`<textarea id="${id}" name="${input.name}" maxlength="${input.max}" required aria-describedby="${describedBy}"${
        error ? html` aria-invalid="true"` : ''
      }>${input.value}</textarea>`
    : html`<input type="text" id="${id}" name="${input.name}" maxlength="${input.max}" required aria-describedby="${describedBy}" value="${input.value}"${
        error ? html` aria-invalid="true"` : ''
      }>`;
  return html`<div class="field">
<label for="${id}">${input.label}</label>
${error ? html`<p id="${errorId}" class="error" role="alert">${error}</p>` : ''}
${control}
<p id="${hintId}" class="muted hint">At most ${count(input.max)} characters${input.multiline ? '; Markdown formatting is shown, HTML is shown as text' : ''}.</p>
</div>`;
}

/** A choice among `options` (value, label), with the same error treatment as {@link textField}. */
export function selectField(input: {
  name: string;
  label: string;
  value: string;
  options: readonly (readonly [string, string])[];
  error?: FieldError | null;
}): Html {
  const error = input.error?.field === input.name ? input.error.message : null;
  const errorId = `${input.name}-error`;
  return html`<div class="field">
<label for="${input.name}">${input.label}</label>
${error ? html`<p id="${errorId}" class="error" role="alert">${error}</p>` : ''}
<select id="${input.name}" name="${input.name}" required${error ? html` aria-invalid="true" aria-describedby="${errorId}"` : ''}>
${input.options.map(([value, label]) => html`<option value="${value}"${value === input.value ? html` selected` : ''}>${label}</option>`)}
</select>
</div>`;
}

/** Intents as a person reads them. */
export const INTENT_LABELS: Record<string, string> = {
  objection: 'Objection',
  proposal: 'Proposal',
  clarification: 'Clarification',
  decision_rationale: 'Decision rationale',
  question: 'Question',
};

export const intentLabel = (intent: string) => INTENT_LABELS[intent] ?? intent;

/** A moment as a machine-readable `<time>` showing the UTC minute. */
export function timeOf(iso: string): Html {
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** Who wrote something: a person by name, a bot's token by name and so marked; a gone author as such. */
export function authorOf(author: DiscussionAuthorRefFragment | null): Html {
  if (!author) return html`<span class="muted">a former member</span>`;
  return author.kind === 'service_token'
    ? html`${author.display_name} <span class="muted">(bot)</span>`
    : html`${author.display_name}`;
}

/** The sentence a viewer reads where a member sees a form. */
export const VIEWERS_READ = 'Viewers read; ask an admin for the member role.';
