/**
 * The `If-None-Match` header as a list of entity tags, one parser for every
 * route that answers 304 (the metric routes, src/rest/etag.ts, and the static
 * pages, src/http/static-assets.ts).
 */

/** etagc (RFC 9110 section 8.8.3): %x21 / %x23-7E / obs-text. */
function isEtagChar(code: number): boolean {
  return code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff);
}

const isOws = (code: number) => code === 0x20 || code === 0x09;

/**
 * `If-None-Match`: `*`, or the opaque tags of its list (weak or not: the
 * comparison is weak); null when absent or malformed (then it is ignored).
 *
 * One pass over the characters, each looked at once: a header of any length
 * costs time in proportion to it (a backtracking pattern here was quadratic
 * in the whitespace after a comma, and a long header held the event loop).
 */
export function parseIfNoneMatch(value: string | string[] | undefined): '*' | string[] | null {
  if (value === undefined) return null;
  const text = (Array.isArray(value) ? value.join(', ') : value).trim();
  if (text === '*') return '*';
  const tags: string[] = [];
  const end = text.length;
  let i = 0;
  while (i < end) {
    while (i < end && isOws(text.charCodeAt(i))) i++;
    if (text.charCodeAt(i) === 0x57 /* W */ && text.charCodeAt(i + 1) === 0x2f /* / */) {
      i += 2;
      if (text.charCodeAt(i) !== 0x22) return null;
    }
    if (text.charCodeAt(i) === 0x22 /* " */) {
      const open = i++;
      while (i < end && isEtagChar(text.charCodeAt(i))) i++;
      if (text.charCodeAt(i) !== 0x22) return null;
      i++;
      tags.push(text.slice(open, i));
    }
    while (i < end && isOws(text.charCodeAt(i))) i++;
    if (i < end && text.charCodeAt(i++) !== 0x2c /* , */) return null;
  }
  return tags.length ? tags : null;
}
