/**
 * PostGraphile 5 as a peer for the GraphQL dashboard query: the bench database's `public` schema
 * served by PostGraphile's own stack (the Amber preset, grafserv on node:http, the `pg` adaptor),
 * no authentication, a pool of the service's size. The per-metric figures the dashboard asks for
 * are computed columns, SQL functions the bench creates in the bench database
 * ({@link COMPUTED_COLUMNS}; never in the service's migrations):
 *
 *   discussionThreadCount  — threads on the metric (every intent and resolution status)
 *   discussionMessageCount — messages that are not deleted
 *   agentContextNotes      — pinned, not deleted messages, newest pinned first, at most 10
 *
 * It counts the statements its pool sends (every `query` of its clients, introspection included)
 * and the GraphQL requests it served; `GET /bench/statements` answers both, so that the bench
 * reads statements per request as the difference around one request.
 *
 * Run: DATABASE_URL=... PORT=... node --import tsx bench/postgraphile.ts
 */
import { createServer } from 'node:http';
import pg from 'pg';

/**
 * The computed columns, in `public` next to the tables: PostGraphile takes a STABLE function
 * named `<table>_<field>` whose first argument is the table's row as a field of that table, if
 * it lives in the table's schema. Created by the bench in its own database only.
 */
export const COMPUTED_COLUMNS = `
CREATE OR REPLACE FUNCTION metric_discussion_thread_count(m metric) RETURNS integer
  LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT count(*)::int FROM thread t WHERE t.metric_id = m.id
$$;
CREATE OR REPLACE FUNCTION metric_discussion_message_count(m metric) RETURNS integer
  LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT count(*)::int FROM message g WHERE g.metric_id = m.id AND g.deleted_at IS NULL
$$;
CREATE OR REPLACE FUNCTION metric_agent_context_notes(m metric) RETURNS SETOF message
  LANGUAGE sql STABLE PARALLEL SAFE ROWS 10 AS $$
  SELECT g.* FROM message g
  WHERE g.metric_id = m.id AND g.pinned_at IS NOT NULL AND g.deleted_at IS NULL
  ORDER BY g.pinned_at DESC, g.id LIMIT 10
$$;
`;

/** Statements sent by the pool's clients and GraphQL requests answered, since start. */
const counters = { statements: 0, requests: 0 };

/** A pg Client that counts what it sends (PostGraphile's adaptor calls `query` on pooled clients). */
class CountingClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg's query has many overloads; this only counts and forwards them
  override query(...args: any[]): any {
    counters.statements++;
    // biome-ignore lint/suspicious/noExplicitAny: see above
    return (super.query as (...a: any[]) => any)(...args);
  }
}

async function main() {
  const [{ postgraphile }, { PostGraphileAmberPreset }, { makePgService }, { grafserv }] = await Promise.all([
    import('postgraphile'),
    import('postgraphile/presets/amber'),
    import('postgraphile/adaptors/pg'),
    import('postgraphile/grafserv/node'),
  ]);
  const pool = new pg.Pool({
    connectionString: process.env.DATABASE_URL,
    max: Number(process.env.POOL_SIZE ?? 10),
    Client: CountingClient,
  });
  const preset: GraphileConfig.Preset = {
    extends: [PostGraphileAmberPreset],
    pgServices: [makePgService({ pool, schemas: ['public'], pubsub: false })],
    grafserv: { graphqlPath: '/graphql', graphiql: false, watch: false },
    grafast: { explain: false },
  };
  const pgl = postgraphile(preset);
  const serv = pgl.createServ(grafserv);
  const handler = serv.createHandler();
  // Built before listening, so that the first request measures serving, not introspection.
  await pgl.getSchema();
  const server = createServer((req, res) => {
    if (req.url === '/bench/statements') {
      const json = JSON.stringify(counters);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) });
      res.end(json);
      return;
    }
    if (req.url === '/graphql') counters.requests++;
    handler(req, res);
  });
  server.keepAliveTimeout = 72_000;
  server.listen(Number(process.env.PORT ?? 3200), '127.0.0.1', () => {
    console.log(`postgraphile listening on ${process.env.PORT ?? 3200}`);
  });
  process.on('SIGTERM', () => {
    server.close();
    void Promise.resolve(pgl.release())
      .then(() => pool.end())
      .then(() => process.exit(0));
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
