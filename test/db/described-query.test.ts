/**
 * Named statements described once per connection (src/db/described-query.ts):
 * later runs send no Describe, so the server sends no RowDescription, and
 * their rows are read with the first run's description. PostgreSQL only
 * (PGlite runs statements through the driver adapter).
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { queryDescribedOnce } from '../../src/db/described-query.js';
import { createTestTarget } from '../helpers/database.js';
import { lacks, POSTGRES } from '../helpers/needs.js';

/** Counts the RowDescription messages `client`'s connection receives. */
function countDescriptions(client: pg.Client): () => number {
  let seen = 0;
  (client as unknown as { connection: NodeJS.EventEmitter }).connection.on('rowDescription', () => {
    seen += 1;
  });
  return () => seen;
}

const READ = {
  name: 'described_read',
  text: `SELECT $1::int AS n, $2::text AS label, timestamptz '2026-01-02 03:04:05+00' + make_interval(days => $1::int) AS at,
                jsonb_build_object('n', $1::int) AS doc, NULL::text AS nothing`,
};

describe.skipIf(lacks(POSTGRES))('a named statement described once per connection (PostgreSQL)', () => {
  let url: string;
  let drop: () => Promise<void>;
  const clients: pg.Client[] = [];

  const connect = async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    const created = await createTestTarget();
    if (created.target.kind !== 'postgres') throw new Error('PostgreSQL expected');
    url = created.target.url;
    drop = created.drop;
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.end()));
  });

  afterAll(async () => {
    await drop?.();
  });

  it('describes on the first run only, and reads every later run as node-postgres itself would', async () => {
    const client = await connect();
    const descriptions = countDescriptions(client);
    const reference = await connect();
    for (let n = 1; n <= 5; n++) {
      const values = [n, `label ${n}`];
      const result = await queryDescribedOnce(client, { ...READ, values });
      const expected = await reference.query({ ...READ, values });
      expect(result.rows).toEqual(expected.rows);
      expect(result.rows[0]?.at).toBeInstanceOf(Date);
      expect(result.rows[0]?.doc).toEqual({ n });
      expect(result.fields.map((field) => field.name)).toEqual(['n', 'label', 'at', 'doc', 'nothing']);
      expect(result.rowCount).toBe(1);
    }
    expect(descriptions()).toBe(1);
  });

  it('describes again on another connection, and runs a statement of no rows or many rows', async () => {
    const first = await connect();
    await queryDescribedOnce(first, { ...READ, values: [1, 'a'] });
    const second = await connect();
    const descriptions = countDescriptions(second);
    const rows = { name: 'described_series', text: 'SELECT g AS n FROM generate_series(1, $1::int) AS g' };
    for (const count of [3, 0, 50]) {
      const result = await queryDescribedOnce(second, { ...rows, values: [count] });
      expect(result.rows).toEqual(Array.from({ length: count }, (_, i) => ({ n: i + 1 })));
    }
    expect((await queryDescribedOnce(second, { ...READ, values: [2, 'b'] })).rows[0]?.label).toBe('b');
    // One description for each statement on this connection.
    expect(descriptions()).toBe(2);
  });

  it('fails a run as PostgreSQL does, and the connection serves the next one', async () => {
    const client = await connect();
    const divide = { name: 'described_divide', text: 'SELECT 10 / $1::int AS q' };
    expect((await queryDescribedOnce(client, { ...divide, values: [2] })).rows).toEqual([{ q: 5 }]);
    await expect(queryDescribedOnce(client, { ...divide, values: [0] })).rejects.toThrow('division by zero');
    expect((await queryDescribedOnce(client, { ...divide, values: [5] })).rows).toEqual([{ q: 2 }]);
  });

  it('never reads rows of a new shape with an old description: PostgreSQL refuses the statement', async () => {
    const client = await connect();
    await client.query('CREATE TEMP TABLE shape (a int)');
    await client.query('INSERT INTO shape VALUES (1)');
    const read = { name: 'described_shape', text: 'SELECT * FROM shape WHERE a = $1::int' };
    expect((await queryDescribedOnce(client, { ...read, values: [1] })).rows).toEqual([{ a: 1 }]);
    await client.query(`ALTER TABLE shape ADD COLUMN b text DEFAULT 'x'`);
    await expect(queryDescribedOnce(client, { ...read, values: [1] })).rejects.toThrow(
      'cached plan must not change result type',
    );
  });

  it('runs in node-postgres pipeline mode, several statements in one write', async () => {
    const client = new pg.Client({ connectionString: url, pipeline: true } as pg.ClientConfig);
    await client.connect();
    clients.push(client);
    const descriptions = countDescriptions(client);
    const runs = Array.from({ length: 20 }, (_, n) => queryDescribedOnce(client, { ...READ, values: [n, `p${n}`] }));
    const results = await Promise.all(runs);
    expect(results.map((result) => result.rows[0]?.label)).toEqual(Array.from({ length: 20 }, (_, n) => `p${n}`));
    // All twenty went out before the first answer: each was described (the first's Parse was not yet complete).
    expect(descriptions()).toBe(20);
    const again = await Promise.all(
      Array.from({ length: 5 }, (_, n) => queryDescribedOnce(client, { ...READ, values: [n, `q${n}`] })),
    );
    expect(again.map((result) => result.rows[0]?.n)).toEqual([0, 1, 2, 3, 4]);
    expect(descriptions()).toBe(20);
  });
});
