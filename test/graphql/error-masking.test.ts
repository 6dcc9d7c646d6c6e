/**
 * An unexpected error on /graphql (here a database error: the metric table
 * is renamed away behind the service's back) is `Unexpected error.` to the
 * client, with no original error, stack or PostgreSQL message, also with
 * NODE_ENV=development (yoga's default shows them then). Only the explicit
 * GRAPHQL_ERROR_DETAILS=1 shows them.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { buildTestInstance, startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org();
const key = org.key();
org.metric({ name: 'Net Revenue' });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build() });
  await t.database.prisma.$executeRawUnsafe('ALTER TABLE metric RENAME TO metric_gone');
});
afterAll(() => t.close());

const nodeEnv = process.env.NODE_ENV;
beforeEach(() => {
  process.env.NODE_ENV = 'development';
});
afterEach(() => {
  process.env.NODE_ENV = nodeEnv;
});

const QUERY = '{ metrics(pageSize: 5) { items { name } } }';

function graphql(app: TestApp['app']) {
  return app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
    payload: { query: QUERY },
  });
}

describe('GraphQL error masking', () => {
  it('NODE_ENV=development: a database error is `Unexpected error.`, nothing of the original', async () => {
    const res = await graphql(t.app);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      data: null,
      errors: [
        {
          message: 'Unexpected error.',
          locations: [{ line: 1, column: 26 }],
          path: ['metrics', 'items'],
          extensions: { code: 'INTERNAL_SERVER_ERROR' },
        },
      ],
    });
    expect(res.body).not.toMatch(/metric_gone|relation|stack|originalError|\.ts:/);
  });

  it('GRAPHQL_ERROR_DETAILS=1 shows the original error', async () => {
    const detailed = await buildTestInstance(t.database, { graphqlErrorDetails: true });
    try {
      const res = await graphql(detailed);
      const [error] = res.json().errors;
      expect(error.message).toBe('Unexpected error.');
      expect(error.extensions.originalError.message).toMatch(/metric/);
      expect(typeof error.extensions.originalError.stack).toBe('string');
    } finally {
      await detailed.close();
    }
  });
});
