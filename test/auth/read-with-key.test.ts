/**
 * A read that travels in the API key lookup's own statement (ReadWithKey,
 * src/auth/authenticate.ts): it runs only for a key that will be admitted
 * (not revoked, sandbox header, scope, within its rate limit), it reads only
 * the key's own organization, and a read that fails leaves the
 * authentication as it would be without it.
 */
import { randomUUID } from 'node:crypto';
import { sql as rawSql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticateApiKey, type ReadWithKey, type WindowState } from '../../src/auth/authenticate.js';
import type { RequestedScope } from '../../src/auth/scopes.js';
import { hashSecret } from '../../src/auth/secrets.js';
import { recordStatements } from '../../src/db/query-stats.js';
import { loadFixture } from '../../src/fixtures/load.js';
import { findMetricRow, metricRowWithKey } from '../../src/metric/by-id.js';
import { METRIC_PARTS, type PartName } from '../../src/metric/loaders.js';
import { type KeyJson, newKeySecret, registry } from '../fixtures/registry.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

const r = registry();
const acme = r.org({ fiscal_calendar_start_month: 4 });
const revenue = acme.metric({ name: 'Net Revenue', key: 'net_revenue', description: 'Revenue net of refunds.' });
const refunds = acme.metric({ name: 'Refunds', key: 'refunds' });
acme.relate(revenue, 'related_to', refunds);
acme.validation(revenue, { ran_at: '2026-01-02T00:00:00Z' });
acme.challenge(revenue, { status: 'open' });
const thread = acme.thread(revenue, { intent: 'objection', title: 'Refund timing' });
acme.message(thread, { body: 'Refunds net in the month issued.', pinned_at: '2026-03-01T00:00:00Z' });
const keys = {
  agent: acme.key(),
  legacy: acme.key({ scopes: ['metrics:read'] }),
  definitionOnly: acme.key({ scopes: ['definition:read'] }),
  unrelated: acme.key({ scopes: ['reports:write'] }),
  none: acme.key({ scopes: [] }),
  revoked: acme.key({ revoked_at: '2026-02-01T00:00:00Z' }),
  sandbox: acme.key({ sandbox: true }),
  limited: acme.key({ rate_limit_per_minute: 2 }),
  serverDefault: acme.key({ rate_limit_per_minute: null }),
};
const globex = r.org();
const foreign = globex.metric({ name: 'Net Revenue', key: 'net_revenue' });
const globexKey = globex.key();

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await loadFixture(db.prisma, r.build());
});
afterAll(() => db?.drop());

/** The documented errors (contract section 7), spelled out. */
const ERRORS = {
  invalidApiKey: { status: 401, body: { error: 'Invalid API key' }, challenge: 'Bearer error="invalid_token"' },
  revokedApiKey: {
    status: 401,
    body: { error: 'API key has been revoked' },
    challenge: 'Bearer error="invalid_token"',
  },
  insufficientScope: { status: 403, body: { error: 'Insufficient scope' } },
  sandboxKeyRequiresSandbox: {
    status: 403,
    body: {
      error: {
        code: 'sandbox_key_requires_sandbox',
        message: 'This API key is a sandbox key and can only be used with the header X-Service-Env: sandbox',
      },
    },
  },
};
const errorOf = (name: keyof typeof ERRORS) => ERRORS[name];

const WINDOW: WindowState = { spent: 1, defaultLimit: 60 };
/** The metric's name and description, no parts (the narrowest read). */
const byName = metricRowWithKey([], new Set(['name', 'description'] as const));

type Options = { serviceEnv?: string; scope?: RequestedScope; window?: WindowState };

function authenticate<T>(
  key: KeyJson & { secret: string },
  read: ReadWithKey<object, T> | null,
  options: Options = {},
) {
  return authenticateApiKey(
    db.sql,
    hashSecret(key.secret),
    options.serviceEnv,
    options.scope ?? 'metrics:read',
    read ? { read, window: options.window ?? WINDOW } : undefined,
  );
}

/** A read whose `read` counts the rows it is given (it is called only when the read ran). */
function counted<T>(read: ReadWithKey<object, T>): { read: ReadWithKey<object, T>; calls: () => number } {
  let calls = 0;
  return {
    read: {
      ...read,
      read: (row) => {
        calls++;
        return read.read(row);
      },
    },
    calls: () => calls,
  };
}

describe('an admitted key', () => {
  it('reads its metric in the lookup statement, with the principal of a lookup alone', async () => {
    const alone = await authenticate(keys.agent, null);
    const { result: withRead, statements } = await recordStatements(() => authenticate(keys.agent, byName(revenue.id)));
    expect(statements).toHaveLength(1);
    expect(withRead.ok).toBe(true);
    expect(alone.ok).toBe(true);
    expect('read' in alone).toBe(false);
    if (!withRead.ok || !alone.ok) return;
    expect(withRead.principal).toEqual(alone.principal);
    expect(withRead.principal).toMatchObject({
      kind: 'api_key',
      keyId: keys.agent.id,
      org: { id: acme.id, slug: acme.slug, fiscalCalendarStartMonth: 4 },
    });
    expect(withRead.read).not.toBeNull();
    expect(withRead.read?.metric).toEqual({
      id: revenue.id,
      orgId: acme.id,
      name: 'Net Revenue',
      description: 'Revenue net of refunds.',
    });
    // Its key's own columns are in the row as well, but never in the metric.
    expect(withRead.read?.row.id).toBe(revenue.id);
  });

  it('reads the same metric and parts as the route’s own read (findMetricRow)', async () => {
    const names = Object.keys(METRIC_PARTS) as PartName[];
    const parts = names.map((name) => METRIC_PARTS[name]);
    const withParts = metricRowWithKey(parts, null);
    const result = await authenticate(keys.agent, withParts(revenue.id));
    const own = await findMetricRow(db.sql, acme.id, revenue.id, parts, null);
    expect(own).not.toBeNull();
    expect(result.ok && result.read).toBeTruthy();
    if (!result.ok || !result.read || !own) return;
    expect(result.read.metric).toEqual(own.metric);
    expect(result.read.metric.name).toBe('Net Revenue');
    for (const name of names) {
      const part = METRIC_PARTS[name] as { read(row: Record<string, unknown>): unknown };
      expect({ name, value: part.read(result.read.row) }).toEqual({ name, value: part.read(own.row) });
    }
  });

  it('admits as the lookup alone does for every scope a key may carry', async () => {
    const admitted: [KeyJson & { secret: string }, RequestedScope][] = [
      [keys.agent, 'metrics:read'],
      [keys.agent, 'canonical-metric-api:read'],
      [keys.legacy, 'metrics:read'],
      [keys.legacy, 'canonical-metric-api:read'],
      [keys.definitionOnly, 'metrics:read'],
    ];
    for (const [key, scope] of admitted) {
      const result = await authenticate(key, byName(revenue.id), { scope });
      expect({ key: key.name, scope, ok: result.ok, name: result.read?.metric.name }).toEqual({
        key: key.name,
        scope,
        ok: true,
        name: 'Net Revenue',
      });
    }
  });

  it('a sandbox key with X-Service-Env: sandbox reads too', async () => {
    const result = await authenticate(keys.sandbox, byName(revenue.id), { serviceEnv: 'sandbox' });
    expect(result.ok).toBe(true);
    expect(result.read?.metric.id).toBe(revenue.id);
  });

  it('within its own limit (spent equal to it) and within the default limit, reads', async () => {
    const own = await authenticate(keys.limited, byName(revenue.id), { window: { spent: 2, defaultLimit: 1 } });
    expect(own.ok).toBe(true);
    expect(own.read?.metric.id).toBe(revenue.id);
    const byDefault = await authenticate(keys.serverDefault, byName(revenue.id), {
      window: { spent: 5, defaultLimit: 5 },
    });
    expect(byDefault.ok).toBe(true);
    expect(byDefault.read?.metric.id).toBe(revenue.id);
  });
});

describe('the key’s organization only', () => {
  it('a metric of another organization is read as null (the read ran, found nothing)', async () => {
    const result = await authenticate(keys.agent, byName(foreign.id));
    expect(result.ok).toBe(true);
    expect('read' in result).toBe(true);
    expect(result.read).toBeNull();
    // with the parts as well
    const withParts = metricRowWithKey(
      (Object.keys(METRIC_PARTS) as PartName[]).map((name) => METRIC_PARTS[name]),
      null,
    );
    const all = await authenticate(keys.agent, withParts(foreign.id));
    expect(all.ok).toBe(true);
    expect('read' in all).toBe(true);
    expect(all.read).toBeNull();
  });

  it('the other organization’s key reads its own metric, and not ours', async () => {
    const own = await authenticate(globexKey, byName(foreign.id));
    expect(own.ok && own.read?.metric).toMatchObject({ id: foreign.id, orgId: globex.id });
    const ours = await authenticate(globexKey, byName(revenue.id));
    expect(ours.ok).toBe(true);
    expect('read' in ours).toBe(true);
    expect(ours.read).toBeNull();
  });

  it('no such metric: null', async () => {
    const result = await authenticate(keys.agent, byName(randomUUID()));
    expect(result.ok).toBe(true);
    expect('read' in result).toBe(true);
    expect(result.read).toBeNull();
  });
});

describe('a refused key reads nothing', () => {
  async function refused(
    key: KeyJson & { secret: string },
    options: Options,
    expected: Awaited<ReturnType<typeof authenticate>>,
  ) {
    const alone = await authenticate(key, null, options);
    const spy = counted(byName(revenue.id));
    const { result, statements } = await recordStatements(() => authenticate(key, spy.read, options));
    expect(alone).toEqual(expected);
    expect(result).toEqual(expected);
    expect('read' in result).toBe(false);
    expect(spy.calls()).toBe(0);
    // Refused in the lookup's own statement, not after a failed one.
    expect(statements).toHaveLength(1);
  }

  it('revoked: the revoked error', async () => {
    await refused(keys.revoked, {}, { ok: false, error: errorOf('revokedApiKey') });
  });

  it('sandbox key without the sandbox environment (none, or another): the sandbox error', async () => {
    await refused(keys.sandbox, {}, { ok: false, error: errorOf('sandboxKeyRequiresSandbox') });
    await refused(
      keys.sandbox,
      { serviceEnv: 'production' },
      { ok: false, error: errorOf('sandboxKeyRequiresSandbox') },
    );
  });

  it('scopes that do not satisfy the requested one: insufficient scope', async () => {
    await refused(keys.unrelated, {}, { ok: false, error: errorOf('insufficientScope') });
    await refused(keys.none, {}, { ok: false, error: errorOf('insufficientScope') });
    await refused(
      keys.definitionOnly,
      { scope: 'canonical-metric-api:read' },
      {
        ok: false,
        error: errorOf('insufficientScope'),
      },
    );
  });

  it('spent above the key’s own limit: admitted as before (the route decides the 429), no read', async () => {
    const alone = await authenticate(keys.limited, null);
    expect(alone.ok).toBe(true);
    // The key's own limit (2) counts, not the default (60).
    await refused(keys.limited, { window: { spent: 3, defaultLimit: 60 } }, alone);
  });

  it('spent above the default limit for a key without its own: no read', async () => {
    const alone = await authenticate(keys.serverDefault, null);
    expect(alone.ok).toBe(true);
    await refused(keys.serverDefault, { window: { spent: 6, defaultLimit: 5 } }, alone);
  });

  it('a key with a high limit of its own is not held to a lower default', async () => {
    // agent: 100 000 a minute
    const result = await authenticate(keys.agent, byName(revenue.id), { window: { spent: 61, defaultLimit: 60 } });
    expect(result.ok).toBe(true);
    expect(result.read?.metric.id).toBe(revenue.id);
  });
});

describe('a refused key’s read is not even executed', () => {
  /** Fails on the first metric row it reads: at run time, and only if PostgreSQL runs it. */
  const failsWhenRun: ReadWithKey<{ id: string }, unknown> = {
    shape: 'test:fails-when-run',
    args: { id: revenue.id },
    query: (_p, orgId) =>
      rawSql<{ x: number }>`SELECT 1 / (length(m.name) - length(m.name)) AS x FROM metric m WHERE m.org_id = ${orgId}`,
    read: (row) => row.x,
  };

  it('it is executed for an admitted key (it fails: the key is looked up again, alone)', async () => {
    const { result, statements } = await recordStatements(() => authenticate(keys.agent, failsWhenRun));
    expect(result.ok).toBe(true);
    expect('read' in result).toBe(false);
    expect(statements).toHaveLength(2);
  });

  // The admission guard must keep PostgreSQL from running the read at all (not just drop its row):
  // a 429 or a 401/403 must not cost the metric's read. One statement each: the read never ran.
  it.each([
    ['revoked', keys.revoked, {}],
    ['sandbox key without the sandbox env', keys.sandbox, {}],
    ['scopes that do not satisfy', keys.unrelated, {}],
    ['spent above its own limit', keys.limited, { window: { spent: 3, defaultLimit: 60 } }],
    ['spent above the default limit', keys.serverDefault, { window: { spent: 6, defaultLimit: 5 } }],
  ] as const)('%s: one statement, the read not run', async (_name, key, options: Options) => {
    const alone = await authenticate(key, null, options);
    const { result, statements } = await recordStatements(() => authenticate(key, failsWhenRun, options));
    expect(result).toEqual(alone);
    expect('read' in result).toBe(false);
    expect(statements).toHaveLength(1);
  });
});

describe('unknown key', () => {
  it('is the invalid key error, with or without a read', async () => {
    const secret = newKeySecret();
    const stranger = { id: randomUUID(), name: 'stranger', secret, scopes: ['metrics:read'] };
    const spy = counted(byName(revenue.id));
    const expected = { ok: false, error: errorOf('invalidApiKey') };
    expect(await authenticate(stranger, null)).toEqual(expected);
    const { result, statements } = await recordStatements(() => authenticate(stranger, spy.read));
    expect(result).toEqual(expected);
    expect(spy.calls()).toBe(0);
    expect(statements).toHaveLength(1);
  });
});

describe('a read that fails', () => {
  const failing: ReadWithKey<{ id: string }, unknown> = {
    shape: 'test:division-by-zero',
    args: { id: revenue.id },
    query: () => rawSql<{ x: number }>`SELECT 1/0 AS x`,
    read: (row) => row.x,
  };

  it('leaves the key looked up alone: admitted, no read', async () => {
    const alone = await authenticate(keys.agent, null);
    const { result, statements } = await recordStatements(() => authenticate(keys.agent, failing));
    expect(result).toEqual(alone);
    expect(result.ok).toBe(true);
    expect('read' in result).toBe(false);
    // the combined statement (failed), then the lookup alone
    expect(statements).toHaveLength(2);
  });

  it('a refused key with a failing read still gets its own error', async () => {
    expect(await authenticate(keys.revoked, failing)).toEqual({ ok: false, error: errorOf('revokedApiKey') });
    expect(await authenticate(keys.unrelated, failing)).toEqual({ ok: false, error: errorOf('insufficientScope') });
  });

  it('the same connection pool serves the next read with the key', async () => {
    const again = await authenticate(keys.agent, failing);
    expect(again.ok).toBe(true);
    const next = await authenticate(keys.agent, byName(revenue.id));
    expect(next.ok && next.read?.metric.name).toBe('Net Revenue');
  });
});
