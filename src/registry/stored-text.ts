/**
 * The text a registry document would store, checked before it is validated:
 * every string (value or member name) holds only characters a write may
 * store ({@link storableText}) and is within its field's length
 * (src/registry/limits.ts). A dbt or OSI file is checked in the document it
 * was translated into, so that a part of the file that is never imported
 * (a model's compiled SQL) cannot refuse it.
 */
import { storableText, UNSTORABLE_TEXT } from '../metric/input.js';
import { MAX_NAME_CHARACTERS, METRIC_TEXT_LIMITS } from './limits.js';
import type { RegistryProblem } from './registry-error.js';

/** Enough to fix a file by; a document with text wrong everywhere is not listed in full. */
const MAX_PROBLEMS = 100;

/** The bound of a text at `path`: by the metric's field (`metrics[i].field`, or a field of `defaults`). */
function limitAt(path: readonly PropertyKey[]): number {
  const field = path[0] === 'metrics' ? path[2] : path[0] === 'defaults' ? path[1] : undefined;
  if (typeof field !== 'string') return MAX_NAME_CHARACTERS;
  const member = path[0] === 'metrics' ? path[4] : undefined;
  return (
    (typeof member === 'string' ? METRIC_TEXT_LIMITS[`${field}.${member}`] : undefined) ??
    METRIC_TEXT_LIMITS[field] ??
    MAX_NAME_CHARACTERS
  );
}

function textProblem(text: string, path: readonly PropertyKey[]): string | null {
  if (!storableText(text)) return UNSTORABLE_TEXT;
  const max = limitAt(path);
  return text.length > max ? `at most ${max} characters (this text has ${text.length})` : null;
}

/** The problems of the document's text, each with its path; iterative, the document's depth is bounded anyway. */
export function storedTextProblems(document: unknown): RegistryProblem[] {
  const problems: RegistryProblem[] = [];
  const pending: [unknown, PropertyKey[]][] = [[document, []]];
  while (pending.length > 0 && problems.length < MAX_PROBLEMS) {
    const [value, path] = pending.pop() as [unknown, PropertyKey[]];
    if (typeof value === 'string') {
      const message = textProblem(value, path);
      if (message) problems.push({ path, message });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], [...path, i]]);
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        if (!storableText(key)) problems.push({ path: [...path, key], message: `member name ${UNSTORABLE_TEXT}` });
        pending.push([child, [...path, key]]);
      }
    }
  }
  return problems;
}
