/**
 * The built-in generator: offline and deterministic. It reads the structure
 * of the discussion (intents, resolution, pins, authors) rather than its
 * language: what was decided, what is still open, who objected.
 */
import type { Discussion, DiscussionThread, SummaryGenerator } from './generator.js';

const QUOTE_LIMIT = 160;
const DECIDED_INTENTS = new Set(['decision_rationale', 'proposal']);

function quote(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > QUOTE_LIMIT ? `${flat.slice(0, QUOTE_LIMIT - 1).trimEnd()}…` : flat;
}

/** The thread's title, else its opening message. */
function topic(thread: DiscussionThread): string {
  return quote(thread.title || thread.messages[0]?.body || thread.intent.replace(/_/g, ' '));
}

function list(items: string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun.replace(/_/g, ' ')}${count === 1 ? '' : 's'}`;
}

export function extractiveSummary(discussion: Discussion): string {
  const { threads } = discussion;
  const sentences: string[] = [];
  const messageCount = threads.reduce((sum, thread) => sum + thread.messages.length, 0);
  sentences.push(
    `The discussion of ${discussion.metricName} has ${plural(threads.length, 'thread')} and ${plural(messageCount, 'message')}.`,
  );

  const decided = threads
    .filter((thread) => thread.resolutionStatus === 'resolved' && DECIDED_INTENTS.has(thread.intent))
    .map((thread) => `"${topic(thread)}"`);
  const pinned = threads
    .flatMap((thread) => thread.messages.filter((message) => message.pinnedAt))
    .sort((a, b) => (b.pinnedAt?.getTime() ?? 0) - (a.pinnedAt?.getTime() ?? 0) || (a.id < b.id ? -1 : 1))
    .map((message) => `"${quote(message.body)}" (${message.authorDisplayName})`);
  if (decided.length) sentences.push(`Decided: ${list(decided)}.`);
  if (pinned.length) sentences.push(`Pinned notes: ${list(pinned)}.`);

  const open = threads.filter((thread) => thread.resolutionStatus === 'open');
  if (open.length) {
    const byIntent = new Map<string, DiscussionThread[]>();
    for (const thread of open) byIntent.set(thread.intent, [...(byIntent.get(thread.intent) ?? []), thread]);
    const parts = [...byIntent.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([intent, group]) => `${plural(group.length, intent)} (${group.map((t) => `"${topic(t)}"`).join(', ')})`);
    sentences.push(`Still open: ${list(parts)}.`);
  } else {
    sentences.push('Nothing is open.');
  }

  // The objector is whoever opened the objection thread.
  const objectors = [
    ...new Set(
      threads
        .filter((thread) => thread.intent === 'objection')
        .map((thread) => thread.messages[0]?.authorDisplayName)
        .filter((name): name is string => Boolean(name)),
    ),
  ];
  if (objectors.length) sentences.push(`Objections were raised by ${list(objectors)}.`);
  return sentences.join(' ');
}

export const extractiveGenerator: SummaryGenerator = {
  name: 'extractive:v1',
  generate: async (discussion, { signal }) => {
    signal.throwIfAborted();
    return extractiveSummary(discussion);
  },
};
