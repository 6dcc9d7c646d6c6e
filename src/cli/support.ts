/**
 * What every CLI command shares: its shape, the dependencies it runs with
 * (so tests run it in process against their own database), argument helpers
 * and printing.
 */
import type { ParseArgsConfig } from 'node:util';
import type { PrismaClient } from '../generated/prisma/client.js';
import { DEFAULT_STALE_VALIDATION_DAYS, type TrustPolicy } from '../metric/trust.js';
import type { WebhookSettings } from '../webhooks/settings.js';

export interface CliDeps {
  /** the database, or a function opening it on first use (so `help` never opens one) */
  prisma: PrismaClient | (() => Promise<PrismaClient>);
  out: (line: string) => void;
  err: (line: string) => void;
  /** standard input, read whole (a FILE or token given as `-`); default: the process's */
  stdin?: () => Promise<string>;
  /** the trust thresholds whose verdict changes applies and validations announce; default: the service's defaults */
  trust?: TrustPolicy;
  /** removals a prune makes without --allow-removals (PRUNE_MAX_REMOVALS); default: the service's default */
  pruneMaxRemovals?: number;
  /** PUBLIC_APP_URL: the origin of the links `login:link` prints (src/cli.ts always gives it) */
  publicAppUrl?: string;
  /** the service token of `--check --url` (METRIC_GOVERNANCE_TOKEN) */
  serviceToken?: string;
  /** what a webhook URL may be (WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE_NETWORKS); default: the service's defaults */
  webhooks?: WebhookSettings;
}

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | undefined>;

export interface Command {
  usage: string;
  summary: string;
  options: Options;
  /** how many positional arguments the command takes: a number, or at least `min` and at most `max` */
  positionals: number | { min: number; max: number };
  run(args: {
    values: Values;
    positionals: string[];
    prisma: () => Promise<PrismaClient>;
    deps: CliDeps;
    // biome-ignore lint/suspicious/noConfusingVoidType: most commands return nothing (exit 0); a number is the exit code
  }): Promise<void | number>;
}

/** A refusal with its reasons, one a line (a rejected document): printed as is, exit 1. */
export class CommandRejected extends Error {
  constructor(
    readonly heading: string,
    readonly lines: readonly string[],
    /** 1 unless said; `--check` gives 2, so that CI tells a broken document from drift (1) */
    readonly exitCode = 1,
  ) {
    super(heading);
  }
}

/** Wrong arguments: printed with the command's usage, exit 2. */
export class UsageError extends Error {}

export function requiredString(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function optionalNumber(values: Values, name: string, pattern: RegExp): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !pattern.test(value) || Number(value) <= 0) {
    throw new UsageError(`--${name} must be a number above 0 (got: ${String(value)})`);
  }
  return Number(value);
}

export const trustPolicy = (deps: CliDeps): TrustPolicy =>
  deps.trust ?? { staleValidationDays: DEFAULT_STALE_VALIDATION_DAYS };

export const iso = (date: Date | null): string => (date ? date.toISOString() : '-');

export function printTable(out: (line: string) => void, header: string[], rows: string[][]): void {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  out(line(header));
  for (const row of rows) out(line(row));
}

/** The whole of standard input. */
export async function readStdin(deps: CliDeps): Promise<string> {
  if (deps.stdin) return deps.stdin();
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
