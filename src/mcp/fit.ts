/**
 * Size bounds for agents: a tool result is shortened to fit a byte budget
 * by cutting its long free-text strings (note bodies, descriptions) to a
 * common length, each cut one ending in a visible marker. Identifiers,
 * keys, timestamps and counts are never touched.
 */

export const TRUNCATION_MARKER = '…[truncated]';

/** UTF-8 bytes of the JSON of `value`, as it goes over the wire. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/** `text` cut to at most `max` characters (code points), marker included; unchanged when it fits. */
export function shorten(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  const keep = Math.max(0, max - TRUNCATION_MARKER.length);
  return chars.slice(0, keep).join('') + TRUNCATION_MARKER;
}

/**
 * `build(max)` makes the result with every shortenable string cut to `max`
 * characters (Infinity: none). Returns the result with the largest `max`
 * that fits `limitBytes` (at least the marker alone), found by bisection.
 */
export function fitToBytes<T>(limitBytes: number, build: (max: number) => T): T {
  const whole = build(Number.POSITIVE_INFINITY);
  if (jsonBytes(whole) <= limitBytes) return whole;
  let low = TRUNCATION_MARKER.length;
  let high = 64 * 1024;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (jsonBytes(build(mid)) <= limitBytes) low = mid;
    else high = mid - 1;
  }
  return build(low);
}
