/**
 * /graphql compiles a document from its second run (src/graphql-server.ts).
 * A document may hold several operations and each request names the one it
 * runs: the compiled query must be that operation's, whatever ran before it
 * (the audit found the first operation compiled answering every later name,
 * charged as the named one). Every operation of one document, in every order,
 * three times each (so twice compiled), must answer what its interpreted run
 * answered, and be charged the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../fixtures/registry.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const fixture = registry();
const org = fixture.org({ plan: 'enterprise' });
const key = org.key({ rate_limit_per_minute: 5_000 });
for (let i = 0; i < 3; i++) org.metric({ name: `Metric ${i}` });

const heavyFields = Array.from({ length: 20 }, (_, i) => `a${i}: metrics(pageSize: 100) { items { name } }`).join(' ');
const OPERATIONS = {
  Cheap: 'query Cheap { __typename }',
  Heavy: `query Heavy { ${heavyFields} }`,
  Names: 'query Names($size: Int!) { metrics(pageSize: $size) { items { name } } }',
} as const;
type OperationName = keyof typeof OPERATIONS;
const NAMES = Object.keys(OPERATIONS) as OperationName[];
const document = Object.values(OPERATIONS).join('\n');
const variables = { size: 2 };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ fixture: fixture.build() });
});
afterAll(() => t.close());

let lastRemaining: number | undefined;

/** Runs `operationName` of `query`; its answer and the units it spent (fixed one-minute window). */
async function run(query: string, operationName: OperationName) {
  const res = await t.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
    payload: { query, operationName, variables },
  });
  expect(res.statusCode, res.body).toBe(200);
  const remaining = Number(res.headers['ratelimit-remaining']);
  const limit = Number(res.headers['ratelimit-limit']);
  // A remaining count that grew means a new window began with this request.
  const spent =
    lastRemaining === undefined || remaining >= lastRemaining ? limit - remaining : lastRemaining - remaining;
  lastRemaining = remaining;
  return { body: res.json(), spent };
}

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

describe('compiled operations of a multi-operation document', () => {
  it('every operation, in every order, answers and costs as interpreted on its first, second and third run', async () => {
    // The interpreted answers: each operation run once in a document of its own text (a new parse, never compiled).
    await run(`${document}\n# warm-up`, 'Cheap');
    const interpreted = {} as Record<OperationName, { body: unknown; spent: number }>;
    for (const name of NAMES) interpreted[name] = await run(`${document}\n# interpreted ${name}`, name);
    expect(Object.keys((interpreted.Heavy.body as { data: object }).data)).toHaveLength(20);
    expect(interpreted.Heavy.spent).toBe(20);
    expect(interpreted.Cheap.body).toEqual({ data: { __typename: 'Query' } });
    expect(interpreted.Cheap.spent).toBe(1);

    const orders = permutations(NAMES);
    expect(orders).toHaveLength(6);
    for (const [index, order] of orders.entries()) {
      // A document text of this order's own, so its runs start uncompiled.
      const query = `${document}\n# order ${index}`;
      for (let round = 1; round <= 3; round++) {
        for (const name of order) {
          const { body, spent } = await run(query, name);
          const label = `${order.join(',')} round ${round}: ${name}`;
          expect(body, label).toEqual(interpreted[name].body);
          expect(spent, label).toBe(interpreted[name].spent);
        }
      }
    }
  });
});
