import { defineConfig } from 'vitest/config';

export default defineConfig({
  // One graphql module for everyone: Pothos and yoga load its CommonJS build,
  // and a second (ESM) copy would fail graphql's instanceof checks.
  resolve: { alias: { graphql: 'graphql/index.js' } },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
