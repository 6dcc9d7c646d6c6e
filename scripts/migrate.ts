/** `npm run db:migrate`: applies pending migrations to the configured database. */
import { databaseTarget, describeTarget } from '../src/db/adapter.js';
import { openDatabase } from '../src/db/client.js';
import { env } from '../src/env.js';

const target = databaseTarget(env.DATABASE_URL, env.DATA_DIR);
try {
  const database = await openDatabase(target, { migrate: true, poolSize: 1, poolMode: env.DATABASE_POOL_MODE });
  await database.close();
  console.log(`${describeTarget(target)}: ${database.migrationLog.trim().split('\n').at(-1)}`);
} catch (error) {
  console.error((error as Error).message);
  process.exitCode = 1;
}
