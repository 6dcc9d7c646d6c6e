import { defineConfig } from 'prisma/config';
import { databaseTarget, EMBEDDED_DATABASE_URL, openAdapter } from './src/db/adapter.js';

// The embedded database has no URL, but the schema's datasource must always
// see a valid postgresql:// one (see src/db/adapter.ts).
const target = databaseTarget(process.env.DATABASE_URL, process.env.DATA_DIR || './.data');
if (target.kind === 'embedded') process.env.DATABASE_URL = EMBEDDED_DATABASE_URL;

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  engine: 'js',
  experimental: { adapter: true },
  adapter: async () => (await openAdapter(target)).factory,
});
