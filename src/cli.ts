/**
 * The admin CLI: `npm run cli -- <command>` and `npm run db:load -- FILE`.
 * Only wiring: the commands live in cli-commands.ts; the configured database
 * is opened when a command first needs it (never for `help`) and always
 * closed, since an open pool or PGlite would keep the process alive.
 */
import { runCli } from './cli-commands.js';
import { databaseTarget } from './db/adapter.js';
import { type Database, openDatabase } from './db/client.js';
import { env } from './env.js';

let database: Database | undefined;
try {
  process.exitCode = await runCli(process.argv.slice(2), {
    prisma: async () => {
      database = await openDatabase(databaseTarget(env.DATABASE_URL, env.DATA_DIR), { migrate: false });
      return database.prisma;
    },
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    stdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
  });
} catch (error) {
  // Unexpected: the whole error once, for whoever has to look into it.
  console.error(error);
  if (/relation .* does not exist|table .* does not exist/i.test(String((error as Error)?.message))) {
    console.error('The database has no schema yet: run `npm run db:migrate` first.');
  }
  process.exitCode = 1;
} finally {
  await database?.close();
}
