/**
 * The old and new values a plan shows for each changed field
 * (docs/registry.md#plans): as stored and as the apply writes them, a value
 * longer than PLAN_VALUE_MAX_CHARS characters (a string's own, JSON text
 * otherwise) shortened to its first PLAN_VALUE_MAX_CHARS characters, an
 * ellipsis and its full length, so that a plan of large definitions stays
 * readable and bounded.
 */

export const PLAN_VALUE_MAX_CHARS = 200;

export interface PlanChange {
  field: string;
  from: unknown;
  to: unknown;
}

/** A value as a plan shows it: itself, or past PLAN_VALUE_MAX_CHARS its shortened text. */
export function shownValue(value: unknown): unknown {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  if (text.length <= PLAN_VALUE_MAX_CHARS) return value ?? null;
  // Not cut between the two halves of a surrogate pair.
  const end = /[\uD800-\uDBFF]/.test(text.charAt(PLAN_VALUE_MAX_CHARS - 1))
    ? PLAN_VALUE_MAX_CHARS - 1
    : PLAN_VALUE_MAX_CHARS;
  return `${text.slice(0, end)}… (${text.length} characters)`;
}

export const planChange = (field: string, from: unknown, to: unknown): PlanChange => ({
  field,
  from: shownValue(from),
  to: shownValue(to),
});

/** A change on one line: `field: from -> to`, values as JSON. */
export const changeLine = (change: PlanChange): string =>
  `${change.field}: ${JSON.stringify(change.from)} -> ${JSON.stringify(change.to)}`;
