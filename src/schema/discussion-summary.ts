/** The DiscussionSummary object: a generated summary of a metric's discussion and its billing decision. */
import { builder } from '../builder.js';
import type { SummaryOutcome } from '../summaries/service.js';

export const DiscussionSummaryRef = builder.objectRef<SummaryOutcome>('DiscussionSummary').implement({
  description:
    "A natural-language summary of the metric's discussion (threads and non-deleted messages), cached per " +
    'discussion state and organization. Asking for it may generate one and bill the organization of the caller.',
  fields: (t) => ({
    text: t.exposeString('text', {
      nullable: true,
      description: 'null when degraded (see degradedReason)',
    }),
    cacheHit: t.exposeBoolean('cacheHit', {
      description: 'true when a summary generated earlier for this discussion state served the call',
    }),
    charged: t.exposeBoolean('charged', {
      description: 'true exactly when this call persisted a new billable meter event',
    }),
    degradedReason: t.exposeString('degradedReason', {
      nullable: true,
      description:
        'Why text is null: no_discussion, timeout, generator_error, daily_cap_exceeded, pricing_unavailable, ' +
        'discussion_unavailable, generator_busy; null when text is present',
    }),
  }),
});
