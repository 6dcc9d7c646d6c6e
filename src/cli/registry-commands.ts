/**
 * The CLI commands that start and keep a registry without a fixture:
 * bootstrap (org:create, user:add), service tokens for CI, applying a
 * registry document (plan, dry run, drift check) and recording validation
 * evidence.
 */
import { readFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import { AdminError } from '../admin/admin-error.js';
import {
  createOrganization,
  ORGANIZATION_PLANS,
  type OrganizationPlan,
  resolveOrganization,
} from '../admin/organization.js';
import { createServiceToken, listServiceTokens, revokeServiceToken } from '../admin/service-tokens.js';
import { addUser, ROLES } from '../admin/users.js';
import { WRITE_SCOPES } from '../auth/service-token.js';
import { formatIssuePath } from '../fixtures/schema.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import { LifecycleStatus } from '../generated/prisma/enums.js';
import { USAGE_WINDOW_DAYS } from '../metric/usage.js';
import { type ApplyOutcome, applyRegistryDocument } from '../registry/apply.js';
import { applyUpload } from '../registry/apply-upload.js';
import { DEFAULT_SOURCE } from '../registry/document.js';
import { hasImpact, type Impact } from '../registry/impact.js';
import { ConflictsRefused } from '../registry/ownership.js';
import type { PlanEntry } from '../registry/plan.js';
import { changeLine } from '../registry/plan-values.js';
import { RegistryError } from '../registry/registry-error.js';
import { RemovalsNotAllowed } from '../registry/removals.js';
import { readRegistrySource, type SourceOptions } from '../registry/source.js';
import { detectFormat } from '../registry/text.js';
import {
  createUpload,
  deleteUpload,
  MAX_UPLOAD_BYTES,
  MAX_UPLOAD_METRICS,
  MAX_UPLOAD_PARTS,
  storeUploadPart,
  UploadTooLarge,
} from '../registry/upload.js';
import { parseValidationBatch, recordValidations } from '../registry/validations.js';
import { checkRemotely } from './remote-check.js';
import {
  type CliDeps,
  type Command,
  CommandRejected,
  iso,
  printTable,
  readStdin,
  requiredString,
  trustPolicy,
  UsageError,
  type Values,
} from './support.js';

const FORCE_CONFLICTS_HINT = '--force-conflicts';
const REJECTED = 'Document rejected, nothing was written:';
const CONFLICTS = `Conflicts with other sources, nothing was written (${FORCE_CONFLICTS_HINT} takes the fields over):`;
const IMPORT_REJECTED = 'File rejected, nothing was written:';
const LIFECYCLE_STATUSES = Object.values(LifecycleStatus);

const APPLY_OPTIONS = {
  org: { type: 'string' },
  'dry-run': { type: 'boolean' },
  prune: { type: 'boolean' },
  check: { type: 'boolean' },
  'allow-removals': { type: 'string' },
  'fail-on-impact': { type: 'boolean' },
  source: { type: 'string' },
  'force-conflicts': { type: 'boolean' },
  url: { type: 'string' },
} as const;

const confirmRemovals = (count: number) => `--allow-removals ${count}`;

/** --allow-removals N: a whole number of metrics, or absent. */
function allowRemovals(values: Values): number | undefined {
  const value = values['allow-removals'];
  if (value === undefined) return undefined;
  if (typeof value === 'string' && /^\d{1,7}$/.test(value)) return Number(value);
  throw new UsageError(`--allow-removals must be a whole number of metrics (got: ${String(value)})`);
}

/**
 * Reads `text` as `options` says, applies it to --org (or plans it: --dry-run,
 * --check) and prints the plan and its impact. The exit code: --check gives 1
 * on drift, --fail-on-impact 1 when a change has dependents or recent readers;
 * with either, a refused document is 2.
 */
async function applySource(
  text: string,
  options: Omit<SourceOptions, 'organization'>,
  values: Values,
  prisma: () => Promise<PrismaClient>,
  deps: CliDeps,
): Promise<number> {
  const { rejectedCode } = applyFlags(values);
  if (typeof values.url === 'string') return checkOnService(text, options, values, deps);
  const organization = await organizationOf(prisma, requiredString(values, 'org'), rejectedCode);
  const client = await prisma();
  const source = readRegistrySource(text, {
    ...options,
    organization: organization.slug,
    source: sourceOption(values),
  });
  if (!source.ok) {
    throw new CommandRejected(options.format === 'registry' ? REJECTED : IMPORT_REJECTED, source.lines, rejectedCode);
  }
  const named = source.document.organization;
  if (named !== organization.slug && named !== organization.id) {
    throw new UsageError(`the document is for organization "${named}", not ${organization.slug}`);
  }
  let outcome: ApplyOutcome;
  try {
    outcome = await applyRegistryDocument(client, organization.id, source.document, applyOptions(values, deps));
  } catch (error) {
    throw refusal(error, source.locate, rejectedCode);
  }
  return reportApply(outcome, organization.slug, values, deps);
}

/** The flags of an apply, checked, with the exit code of a refused document. */
function applyFlags(values: Values): { rejectedCode: number } {
  const check = values.check === true;
  const failOnImpact = values['fail-on-impact'] === true;
  // A guard for CI's plan step: an apply that refused on impact would be a second, unreviewed plan.
  if (failOnImpact && !check && values['dry-run'] !== true) {
    throw new UsageError('--fail-on-impact goes with --dry-run or --check');
  }
  allowRemovals(values);
  // Exit 1 means drift or impact to CI: a refused document is 2 then.
  return { rejectedCode: check || failOnImpact ? 2 : 1 };
}

/** The options of an apply as the command line asks for it. */
function applyOptions(values: Values, deps: CliDeps) {
  const check = values.check === true;
  return {
    dryRun: check || values['dry-run'] === true,
    prune: values.prune === true,
    forceConflicts: values['force-conflicts'] === true,
    forceHint: FORCE_CONFLICTS_HINT,
    refuseConflicts: check,
    allowRemovals: allowRemovals(values),
    maxRemovals: deps.pruneMaxRemovals,
    trust: trustPolicy(deps),
  };
}

/** An apply's refusal as the command's: conflicts are an error, never drift (exit 2). */
function refusal(error: unknown, locate: (path: readonly PropertyKey[]) => string, rejectedCode: number): unknown {
  if (error instanceof ConflictsRefused) return new CommandRejected(CONFLICTS, error.lines(locate), 2);
  if (error instanceof RegistryError) return new CommandRejected(REJECTED, error.lines(locate), rejectedCode);
  if (error instanceof RemovalsNotAllowed) {
    const [why = '', ...keys] = error.lines(confirmRemovals);
    return new CommandRejected(why, keys, rejectedCode);
  }
  return error;
}

/**
 * Prints the plan, its impact and totals, and says the exit code: --check
 * gives 1 on drift, --fail-on-impact 1 when a change has dependents or
 * recent readers.
 */
function reportApply(outcome: ApplyOutcome, organization: string, values: Values, deps: CliDeps): number {
  const check = values.check === true;
  const dryRun = check || values['dry-run'] === true;
  const failOnImpact = values['fail-on-impact'] === true;
  deps.out(
    `Plan for organization ${organization}${asSource(outcome.plan.source)}${dryRun ? ' (nothing written)' : ''}:`,
  );
  printPlan(deps.out, outcome.plan.entries);
  printImpact(deps.out, outcome.impact);
  deps.out(`Totals: ${totalsLine(outcome)}`);
  // Said only when it changes: a document without a trust policy keeps the stored one.
  if (outcome.plan.trustPolicy === 'changed') {
    deps.out(`Trust policy: changed${dryRun ? '' : " (every metric's verdict evaluated again)"}`);
  }
  if (dryRun && outcome.allowRemovalsRequired !== null) {
    deps.out(`Applying this plan needs ${confirmRemovals(outcome.allowRemovalsRequired)}.`);
  }
  const impacted = outcome.impact.filter(hasImpact).length;
  if (failOnImpact && impacted > 0) {
    deps.out(`Impact: ${impacted} changed metric${impacted === 1 ? ' has' : 's have'} dependents or recent readers.`);
  }
  const failed = failOnImpact && impacted > 0;
  if (check) {
    deps.out(outcome.plan.changes ? 'Drift: the registry differs from the document.' : 'No drift.');
    return outcome.plan.changes || failed ? 1 : 0;
  }
  if (!dryRun) deps.out(outcome.applied ? 'Applied.' : 'Nothing to apply: the registry matches the document.');
  return failed ? 1 : 0;
}

/**
 * Several registry documents applied as one (docs/registry.md, "Uploads in
 * parts"): each file is read and checked, then kept as a part of an upload
 * in the database, one file at a time; then the upload is applied (or
 * planned) whole and removed. A problem is said at its file.
 */
async function applyParts(
  files: readonly string[],
  values: Values,
  prisma: () => Promise<PrismaClient>,
  deps: CliDeps,
) {
  const { rejectedCode } = applyFlags(values);
  if (typeof values.url === 'string') throw new UsageError('--url takes one file');
  const organization = await organizationOf(prisma, requiredString(values, 'org'), rejectedCode);
  const client = await prisma();
  const upload = await createUpload(client, organization.id);
  try {
    for (const [index, file] of files.entries()) {
      const text = await readDocumentText(file, deps);
      const source = readRegistrySource(text, {
        format: 'registry',
        syntax: detectFormat(text, file === '-' ? undefined : file),
        organization: organization.slug,
      });
      const inFile = (lines: readonly string[]) => lines.map((line) => `${file}: ${line}`);
      if (!source.ok) throw new CommandRejected(REJECTED, inFile(source.lines), rejectedCode);
      const named = source.document.organization;
      if (named !== organization.slug && named !== organization.id) {
        throw new UsageError(`${file} is for organization "${named}", not ${organization.slug}`);
      }
      try {
        await storeUploadPart(
          client,
          organization.id,
          upload.upload_id,
          index + 1,
          source.document,
          Buffer.byteLength(text),
        );
      } catch (error) {
        if (error instanceof RegistryError)
          throw new CommandRejected(REJECTED, inFile(error.lines(source.locate)), rejectedCode);
        if (error instanceof UploadTooLarge) {
          const bound =
            error.limit === 'metrics' ? `${MAX_UPLOAD_METRICS} metrics` : `${MAX_UPLOAD_BYTES / 1024 / 1024} MiB`;
          throw new CommandRejected(`${REJECTED} the files hold more than ${bound} in all`, [], rejectedCode);
        }
        throw error;
      }
    }
    const source = sourceOption(values);
    let outcome: ApplyOutcome;
    try {
      outcome = await applyUpload(client, organization.id, upload.upload_id, {
        ...applyOptions(values, deps),
        ...(source === undefined ? {} : { source }),
      });
    } catch (error) {
      // parts[p] is the p-th file.
      throw refusal(error, (path) => filePlace(files, path), rejectedCode);
    }
    return reportApply(outcome, organization.slug, values, deps);
  } finally {
    // Applied, the upload is gone already; planned or refused, it is not kept for a later command.
    await deleteUpload(client, organization.id, upload.upload_id);
  }
}

/** `parts[2].metrics[0].inputs[0]` as `b.yaml: metrics[0].inputs[0]` (the second file). */
function filePlace(files: readonly string[], path: readonly PropertyKey[]): string {
  const [head, part, ...rest] = path;
  if (head !== 'parts' || typeof part !== 'number') return formatIssuePath(path);
  return `${files[part - 1] ?? `part ${part}`}: ${formatIssuePath(rest)}`;
}

/** The plan's heading names its source unless it is the registry document's default. */
const asSource = (source: string) => (source === DEFAULT_SOURCE ? '' : ` as source ${source}`);

/** The organization of --org; one that does not exist is an error, exit 2 for a check (never drift). */
async function organizationOf(prisma: () => Promise<PrismaClient>, org: string, code: number) {
  try {
    return await resolveOrganization(await prisma(), org);
  } catch (error) {
    if (error instanceof AdminError && code === 2) throw new CommandRejected(`Error: ${error.message}`, [], code);
    throw error;
  }
}

/** --check --url: the plan made by the service, with METRIC_GOVERNANCE_TOKEN; the database is not opened. */
async function checkOnService(
  text: string,
  options: Omit<SourceOptions, 'organization'>,
  values: Values,
  deps: CliDeps,
): Promise<number> {
  if (values.check !== true) throw new UsageError('--url goes with --check');
  if (values['fail-on-impact'] === true) throw new UsageError('--fail-on-impact does not go with --url');
  const answer = await checkRemotely({
    url: values.url as string,
    token: deps.serviceToken,
    text,
    format: options.format,
    syntax: options.syntax,
    source: sourceOption(values),
    prune: values.prune === true,
    defaultLifecycle: options.defaultLifecycle,
    forceConflicts: values['force-conflicts'] === true,
  });
  const org = values.org;
  if (typeof org === 'string' && org !== answer.organization) {
    throw new CommandRejected(`The service token is for organization ${answer.organization}, not ${org}.`, [], 2);
  }
  deps.out(`Plan for organization ${answer.organization}${asSource(answer.source)} (nothing written):`);
  printPlan(deps.out, answer.plan);
  deps.out(answer.in_sync ? 'No drift.' : 'Drift: the registry differs from the document.');
  return answer.in_sync ? 0 : 1;
}

/** One line per impacted metric: what the change is, what is built on it, who read it lately. */
function printImpact(out: (line: string) => void, impact: readonly Impact[]): void {
  if (impact.length === 0) return;
  out(`Impact (dependents; readers in the last ${USAGE_WINDOW_DAYS} days):`);
  const width = Math.max(...impact.map((entry) => entry.change.length));
  const named = (part: { count: number; keys: string[] }) =>
    part.count === 0 ? '' : ` (${part.keys.join(', ')}${part.count > part.keys.length ? ', …' : ''})`;
  for (const entry of impact) {
    const { dependents, readers } = entry;
    out(
      `  ${entry.change.padEnd(width)}  ${entry.key}: ${dependents.count} dependent${dependents.count === 1 ? '' : 's'}` +
        `${named(dependents)}, ${readers.count} reader${readers.count === 1 ? '' : 's'}${named(readers)}`,
    );
  }
}

async function readDocumentText(file: string, deps: CliDeps): Promise<string> {
  if (file === '-') return readStdin(deps);
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new AdminError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

/** The plan as a table, each changed field under its metric with its old and new value, and each conflict. */
function printPlan(out: (line: string) => void, entries: readonly PlanEntry[]): void {
  const width = Math.max(9, ...entries.map((entry) => entry.result.length));
  for (const entry of entries) {
    const fields = entry.changed_fields.length > 0 ? `  (${entry.changed_fields.join(', ')})` : '';
    out(`  ${entry.result.padEnd(width)}  ${entry.key}${fields}`);
    for (const change of entry.changes ?? []) out(`      ${changeLine(change)}`);
    for (const conflict of entry.conflicts ?? [])
      out(`      conflict: ${conflict.field} is owned by ${conflict.owner}`);
  }
}

/** --source NAME, or absent (the document's source, or the importer's). */
function sourceOption(values: Values): string | undefined {
  const value = values.source;
  return typeof value === 'string' ? value : undefined;
}

function totalsLine(outcome: ApplyOutcome): string {
  const { totals } = outcome.plan;
  return `${totals.created} created, ${totals.restored} restored, ${totals.updated} updated, ${totals.unchanged} unchanged, ${totals.absent} absent, ${totals.removed} removed`;
}

export const REGISTRY_COMMANDS: Record<string, Command> = {
  'org:create': {
    usage: `org:create --slug SLUG --name NAME [--plan ${ORGANIZATION_PLANS.join('|')}]`,
    summary: 'create an organization (default plan: team)',
    options: { slug: { type: 'string' }, name: { type: 'string' }, plan: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const organization = await createOrganization(await prisma(), {
        slug: requiredString(values, 'slug'),
        name: requiredString(values, 'name'),
        plan: typeof values.plan === 'string' ? (values.plan as OrganizationPlan) : undefined,
      });
      deps.out(
        `Created organization ${organization.slug} "${organization.name}" (${organization.id}), plan ${organization.plan}`,
      );
    },
  },
  'user:add': {
    usage: `user:add --org ORG --email EMAIL --name NAME --role ${ROLES.join('|')}`,
    summary: 'add a member to an organization (creating the user when the email is new; a member gets the role given)',
    options: { org: { type: 'string' }, email: { type: 'string' }, name: { type: 'string' }, role: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const added = await addUser(await prisma(), {
        org: requiredString(values, 'org'),
        email: requiredString(values, 'email'),
        name: requiredString(values, 'name'),
        role: requiredString(values, 'role'),
      });
      const what =
        added.previousRole === null
          ? `Added ${added.email} as ${added.role}`
          : added.previousRole === added.role
            ? `${added.email} is already ${added.role}`
            : `Changed ${added.email} from ${added.previousRole} to ${added.role}`;
      deps.out(`${what} in organization ${added.orgSlug}${added.newUser ? ' (new user)' : ''}`);
    },
  },
  'tokens:create': {
    usage: `tokens:create --org ORG --name NAME --scopes ${WRITE_SCOPES.join(',')}`,
    summary: 'create a service token for automation (CI) and print it once',
    options: { org: { type: 'string' }, name: { type: 'string' }, scopes: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const token = await createServiceToken(await prisma(), {
        org: requiredString(values, 'org'),
        name: requiredString(values, 'name'),
        scopes: requiredString(values, 'scopes')
          .split(',')
          .map((scope) => scope.trim())
          .filter(Boolean),
      });
      deps.out(`Created service token ${token.id} "${token.name}" for organization ${token.orgSlug}`);
      deps.out(`  scopes: ${token.scopes.join(', ')}`);
      deps.out('Token (shown this once, it will not be shown again; store it as a CI secret):');
      deps.out(token.secret);
    },
  },
  'tokens:list': {
    usage: 'tokens:list --org ORG',
    summary: "list an organization's service tokens (never their secrets)",
    options: { org: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const org = requiredString(values, 'org');
      const tokens = await listServiceTokens(await prisma(), { org });
      if (tokens.length === 0) {
        deps.out(`No service tokens in organization ${org}.`);
        return;
      }
      printTable(
        deps.out,
        ['id', 'name', 'token_prefix', 'scopes', 'created', 'revoked', 'last used'],
        tokens.map((token) => [
          token.id,
          token.name,
          token.tokenPrefix,
          token.scopes.join(','),
          iso(token.createdAt),
          iso(token.revokedAt),
          iso(token.lastUsedAt),
        ]),
      );
    },
  },
  'tokens:revoke': {
    usage: 'tokens:revoke --org ORG --id TOKEN_ID',
    summary: 'revoke a service token (revoking again keeps the first time)',
    options: { org: { type: 'string' }, id: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const revoked = await revokeServiceToken(await prisma(), {
        org: requiredString(values, 'org'),
        id: requiredString(values, 'id'),
      });
      deps.out(
        revoked.alreadyRevoked
          ? `Service token ${revoked.id} was already revoked at ${iso(revoked.revokedAt)}`
          : `Revoked service token ${revoked.id} at ${iso(revoked.revokedAt)}`,
      );
    },
  },
  'registry:apply': {
    usage:
      'registry:apply --org ORG FILE [FILE ...] [--dry-run] [--prune [--allow-removals N]] [--check] [--fail-on-impact]',
    summary:
      'make the registry match a registry document (YAML or JSON; FILE - reads standard input), or several applied ' +
      `as one (a registry of more than one document lists, up to ${MAX_UPLOAD_PARTS} files), and print the plan ` +
      'and its impact; --dry-run writes nothing; --check writes nothing and exits 0 when the registry matches the ' +
      'document, 1 when it differs, 2 when the document is refused; --fail-on-impact (with --dry-run or --check) ' +
      'exits 1 when a metric the plan removes, deprecates, supersedes or redefines has dependents or recent ' +
      'readers, 2 when the document is refused; a --prune removing more than PRUNE_MAX_REMOVALS ' +
      'metrics, or every metric, needs --allow-removals with at least its count (the dry run says it)',
    options: APPLY_OPTIONS,
    positionals: { min: 1, max: MAX_UPLOAD_PARTS },
    async run({ values, positionals, prisma, deps }) {
      if (positionals.length > 1) return applyParts(positionals, values, prisma, deps);
      const [file = ''] = positionals;
      const text = await readDocumentText(file, deps);
      const syntax = detectFormat(text, file === '-' ? undefined : file);
      return applySource(text, { format: 'registry', syntax }, values, prisma, deps);
    },
  },
  'registry:import': {
    usage:
      'registry:import --from dbt|osi --org ORG FILE [--default-lifecycle STATUS] [--apply [--dry-run] [--prune [--allow-removals N]] [--check] [--fail-on-impact]]',
    summary:
      'translate a dbt semantic manifest (target/semantic_manifest.json) or an OSI document into a registry document and print it (YAML); with --apply, apply it as registry:apply does',
    options: {
      ...APPLY_OPTIONS,
      from: { type: 'string' },
      'default-lifecycle': { type: 'string' },
      apply: { type: 'boolean' },
    },
    positionals: 1,
    async run({ values, positionals: [file = ''], prisma, deps }) {
      const from = requiredString(values, 'from');
      if (from !== 'dbt' && from !== 'osi') throw new UsageError(`--from must be dbt or osi (got: ${from})`);
      const lifecycle = values['default-lifecycle'];
      if (lifecycle !== undefined && !LIFECYCLE_STATUSES.includes(lifecycle as LifecycleStatus)) {
        throw new UsageError(`--default-lifecycle must be one of ${LIFECYCLE_STATUSES.join(', ')}`);
      }
      const applyOnly = [
        'dry-run',
        'prune',
        'check',
        'allow-removals',
        'fail-on-impact',
        'force-conflicts',
        'url',
      ].filter((name) => values[name] !== undefined && values[name] !== false);
      if (values.apply !== true && applyOnly.length > 0) {
        throw new UsageError(`--${applyOnly[0]} goes with --apply`);
      }
      const text = await readDocumentText(file, deps);
      const options = {
        format: from,
        syntax: detectFormat(text, file === '-' ? undefined : file),
        defaultLifecycle: lifecycle as LifecycleStatus | undefined,
      } as const;
      if (values.apply === true) return applySource(text, options, values, prisma, deps);
      // Printing is a translation: no database is opened (the embedded one may be the server's).
      const source = readRegistrySource(text, {
        ...options,
        organization: requiredString(values, 'org'),
        source: sourceOption(values),
      });
      if (!source.ok) throw new CommandRejected(IMPORT_REJECTED, source.lines);
      deps.out(stringify(source.input, { lineWidth: 0 }).trimEnd());
      return 0;
    },
  },
  'validation:record': {
    usage: 'validation:record --org ORG --metric KEY --status passed|failed [--ran-at T] [--details D] [--source S]',
    summary: 'record validation evidence for a metric (default --ran-at: now); the trust verdict follows at once',
    options: {
      org: { type: 'string' },
      metric: { type: 'string' },
      status: { type: 'string' },
      'ran-at': { type: 'string' },
      details: { type: 'string' },
      source: { type: 'string' },
    },
    positionals: 0,
    async run({ values, prisma, deps }) {
      let batch: ReturnType<typeof parseValidationBatch>;
      try {
        batch = parseValidationBatch({
          results: [
            {
              metric_key: requiredString(values, 'metric'),
              status: requiredString(values, 'status'),
              ran_at: typeof values['ran-at'] === 'string' ? values['ran-at'] : new Date().toISOString(),
              ...(typeof values.details === 'string' ? { details: values.details } : {}),
              ...(typeof values.source === 'string' ? { source: values.source } : {}),
            },
          ],
        });
      } catch (error) {
        if (error instanceof RegistryError)
          throw new UsageError(error.lines()[0]?.replace(/^results\[0\]\./, '--') ?? '');
        throw error;
      }
      const client = await prisma();
      const organization = await resolveOrganization(client, requiredString(values, 'org'));
      try {
        const recorded = await recordValidations(client, organization.id, batch, { trust: trustPolicy(deps) });
        const [result] = batch.results;
        deps.out(
          recorded.recorded === 1
            ? `Recorded ${result?.status} validation of ${result?.metric_key} at ${result?.ran_at}`
            : `Already recorded: ${result?.status} validation of ${result?.metric_key} at ${result?.ran_at}`,
        );
      } catch (error) {
        if (error instanceof RegistryError) throw new AdminError(error.problems[0]?.message ?? error.message);
        throw error;
      }
    },
  },
};
