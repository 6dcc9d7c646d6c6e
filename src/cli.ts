/**
 * The admin CLI: `npm run cli -- <command>` and `npm run db:load -- FILE`.
 * Only wiring: the commands live in cli-commands.ts; the configured database
 * is opened when a command first needs it (never for `help`) and always
 * closed, since an open pool or PGlite would keep the process alive.
 */
import { runCli } from './cli-commands.js';
import { databaseTarget, describeTarget } from './db/adapter.js';
import { type Database, openDatabase } from './db/client.js';
import { DatabaseInUseError } from './db/owner-lock.js';
import { env } from './env.js';
import { webhookSettingsFromEnv } from './webhooks/settings.js';

let database: Database | undefined;
try {
  process.exitCode = await runCli(process.argv.slice(2), {
    prisma: async () => {
      const target = databaseTarget(env.DATABASE_URL, env.DATA_DIR);
      database = await openDatabase(target, {
        // The embedded database is this machine's own: the CLI brings it up to date like `npm start`
        // (the first command on a fresh clone may come before any start). PostgreSQL is migrated by
        // its operator (`npm run db:migrate`) or by a starting server, never as a side effect.
        migrate: target.kind === 'embedded',
        poolMode: env.DATABASE_POOL_MODE,
        owner: `the CLI (${process.argv[2] ?? 'a command'})`,
      });
      return database.prisma;
    },
    trust: { staleValidationDays: env.TRUST_STALE_VALIDATION_DAYS },
    pruneMaxRemovals: env.PRUNE_MAX_REMOVALS,
    serviceToken: env.METRIC_GOVERNANCE_TOKEN,
    publicAppUrl: env.PUBLIC_APP_URL,
    webhooks: webhookSettingsFromEnv(env),
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    stdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
  });
} catch (error) {
  if (error instanceof DatabaseInUseError) {
    // Expected: another process owns the embedded database; nothing was done.
    console.error(`Error: ${error.message}`);
    process.exitCode = 1;
  } else if (/^P10\d\d$/.test(String((error as { code?: unknown })?.code))) {
    // Prisma's connection errors (P1000-P1017: unreachable, refused, no such database, ...): the
    // environment, not the code; their last line says which.
    const cause = String((error as Error).message)
      .trim()
      .split('\n')
      .at(-1);
    console.error(`Error: the database of ${describeTarget(databaseTarget(env.DATABASE_URL, env.DATA_DIR))}: ${cause}`);
    process.exitCode = 1;
  } else if (/relation .* does not exist|table .* does not exist/i.test(String((error as Error)?.message))) {
    console.error('Error: the database has no schema yet: run `npm run db:migrate` first.');
    process.exitCode = 1;
  } else {
    // Unexpected: the whole error once, for whoever has to look into it.
    console.error(error);
    process.exitCode = 1;
  }
} finally {
  await database?.close();
}
