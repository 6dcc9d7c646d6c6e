/**
 * The trust verdict of a metric's page in sentences: one per reason code
 * (src/metric/trust.ts), said to a person reading the catalog (the MCP
 * tools' sentences, trustReasonSentences, speak to agents and name tools),
 * with the metrics a reason is about linked to their pages.
 */
import type { TrustReason } from '../rest/operations.generated.js';
import { type Html, html } from './html.js';
import { orgPath, type Viewer } from './layout.js';

export const VERDICT_LABELS: Record<string, string> = {
  use: 'Use',
  use_with_caution: 'Use with caution',
  do_not_use: 'Do not use',
};

export interface TrustInput {
  verdict: string;
  reasons: readonly TrustReason[];
  preferredMetricId: string | null;
  untrustedInputs: readonly { id: string; key: string; verdict: string; reasons: readonly string[] }[];
  lifecycleStatus: string;
  policyTier: string;
  openObjections: number;
  lastValidatedAt: string | null;
  now: Date;
}

const DAY_MS = 24 * 60 * 60 * 1000;

const metricLink = (viewer: Viewer, id: string, text: string) =>
  html`<a href="${orgPath(viewer, 'metrics', id)}">${text}</a>`;

/** The sentence of one reason. */
function sentence(viewer: Viewer, reason: TrustReason, trust: TrustInput): Html {
  const preferred = trust.preferredMetricId;
  switch (reason) {
    case 'deprecated':
      return preferred
        ? html`This metric is deprecated; use ${metricLink(viewer, preferred, 'the metric that replaces it')} instead.`
        : html`This metric is deprecated and no replacement is recorded; ask its owner team which metric to use.`;
    case 'superseded':
      return html`Another metric supersedes this one; use ${
        preferred ? metricLink(viewer, preferred, 'the superseding metric') : 'it'
      } instead.`;
    case 'pre_release':
      return html`Its lifecycle status is ${trust.lifecycleStatus}, not yet approved or released: the definition may still change, so treat its figures as provisional.`;
    case 'open_objections': {
      const n = trust.openObjections;
      return n > 0
        ? html`${n} open objection${n === 1 ? '' : 's'} dispute${n === 1 ? 's' : ''} this definition; read the discussion before relying on it.`
        : html`An open objection disputes this definition; read the discussion before relying on it.`;
    }
    case 'never_validated':
      return html`No validation run is recorded: its figures have never been checked against a trusted source.`;
    case 'failed_validation':
      return html`The latest validation run failed: its figures are not verified.`;
    case 'stale_validation': {
      const days = trust.lastValidatedAt
        ? Math.floor((trust.now.getTime() - new Date(trust.lastValidatedAt).getTime()) / DAY_MS)
        : null;
      return html`The latest validation evidence is ${days === null ? 'old' : `${days} days old`}, past the limit of its trust policy; it needs validating again.`;
    }
    case 'conflicting_definition':
      return html`Another metric of the organization conflicts with this definition; check the relationships below for which one is meant.`;
    case 'untrusted_input':
      return trust.untrustedInputs.length
        ? html`It is computed from ${trust.untrustedInputs.length === 1 ? 'an input' : 'inputs'} that cannot be trusted: ${trust.untrustedInputs.map(
            (input, i) =>
              html`${i > 0 ? ', ' : ''}${metricLink(viewer, input.id, input.key)} (${VERDICT_LABELS[input.verdict] ?? input.verdict}${
                input.reasons.length ? `: ${input.reasons.join(', ')}` : ''
              })`,
          )}. Its figures inherit that problem.`
        : html`It is computed from an input that cannot be trusted; its lineage below shows its inputs.`;
    case 'no_approved_version':
      return html`The trust policy of ${trust.policyTier} requires an approved or released version, and none is recorded.`;
    case 'no_owner_team':
      return html`The trust policy of ${trust.policyTier} requires an owner team, and none is recorded.`;
  }
  return html`${reason}`;
}

/** One sentence per reason, in the verdict's order. */
export function trustSentences(viewer: Viewer, trust: TrustInput): Html[] {
  return trust.reasons.map((reason) => sentence(viewer, reason, trust));
}
