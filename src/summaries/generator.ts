/**
 * What a summary generator sees and promises. Implementations are chosen by
 * configuration (SUMMARY_PROVIDER); the service owns timeouts, caching and
 * billing, a generator only turns one discussion into text.
 */

export interface DiscussionMessage {
  id: string;
  authorDisplayName: string;
  body: string;
  createdAt: Date;
  pinnedAt: Date | null;
}

export interface DiscussionThread {
  id: string;
  intent: string;
  resolutionStatus: 'open' | 'resolved';
  title: string;
  createdAt: Date;
  /** non-deleted messages, oldest first */
  messages: DiscussionMessage[];
}

/** One state of a metric's discussion: its threads and non-deleted messages. */
export interface Discussion {
  metricId: string;
  metricName: string;
  /** oldest first */
  threads: DiscussionThread[];
}

export interface SummaryGenerator {
  /** Provider and model, e.g. `extractive:v1`, `openai:gpt-4o-mini`; part of the cache fingerprint. */
  readonly name: string;
  /** Rejects when `signal` aborts (the service's timeout) or the provider fails. */
  generate(discussion: Discussion, options: { signal: AbortSignal }): Promise<string>;
}

export type SummaryProviderConfig =
  | { kind: 'extractive' }
  | { kind: 'openai'; baseUrl: string; apiKey: string | null; model: string };

/** The summaries part of the service configuration (from SUMMARY_* variables). */
export interface SummaryConfig {
  provider: SummaryProviderConfig;
  /** generator timeout (SUMMARY_TIMEOUT_MS) */
  timeoutMs: number;
  /** new summaries per organization per UTC day unless the organization sets its own (SUMMARY_DAILY_CAP) */
  defaultDailyCap: number;
  /** generations running at once in one instance (SUMMARY_MAX_CONCURRENT), half of them (at least 1) per organization; past it a miss degrades */
  maxConcurrent: number;
}
