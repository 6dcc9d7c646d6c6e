/**
 * Bounds on the free text a list or search request may carry (REST `q` and
 * filters, GraphQL `search` and `filter`), in one place for both APIs. A value
 * past its bound is refused with a message that names it (never cut short):
 * the search text and the filter values become SQL parameters and keys of the
 * read cache, so unbounded ones cost memory and database time in proportion
 * to what a caller chooses to send.
 */
import { type ErrorResponse, errors } from '../errors.js';
import { isTrustVerdict } from './list.js';
import { TRUST_VERDICTS } from './trust.js';

/**
 * Control characters (Unicode Cc: C0, DEL, C1) other than tab, line feed and
 * carriage return. PostgreSQL refuses a NUL in text (a database error, once a
 * 500); no metric's text holds any of them, so none of them can match either.
 */
const CONTROL_CHARACTER = /(?![\t\n\r])\p{Cc}/u;
/** A high surrogate not followed by a low one, or a low one not preceded by a high one (not UTF-16). */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether a write may store `text`: no control character but tab and line
 * breaks (PostgreSQL refuses a NUL; the others, terminal escapes among them,
 * would reach every reader of the text, a terminal or an agent's context
 * included) and no unpaired surrogate (not UTF-16, so not UTF-8 either).
 */
export function storableText(text: string): boolean {
  return !CONTROL_CHARACTER.test(text) && !UNPAIRED_SURROGATE.test(text);
}

export const UNSTORABLE_TEXT =
  'must not contain control characters (other than tab and line breaks) or unpaired surrogates';

/**
 * The error for a text input (`name` as the caller spelt it) holding a
 * control character or an unpaired surrogate, else null: every text input
 * of every transport goes through it before anything is read.
 */
export function checkCharacters(name: string, text: string | null | undefined): ErrorResponse | null {
  if (text == null) return null;
  return storableText(text) ? null : errors.invalidCharacters(name);
}

/**
 * The first text of `value` (a string, or strings inside arrays and objects,
 * as arguments arrive) that {@link checkCharacters} refuses, named by its
 * path from `name` (`filter.policyTier`, `ids[2]`), else null.
 */
export function checkCharactersDeep(name: string, value: unknown): ErrorResponse | null {
  if (typeof value === 'string') return checkCharacters(name, value);
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const invalid = checkCharactersDeep(`${name}[${index}]`, item);
      if (invalid) return invalid;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const invalid = checkCharactersDeep(name ? `${name}.${key}` : key, item);
      if (invalid) return invalid;
    }
  }
  return null;
}

/** Characters (Unicode code points) of the search text once trimmed. */
export const MAX_SEARCH_CHARACTERS = 256;
/** Words of the search text (runs of letters and digits, as the search reads them). */
export const MAX_SEARCH_WORDS = 16;
/** Characters of each filter value (lifecycle status, legacy status, policy tier, scope, type). */
export const MAX_FILTER_CHARACTERS = 64;

/** True when `text` has more than `max` code points; never walks far past `max`. */
export function longerThan(text: string, max: number): boolean {
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
  const invalid = checkCharacters(name, text);
  if (invalid) return invalid;
  const trimmed = text.trim();
  if (longerThan(trimmed, MAX_SEARCH_CHARACTERS)) return errors.inputTooLong(name, MAX_SEARCH_CHARACTERS);
  if (tooManyWords(trimmed, MAX_SEARCH_WORDS)) return errors.tooManyWords(name, MAX_SEARCH_WORDS);
  return null;
}

/** The error for the first filter value past its bound, else null; keys are the names the caller used. */
export function checkFilterValues(values: Record<string, string | null | undefined>): ErrorResponse | null {
  for (const [name, value] of Object.entries(values)) {
    if (value == null) continue;
    const invalid = checkCharacters(name, value);
    if (invalid) return invalid;
    if (longerThan(value, MAX_FILTER_CHARACTERS)) return errors.inputTooLong(name, MAX_FILTER_CHARACTERS);
  }
  return null;
}

/**
 * The error for a `trust` filter that is no verdict, else null. Unlike the
 * other filters (whose unknown values match nothing or are ignored, as the
 * contract says), a verdict is one of three words: any other value is a
 * mistake to report, a list of several (`use,do_not_use`) included.
 */
export function checkTrustFilter(name: string, value: string | null | undefined): ErrorResponse | null {
  if (value == null || isTrustVerdict(value)) return null;
  return errors.notOneOf(name, TRUST_VERDICTS);
}
