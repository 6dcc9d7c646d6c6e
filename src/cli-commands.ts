/**
 * The admin CLI's commands: argument parsing and printing around the
 * functions of src/admin and src/fixtures. Runs in process against any
 * PrismaClient (tests pass their own database); src/cli.ts wires it to the
 * configured one. Exit codes: 0 done, 1 refused or failed, 2 bad usage.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { AdminError } from './admin/admin-error.js';
import { createApiKey, listApiKeys, revokeApiKey } from './admin/api-keys.js';
import { createLoginLink, LOGIN_LINK_TTL_MINUTES } from './admin/login-links.js';
import { createSession, DEFAULT_SESSION_TTL_HOURS, revokeSessions } from './admin/sessions.js';
import { EVIDENCE_COMMANDS } from './cli/evidence-commands.js';
import { EXPORT_COMMANDS } from './cli/export-commands.js';
import { REGISTRY_COMMANDS } from './cli/registry-commands.js';
import {
  type CliDeps,
  type Command,
  CommandRejected,
  iso,
  optionalNumber,
  printTable,
  requiredString,
  trustPolicy,
  UsageError,
  type Values,
} from './cli/support.js';
import { WEBHOOK_COMMANDS } from './cli/webhook-commands.js';
import { FixtureError, type LoadSummary, loadFixture } from './fixtures/load.js';
import type { PrismaClient } from './generated/prisma/client.js';
import { safeNext } from './http/pages/page-kit.js';

export type { CliDeps } from './cli/support.js';

const SUMMARY_LABELS: [keyof LoadSummary, string][] = [
  ['organizations', 'organizations'],
  ['users', 'users'],
  ['memberships', 'memberships'],
  ['sessions', 'sessions'],
  ['projects', 'projects'],
  ['domains', 'domains'],
  ['apiKeys', 'API keys'],
  ['metrics', 'metrics'],
  ['versions', 'versions'],
  ['approvals', 'approvals'],
  ['relationships', 'relationships'],
  ['validations', 'validations'],
  ['challenges', 'challenges'],
  ['threads', 'threads'],
  ['messages', 'messages'],
];

async function readJson(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new AdminError(`cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new AdminError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
}

const COMMANDS: Record<string, Command> = {
  load: {
    usage: 'load FILE',
    summary: 'load a fixture (docs/fixture-format.md), all or nothing',
    options: {},
    positionals: 1,
    async run({ positionals: [file = ''], prisma, deps }) {
      // The parsed file is not kept in a variable: once checked, a large file's JSON is garbage.
      const summary = await loadFixture(await prisma(), await readJson(file), {
        trust: trustPolicy(deps),
        consume: true,
      });
      deps.out(`Loaded ${file}:`);
      for (const [key, label] of SUMMARY_LABELS) {
        const reused =
          key === 'users' && summary.existingUsers > 0 ? ` (and ${summary.existingUsers} already present)` : '';
        deps.out(`  ${label.padEnd(14)} ${summary[key]}${reused}`);
      }
    },
  },
  'keys:create': {
    usage: 'keys:create --org ORG --name NAME [--scopes a,b] [--sandbox] [--rate-limit N]',
    summary: 'create an API key and print its secret once',
    options: {
      org: { type: 'string' },
      name: { type: 'string' },
      scopes: { type: 'string' },
      sandbox: { type: 'boolean' },
      'rate-limit': { type: 'string' },
    },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const scopes =
        typeof values.scopes === 'string' ? values.scopes.split(',').map((scope) => scope.trim()) : undefined;
      const key = await createApiKey(await prisma(), {
        org: requiredString(values, 'org'),
        name: requiredString(values, 'name'),
        scopes: scopes?.filter(Boolean),
        sandbox: values.sandbox === true,
        rateLimitPerMinute: optionalNumber(values, 'rate-limit', /^\d+$/) ?? null,
      });
      deps.out(`Created API key ${key.id} "${key.name}" for organization ${key.orgSlug}`);
      deps.out(
        `  scopes: ${key.scopes.join(', ')}; sandbox: ${key.sandbox}; rate limit: ${key.rateLimitPerMinute ?? 'default'}`,
      );
      deps.out('Secret (shown this once, it will not be shown again; store it now):');
      deps.out(key.secret);
    },
  },
  'keys:list': {
    usage: 'keys:list --org ORG',
    summary: "list an organization's API keys (never their secrets)",
    options: { org: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const org = requiredString(values, 'org');
      const keys = await listApiKeys(await prisma(), { org });
      if (keys.length === 0) {
        deps.out(`No API keys in organization ${org}.`);
        return;
      }
      const header = ['id', 'name', 'key_prefix', 'scopes', 'sandbox', 'rate limit', 'created', 'revoked', 'last used'];
      const rows = keys.map((key) => [
        key.id,
        key.name,
        key.keyPrefix,
        key.scopes.join(','),
        key.sandbox ? 'yes' : 'no',
        key.rateLimitPerMinute === null ? 'default' : String(key.rateLimitPerMinute),
        iso(key.createdAt),
        iso(key.revokedAt),
        iso(key.lastUsedAt),
      ]);
      printTable(deps.out, header, rows);
    },
  },
  'keys:revoke': {
    usage: 'keys:revoke --org ORG --id KEY_ID',
    summary: 'revoke an API key (revoking again keeps the first time)',
    options: { org: { type: 'string' }, id: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const revoked = await revokeApiKey(await prisma(), {
        org: requiredString(values, 'org'),
        id: requiredString(values, 'id'),
      });
      deps.out(
        revoked.alreadyRevoked
          ? `API key ${revoked.id} was already revoked at ${iso(revoked.revokedAt)}`
          : `Revoked API key ${revoked.id} at ${iso(revoked.revokedAt)}`,
      );
    },
  },
  'session:create': {
    usage: 'session:create --user USER --org ORG [--ttl-hours N]',
    summary: `create a signed-in session (default ${DEFAULT_SESSION_TTL_HOURS} hours) and print its token once`,
    options: { user: { type: 'string' }, org: { type: 'string' }, 'ttl-hours': { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const session = await createSession(await prisma(), {
        user: requiredString(values, 'user'),
        org: requiredString(values, 'org'),
        ttlHours: optionalNumber(values, 'ttl-hours', /^\d+(\.\d+)?$/),
      });
      deps.out(`Session ${session.id} for ${session.email} (${session.role}) in organization ${session.orgSlug}`);
      deps.out(`  expires ${iso(session.expiresAt)}`);
      deps.out('Token (shown this once, it will not be shown again); send it as the cookie:');
      deps.out(`session=${session.token}`);
    },
  },
  'login:link': {
    usage: 'login:link --org ORG --email EMAIL [--next PATH]',
    summary: `print a one-time sign-in link for a member (single use, ${LOGIN_LINK_TTL_MINUTES} minutes), landing on PATH or the organization's home`,
    options: { org: { type: 'string' }, email: { type: 'string' }, next: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const next = values.next === undefined ? null : safeNext(values.next);
      if (values.next !== undefined && !next) {
        throw new UsageError(
          `--next must be a path of this service, starting with one / (got: ${String(values.next)})`,
        );
      }
      if (!deps.publicAppUrl) throw new AdminError('login:link needs PUBLIC_APP_URL, the origin of its link');
      const link = await createLoginLink(await prisma(), {
        org: requiredString(values, 'org'),
        email: requiredString(values, 'email'),
        next,
        publicAppUrl: deps.publicAppUrl,
      });
      deps.out(
        `Sign-in link for ${link.email} in organization ${link.orgSlug} (one use, until ${iso(link.expiresAt)}):`,
      );
      deps.out(link.url);
    },
  },
  'session:revoke': {
    usage: 'session:revoke (--token - | --token TOKEN | --user USER --org ORG)',
    summary:
      "revoke one session by its token, or all of a user's sessions in an organization; " +
      '`--token -` reads the token from standard input, which keeps it out of the process list and shell history',
    options: { token: { type: 'string' }, user: { type: 'string' }, org: { type: 'string' } },
    positionals: 0,
    async run({ values, prisma, deps }) {
      const byToken = values.token !== undefined;
      if (byToken === (values.user !== undefined || values.org !== undefined)) {
        throw new UsageError('give either --token, or --user with --org');
      }
      if (byToken) {
        let token = requiredString(values, 'token');
        if (token === '-') {
          if (!deps.stdin) throw new UsageError('--token - needs standard input');
          // The first line: `echo "$TOKEN" |` or a here-string adds a line break.
          token = (await deps.stdin()).split(/\r?\n/)[0]?.trim() ?? '';
          if (!token) throw new UsageError('--token -: no token on standard input');
        }
        await revokeSessions(await prisma(), { token });
        deps.out('Revoked 1 session');
        return;
      }
      const revoked = await revokeSessions(await prisma(), {
        user: requiredString(values, 'user'),
        org: requiredString(values, 'org'),
      });
      deps.out(
        `Revoked ${revoked.count} session${revoked.count === 1 ? '' : 's'} of ${revoked.email} in organization ${revoked.orgSlug}`,
      );
    },
  },
  ...REGISTRY_COMMANDS,
  ...EXPORT_COMMANDS,
  ...EVIDENCE_COMMANDS,
  ...WEBHOOK_COMMANDS,
};

export function usage(): string[] {
  return [
    'Usage: npm run cli -- <command> [options]',
    '',
    'Commands:',
    ...Object.values(COMMANDS).flatMap((command) => [`  ${command.usage}`, `      ${command.summary}`]),
    '  help',
    '      this text',
    '',
    'ORG is an organization id or slug; USER a user id or email.',
  ];
}

/** Runs one CLI invocation (argv without node and script); resolves to the exit code. */
export async function runCli(argv: string[], deps: CliDeps): Promise<number> {
  const [name, ...rest] = argv;
  if (name === 'help' || name === '--help' || name === '-h') {
    for (const line of usage()) deps.out(line);
    return 0;
  }
  const command = name === undefined ? undefined : COMMANDS[name];
  if (!command) {
    if (name !== undefined) deps.err(`Unknown command: ${name}`);
    for (const line of usage()) deps.err(line);
    return 2;
  }
  let opened: Promise<PrismaClient> | undefined;
  const prisma = () => {
    const source = deps.prisma;
    opened ??= typeof source === 'function' ? source() : Promise.resolve(source);
    return opened;
  };
  try {
    const { values, positionals } = parseArgs({
      args: rest,
      options: command.options,
      allowPositionals: true,
      strict: true,
    });
    const { min, max } =
      typeof command.positionals === 'number'
        ? { min: command.positionals, max: command.positionals }
        : command.positionals;
    if (positionals.length < min || positionals.length > max) {
      const expected = min === max ? `${min || 'no'}` : `${min} to ${max}`;
      throw new UsageError(`expected ${expected} argument(s), got ${positionals.length}`);
    }
    return (await command.run({ values: values as Values, positionals, prisma, deps })) ?? 0;
  } catch (error) {
    return reportError(error, command, deps);
  }
}

function reportError(error: unknown, command: Command, deps: CliDeps): number {
  // parseArgs rejects unknown or malformed options with a TypeError carrying an ERR_PARSE_ARGS_* code.
  const parseArgsError = (error as { code?: unknown })?.code;
  if (
    error instanceof UsageError ||
    (typeof parseArgsError === 'string' && parseArgsError.startsWith('ERR_PARSE_ARGS'))
  ) {
    deps.err(`Error: ${(error as Error).message}`);
    deps.err(`Usage: npm run cli -- ${command.usage}`);
    return 2;
  }
  if (error instanceof CommandRejected) {
    deps.err(error.heading);
    for (const line of error.lines) deps.err(`  ${line}`);
    return error.exitCode;
  }
  if (error instanceof FixtureError) {
    deps.err('Fixture rejected, nothing was written:');
    for (const line of error.message.split('\n')) deps.err(`  ${line}`);
    return 1;
  }
  if (error instanceof AdminError) {
    deps.err(`Error: ${error.message}`);
    return 1;
  }
  throw error;
}
