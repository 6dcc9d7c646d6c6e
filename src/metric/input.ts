/**
 * Bounds on the free text a list or search request may carry (REST `q` and
 * filters, GraphQL `search` and `filter`), in one place for both APIs. A value
 * past its bound is refused with a message that names it (never cut short):
 * the search text and the filter values become SQL parameters and keys of the
 * read cache, so unbounded ones cost memory and database time in proportion
 * to what a caller chooses to send.
 */
import { type ErrorResponse, errors } from '../errors.js';

/** Characters (Unicode code points) of the search text once trimmed. */
export const MAX_SEARCH_CHARACTERS = 256;
/** Words of the search text (runs of letters and digits, as the search reads them). */
export const MAX_SEARCH_WORDS = 16;
/** Characters of each filter value (lifecycle status, legacy status, policy tier, scope, type). */
export const MAX_FILTER_CHARACTERS = 64;

/** True when `text` has more than `max` code points; never walks far past `max`. */
function longerThan(text: string, max: number): boolean {
  if (text.length <= max) return false;
  if (text.length > 2 * max) return true;
  let count = 0;
  for (const _ of text) if (++count > max) return true;
  return false;
}

function tooManyWords(text: string, max: number): boolean {
  let count = 0;
  for (const _ of text.matchAll(/[\p{L}\p{N}]+/gu)) if (++count > max) return true;
  return false;
}

/** The error for a search text past its bounds (`name` as the caller spelt the parameter), else null. */
export function checkSearchText(name: string, text: string | null | undefined): ErrorResponse | null {
  if (text == null) return null;
  const trimmed = text.trim();
  if (longerThan(trimmed, MAX_SEARCH_CHARACTERS)) return errors.inputTooLong(name, MAX_SEARCH_CHARACTERS);
  if (tooManyWords(trimmed, MAX_SEARCH_WORDS)) return errors.tooManyWords(name, MAX_SEARCH_WORDS);
  return null;
}

/** The error for the first filter value past its bound, else null; keys are the names the caller used. */
export function checkFilterValues(values: Record<string, string | null | undefined>): ErrorResponse | null {
  for (const [name, value] of Object.entries(values)) {
    if (value != null && longerThan(value, MAX_FILTER_CHARACTERS)) {
      return errors.inputTooLong(name, MAX_FILTER_CHARACTERS);
    }
  }
  return null;
}
