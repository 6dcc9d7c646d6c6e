/**
 * What webhooks are configured with (src/env.ts reads the WEBHOOK_* variables;
 * tests give their own). The defaults are the service's.
 */
import type { Env } from '../env.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

export interface WebhookSettings {
  /** http:// endpoints are accepted (WEBHOOK_ALLOW_HTTP); otherwise https:// only */
  allowHttp: boolean;
  /** endpoints may resolve to loopback, private and other non-public addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS) */
  allowPrivateNetworks: boolean;
  /** an attempt not answered within this time fails (WEBHOOK_TIMEOUT_MS) */
  timeoutMs: number;
  /** the waits before the 1st, 2nd, ... retry of a failed event; past its end, its last wait again */
  retryScheduleMs: readonly number[];
  /** an endpoint failing without a success for this long is disabled at its next failure */
  disableAfterMs: number;
}

/** How the delivery worker of an instance runs. */
export interface WebhookWorkerSettings {
  /** how long a claim holds an endpoint: an instance that dies mid-delivery is taken over after it */
  leaseMs: number;
  /** how often the worker looks for due endpoints when no commit of its own instance wakes it */
  pollIntervalMs: number;
}

export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  10 * HOUR,
];

export const DEFAULT_WEBHOOK_SETTINGS: WebhookSettings = {
  allowHttp: false,
  allowPrivateNetworks: false,
  timeoutMs: 10 * SECOND,
  retryScheduleMs: DEFAULT_RETRY_SCHEDULE_MS,
  disableAfterMs: 5 * 24 * HOUR,
};

/** The settings of the validated environment (the server and the CLI read the same). */
export function webhookSettingsFromEnv(
  env: Pick<
    Env,
    | 'WEBHOOK_ALLOW_HTTP'
    | 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'
    | 'WEBHOOK_TIMEOUT_MS'
    | 'WEBHOOK_RETRY_SCHEDULE'
    | 'WEBHOOK_DISABLE_AFTER'
  >,
): WebhookSettings {
  return {
    allowHttp: env.WEBHOOK_ALLOW_HTTP,
    allowPrivateNetworks: env.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    timeoutMs: env.WEBHOOK_TIMEOUT_MS,
    retryScheduleMs: env.WEBHOOK_RETRY_SCHEDULE,
    disableAfterMs: env.WEBHOOK_DISABLE_AFTER,
  };
}

export const DEFAULT_WORKER_SETTINGS: WebhookWorkerSettings = { leaseMs: 30 * SECOND, pollIntervalMs: 250 };

const UNITS: Record<string, number> = { ms: 1, s: SECOND, m: MINUTE, h: HOUR, d: 24 * HOUR };

/** `5s`, `250ms`, `2h`: milliseconds, or null for anything else. */
export function parseDuration(text: string): number | null {
  const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return null;
  const value = Number(match[1]) * (UNITS[match[2] ?? ''] ?? 0);
  return value > 0 ? value : null;
}
