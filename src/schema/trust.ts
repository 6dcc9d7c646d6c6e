/** `Metric.trust`: the trust verdict (src/metric/trust.ts), batched per request through its loader. */
import { builder } from '../builder.js';
import { TRUST_REASONS, TRUST_VERDICTS, type Trust, trustVerdict } from '../metric/trust.js';
import { CONTRACT_SCOPE_NOTE, requireContractScope } from './contract-scope.js';
import { MetricRef } from './metric.js';

export const TrustVerdictEnum = builder.enumType('TrustVerdict', {
  description: 'Whether to use a metric: use, use_with_caution or do_not_use.',
  values: TRUST_VERDICTS,
});

const TrustReasonEnum = builder.enumType('TrustReason', {
  description:
    'Why a verdict is not `use`: deprecated, superseded (do_not_use); pre_release, open_objections, ' +
    'never_validated, failed_validation, stale_validation, conflicting_definition (use_with_caution).',
  values: TRUST_REASONS,
});

const TrustRef = builder.objectRef<Trust>('Trust').implement({
  description:
    'Whether to use the metric, and why, from its lifecycle, supersession, objections, validation and conflicts.',
  fields: (t) => ({
    verdict: t.expose('verdict', { type: TrustVerdictEnum }),
    reasons: t.expose('reasons', {
      type: [TrustReasonEnum],
      description: 'The codes that decided the verdict, in a fixed order; empty for use.',
    }),
    preferredMetricId: t.exposeID('preferredMetricId', {
      nullable: true,
      description: 'For do_not_use: the metric that supersedes this one (the end of the chain), else null.',
    }),
  }),
});

builder.objectField(MetricRef, 'trust', (t) =>
  t.field({
    type: TrustRef,
    description: `Whether to use the metric, and why. ${CONTRACT_SCOPE_NOTE}`,
    resolve: async (metric, _args, ctx) => {
      requireContractScope(ctx);
      return trustVerdict(await ctx.loaders.trust.load(metric.id), ctx.config.trust, new Date());
    },
  }),
);
