/**
 * A generator over any OpenAI-compatible chat-completions endpoint
 * (SUMMARY_OPENAI_BASE_URL ends in /v1). The prompt is built from the
 * discussion and bounded in size; cancellation is the caller's signal.
 */
import type { Discussion, SummaryGenerator } from './generator.js';

/** Upper bound of the discussion text sent to the provider. */
export const PROMPT_CHAR_LIMIT = 12_000;

const INSTRUCTIONS =
  'You summarize the discussion of a governed business metric for data analysts and AI agents. ' +
  'In at most five sentences say what was decided, what is still open, and who objected. ' +
  'Use only the discussion given; do not invent facts.';

export function discussionPrompt(discussion: Discussion): string {
  const lines = [`Metric: ${discussion.metricName}`];
  for (const thread of discussion.threads) {
    lines.push('', `Thread (${thread.intent}, ${thread.resolutionStatus})${thread.title ? `: ${thread.title}` : ''}`);
    for (const message of thread.messages) {
      lines.push(`- ${message.authorDisplayName}${message.pinnedAt ? ' [pinned]' : ''}: ${message.body}`);
    }
  }
  const text = lines.join('\n');
  return text.length > PROMPT_CHAR_LIMIT ? `${text.slice(0, PROMPT_CHAR_LIMIT)}\n[truncated]` : text;
}

interface ChatCompletion {
  choices?: { message?: { content?: unknown } }[];
}

export function openaiGenerator(options: { baseUrl: string; apiKey: string | null; model: string }): SummaryGenerator {
  const url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  return {
    name: `openai:${options.model}`,
    generate: async (discussion, { signal }) => {
      const response = await fetch(url, {
        method: 'POST',
        signal,
        headers: {
          'content-type': 'application/json',
          ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
        },
        body: JSON.stringify({
          model: options.model,
          temperature: 0,
          messages: [
            { role: 'system', content: INSTRUCTIONS },
            { role: 'user', content: discussionPrompt(discussion) },
          ],
        }),
      });
      if (!response.ok) throw new Error(`summary provider answered ${response.status}`);
      const body = (await response.json()) as ChatCompletion;
      const content = body.choices?.[0]?.message?.content;
      if (typeof content !== 'string' || !content.trim()) throw new Error('summary provider returned no content');
      return content.trim();
    },
  };
}
