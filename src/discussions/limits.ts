/**
 * What a discussion write may carry (docs/discussions.md, "Limits"), checked
 * by the one implementation every transport calls (src/discussions/*): a
 * value past a bound is refused with a 400 naming its field, never cut
 * short. Lengths are Unicode code points. Control characters are refused as
 * in every other text the service stores (src/metric/input.ts): tab and line
 * breaks are text, the others are not.
 */
import { badRequest, errors, HttpError } from '../errors.js';
import { checkCharacters, longerThan } from '../metric/input.js';

/** A thread's title: one line. */
export const MAX_TITLE_CHARACTERS = 200;
/** A message's body (Markdown, stored and served as written). */
export const MAX_BODY_CHARACTERS = 10_000;
/** A challenge's reason, and the reason of its decision. */
export const MAX_REASON_CHARACTERS = 5_000;

/**
 * Bytes of a REST discussion write's body: room for a body at its bound in any
 * encoding JSON allows (every character as an escaped surrogate pair, 12
 * bytes), far below the service's 1 MiB. A larger body is 413.
 */
export const DISCUSSION_BODY_LIMIT = 256 * 1024;

/** Writes per minute of one member (all their sessions) or one service token: DISCUSSION_WRITES_PER_MINUTE. */
export const DEFAULT_DISCUSSION_WRITES_PER_MINUTE = 30;

/** Threads a page lists: default and most. */
export const DEFAULT_THREAD_PAGE_SIZE = 10;
export const MAX_THREAD_PAGE_SIZE = 20;
/** Messages a page of one thread lists: default and most. */
export const DEFAULT_MESSAGE_PAGE_SIZE = 20;
export const MAX_MESSAGE_PAGE_SIZE = 100;
/**
 * Messages each thread of a page of threads lists at most: a page of threads
 * carries at most MAX_THREAD_PAGE_SIZE x this many bodies (4 million
 * characters), whatever a GraphQL document asks.
 */
export const MAX_LISTED_MESSAGES = 20;
/** Challenges a page lists: default and most. */
export const DEFAULT_CHALLENGE_PAGE_SIZE = 20;
export const MAX_CHALLENGE_PAGE_SIZE = 50;

/** What a thread is for. `objection` (while open) cautions the metric's trust verdict. */
export const DISCUSSION_INTENTS = ['objection', 'proposal', 'clarification', 'decision_rationale', 'question'] as const;
export type DiscussionIntent = (typeof DISCUSSION_INTENTS)[number];

export const CHALLENGE_DECISIONS = ['accepted', 'rejected'] as const;
export type ChallengeDecisionValue = (typeof CHALLENGE_DECISIONS)[number];

const invalid = (message: string) => new HttpError(badRequest(message));

/** Text that must say something: non-empty once trimmed, within `max`, no control characters. */
function checkText(field: string, text: string, max: number): void {
  const refused = checkCharacters(field, text);
  if (refused) throw new HttpError(refused);
  if (longerThan(text, max)) throw new HttpError(errors.inputTooLong(field, max));
  if (!text.trim()) throw invalid(`${field} must not be empty`);
}

/** The title as stored: trimmed, one line. */
export function checkTitle(title: string): string {
  checkText('title', title, MAX_TITLE_CHARACTERS);
  if (/[\r\n]/.test(title)) throw invalid('title must be one line');
  return title.trim();
}

/** A message's body, stored as written. */
export function checkBody(body: string): string {
  checkText('body', body, MAX_BODY_CHARACTERS);
  return body;
}

/** A challenge's or a decision's reason, stored as written. */
export function checkReason(reason: string): string {
  checkText('reason', reason, MAX_REASON_CHARACTERS);
  return reason;
}

export function checkIntent(intent: string): DiscussionIntent {
  if ((DISCUSSION_INTENTS as readonly string[]).includes(intent)) return intent as DiscussionIntent;
  throw invalid(`intent must be one of ${DISCUSSION_INTENTS.join(', ')}`);
}

export function checkDecision(decision: string): ChallengeDecisionValue {
  if ((CHALLENGE_DECISIONS as readonly string[]).includes(decision)) return decision as ChallengeDecisionValue;
  throw invalid(`decision must be one of ${CHALLENGE_DECISIONS.join(', ')}`);
}
