/**
 * `registry:apply --check --url URL` (and `registry:import --apply --check
 * --url URL`): the drift check of CI against a running service rather than
 * its database. The file goes to `PUT /api/registry?check=true` with the
 * service token of METRIC_GOVERNANCE_TOKEN; the service plans it and writes
 * nothing. Exit codes as the database check's: 0 in sync, 1 drift, 2 any
 * error (a refused document, an unknown organization, a bad token, a service
 * that does not answer).
 */
import type { PlanEntry } from '../registry/plan.js';
import type { SourceFormat } from '../registry/source.js';
import type { DocumentFormat } from '../registry/text.js';
import { CommandRejected, UsageError } from './support.js';

/** An apply's deadline on the service, and a little more for the network. */
const REMOTE_TIMEOUT_MS = 310_000;

export interface RemoteCheck {
  url: string;
  token: string | undefined;
  text: string;
  format: SourceFormat;
  syntax: DocumentFormat;
  source?: string;
  prune: boolean;
  defaultLifecycle?: string;
  forceConflicts: boolean;
}

export interface RemoteAnswer {
  /** the slug of the service token's organization */
  organization: string;
  source: string;
  plan: PlanEntry[];
  totals: Record<string, number>;
  in_sync: boolean;
}

const failed = (heading: string, lines: string[] = []) => new CommandRejected(heading, lines, 2);

/** The service's base URL: http or https, no query. */
function baseUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url must be an http or https URL (got: ${url})`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`--url must be an http or https URL (got: ${url})`);
  }
  return parsed;
}

/** The error lines of a refusal: its message and its details, whatever its shape. */
function errorLines(body: unknown): string[] {
  const error = (body as { error?: unknown } | null)?.error;
  const details = (body as { details?: unknown } | null)?.details;
  if (Array.isArray(details)) return details.map(String);
  if (typeof error === 'string') return [error];
  if (error && typeof error === 'object') return [String((error as { message?: unknown }).message ?? '')];
  return [];
}

/** Plans the file on the service; throws CommandRejected (exit 2) when it cannot say. */
export async function checkRemotely(check: RemoteCheck): Promise<RemoteAnswer> {
  const base = baseUrl(check.url);
  if (!check.token) throw failed('No service token: set METRIC_GOVERNANCE_TOKEN to a token with registry:write.');
  const target = new URL('api/registry', base.href.endsWith('/') ? base.href : `${base.href}/`);
  target.searchParams.set('check', 'true');
  if (check.format !== 'registry') target.searchParams.set('format', check.format);
  if (check.source !== undefined) target.searchParams.set('source', check.source);
  if (check.prune) target.searchParams.set('prune', 'true');
  if (check.forceConflicts) target.searchParams.set('force_conflicts', 'true');
  if (check.defaultLifecycle !== undefined) target.searchParams.set('default_lifecycle', check.defaultLifecycle);
  let response: Response;
  try {
    response = await fetch(target, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${check.token}`,
        'content-type': check.syntax === 'json' ? 'application/json' : 'application/yaml',
      },
      body: check.text,
      signal: AbortSignal.timeout(REMOTE_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
    throw failed(`The service at ${base.origin} did not answer: ${cause}`);
  }
  const body = (await response.json().catch(() => null)) as { data?: RemoteAnswer } | null;
  if (!response.ok) {
    throw failed(`The service refused the check (HTTP ${response.status}), nothing was written:`, errorLines(body));
  }
  const answer = body?.data;
  if (
    !answer ||
    typeof answer.in_sync !== 'boolean' ||
    !Array.isArray(answer.plan) ||
    typeof answer.organization !== 'string'
  ) {
    throw failed(`The service at ${base.origin} gave no plan (HTTP ${response.status}).`);
  }
  return answer;
}
