/**
 * The events of the change feed, as CloudEvents 1.0 (JSON format): what a
 * consumer of a governed metric hears when it is created, changed, removed,
 * restored, validated, discussed (src/discussions/), or when its trust
 * verdict changes. Every event's `data`
 * starts with the metric it is about (`id`, `key`, `name`, and
 * `lifecycle_status` after the change); the rest depends on the type (README,
 * "Change feed").
 */
import type { Trust, UntrustedInput } from '../metric/trust.js';

export const CHANGE_EVENT_TYPES = [
  'metric.created',
  'metric.updated',
  'metric.removed',
  'metric.restored',
  'metric.lifecycle_changed',
  'metric.version_released',
  'metric.validated',
  'metric.trust_changed',
  'metric.discussion_changed',
] as const;
export type ChangeEventType = (typeof CHANGE_EVENT_TYPES)[number];

/**
 * The types whose data is the contract's (trust verdicts and reasons, the
 * metric to use instead, validation evidence): a reader without the
 * contract's scope is not served them (src/changes/feed.ts), as /graphql
 * refuses it `trust` and `lastValidatedAt`.
 */
export const CONTRACT_EVENT_TYPES: readonly ChangeEventType[] = ['metric.validated', 'metric.trust_changed'];

export function isChangeEventType(value: string): value is ChangeEventType {
  return (CHANGE_EVENT_TYPES as readonly string[]).includes(value);
}

/** The metric an event is about, as it is after the change. */
export interface MetricRef {
  id: string;
  key: string;
  name: string;
  lifecycleStatus: string;
}

/** A verdict as events carry it. */
export interface TrustState {
  verdict: string;
  reasons: string[];
  /** with untrusted_input: the upstream metrics responsible */
  untrusted_inputs?: UntrustedInput[];
}

/** An event before it is recorded: its number, id and time are given when it is (src/changes/record.ts). */
export interface NewChangeEvent {
  type: ChangeEventType;
  metric: MetricRef;
  /** the members of `data` after the metric's own */
  detail?: Record<string, unknown>;
}

/** The event as the feed and the webhooks serve it. */
export interface CloudEvent {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  data: Record<string, unknown>;
}

/** A recorded event, as read back. */
export interface StoredChangeEvent {
  orgId: string;
  seq: string;
  id: string;
  type: string;
  subject: string;
  time: Date;
  data: Record<string, unknown>;
}

export const eventSource = (orgId: string) => `/organizations/${orgId}`;

/** `data` of a new event: the metric's members first, then the type's own. */
export function eventData(event: NewChangeEvent): Record<string, unknown> {
  const { metric } = event;
  return {
    id: metric.id,
    key: metric.key,
    name: metric.name,
    lifecycle_status: metric.lifecycleStatus,
    ...event.detail,
  };
}

export function cloudEvent(event: StoredChangeEvent): CloudEvent {
  return {
    specversion: '1.0',
    id: event.id,
    source: eventSource(event.orgId),
    type: event.type,
    subject: event.subject,
    time: event.time.toISOString(),
    datacontenttype: 'application/json',
    data: event.data,
  };
}

/**
 * A verdict as events carry it (`preferred_metric_id` is the event's own
 * member), with the inputs behind untrusted_input.
 */
export const trustState = (trust: Trust): TrustState => ({
  verdict: trust.verdict,
  reasons: [...trust.reasons],
  ...(trust.untrustedInputs.length ? { untrusted_inputs: trust.untrustedInputs } : {}),
});
