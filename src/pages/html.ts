/**
 * HTML built from templates whose every interpolated value is escaped,
 * unless it is itself built here ({@link Html}): a name, a description or a
 * note holding markup is shown as text, never run as markup. Arrays of
 * fragments are joined; null, undefined and false render nothing.
 */

/** A fragment of HTML that is safe to insert as it is. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export type Interpolated = Html | string | number | bigint | boolean | null | undefined | readonly Interpolated[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text as HTML: the five characters that can open markup or close an attribute are escaped. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

function render(value: Interpolated): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** The template tag: `html\`<p>${text}</p>\`` escapes `text`. */
export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  let out = strings[0] as string;
  for (let i = 0; i < values.length; i += 1) out += render(values[i] as Interpolated) + strings[i + 1];
  return new Html(out);
}

/** Markup made elsewhere and already safe (a rendered, sanitized Markdown body): use with care. */
export function trusted(markup: string): Html {
  return new Html(markup);
}
