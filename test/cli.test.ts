import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli-commands.js';
import { buildTestInstance } from './helpers/app.js';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';
import { lacks, POSTGRES } from './helpers/needs.js';

const projectRoot = fileURLToPath(new URL('..', import.meta.url));
const demoPath = join(projectRoot, 'prisma', 'fixtures', 'demo.json');
const demo = JSON.parse(readFileSync(demoPath, 'utf8'));
const demoSecrets: string[] = demo.organizations.flatMap((org: { api_keys?: { secret: string }[] }) =>
  (org.api_keys ?? []).map((key) => key.secret),
);
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

let db: TestDatabase;
let scratch: string;

beforeAll(async () => {
  db = await createTestDatabase();
  scratch = mkdtempSync(join(tmpdir(), 'cli-test-'));
  // Every test below works on the demo organizations; loading is itself tested first.
  const loaded = await run('load', demoPath);
  expect(loaded.code, loaded.err.join('\n')).toBe(0);
});

afterAll(async () => {
  await db?.drop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { prisma: db.prisma, out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out, err, text: [...out, ...err].join('\n') };
}

const SECRET_LINE = /^cl_[0-9a-f]{40}$/;

async function createKey(org: string, name: string) {
  const result = await run('keys:create', '--org', org, '--name', name);
  expect(result.code, result.text).toBe(0);
  const secret = result.out.find((line) => SECRET_LINE.test(line)) ?? '';
  const key = await db.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: sha256(secret) } });
  return { result, secret, key };
}

describe('load', () => {
  it('loaded the demo fixture and printed what it wrote', async () => {
    const acme = await db.prisma.organization.findUniqueOrThrow({ where: { slug: 'acme' } });
    expect(acme.id).toBe(demo.organizations[0].id);
    expect(await db.prisma.metric.count()).toBe(
      demo.organizations.reduce((total: number, org: { metrics?: unknown[] }) => total + (org.metrics ?? []).length, 0),
    );
  });

  it('rejects loading the same file again with exit 1 and the duplicate id', async () => {
    const result = await run('load', demoPath);
    expect(result.code).toBe(1);
    expect(result.err.join('\n')).toContain(
      `organizations[0].id: duplicate id: organization ${demo.organizations[0].id}`,
    );
  });

  it('reports a file that is not JSON', async () => {
    const file = join(scratch, 'broken.json');
    writeFileSync(file, '{ "organizations": [');
    const result = await run('load', file);
    expect(result.code).toBe(1);
    expect(result.err.join('\n')).toContain(`${file} is not valid JSON`);
  });
});

describe('keys:create', () => {
  it('prints a new cl_ key once and stores only its hash', async () => {
    const { result, secret, key } = await createKey('acme', 'CI');
    expect(secret).toMatch(SECRET_LINE);
    expect(result.text.split(secret)).toHaveLength(2);
    expect(result.text).toContain('will not be shown again');
    expect(result.out.join('\n')).toContain(key.id);
    expect(key).toMatchObject({
      name: 'CI',
      keyPrefix: secret.slice(0, 11),
      scopes: ['canonical-metric-api:read', 'definition:read'],
      sandbox: false,
      rateLimitPerMinute: null,
      revokedAt: null,
    });
    expect(Object.values(key)).not.toContain(secret);
  });

  it('accepts the contract scope pair in any order, sandbox and a rate limit', async () => {
    const result = await run(
      'keys:create',
      '--org',
      demo.organizations[1].id,
      '--name',
      'Agent',
      '--scopes',
      'definition:read,canonical-metric-api:read',
      '--sandbox',
      '--rate-limit',
      '120',
    );
    expect(result.code, result.text).toBe(0);
    const secret = result.out.find((line) => SECRET_LINE.test(line)) ?? '';
    const key = await db.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: sha256(secret) } });
    expect(key).toMatchObject({ orgId: demo.organizations[1].id, sandbox: true, rateLimitPerMinute: 120 });
  });

  it.each([
    ['metrics:read'],
    ['canonical-metric-api:read'],
    ['canonical-metric-api:read,definition:read,metrics:read'],
  ])('rejects scopes %s and creates nothing', async (scopes) => {
    const before = await db.prisma.apiKey.count();
    const result = await run('keys:create', '--org', 'acme', '--name', 'Bad', '--scopes', scopes);
    expect(result.code).toBe(1);
    expect(result.err.join('\n')).toContain('scopes must be exactly canonical-metric-api:read and definition:read');
    expect(result.text).not.toMatch(/cl_[0-9a-f]{40}/);
    expect(await db.prisma.apiKey.count()).toBe(before);
  });

  it('is a usage error (exit 2) without --name, and an error for an unknown organization', async () => {
    expect((await run('keys:create', '--org', 'acme')).code).toBe(2);
    const unknown = await run('keys:create', '--org', 'no-such-org', '--name', 'x');
    expect(unknown.code).toBe(1);
    expect(unknown.err.join('\n')).toContain('organization not found: no-such-org');
  });
});

describe('keys:list', () => {
  it('lists every key of the organization and never a secret', async () => {
    const { secret, key } = await createKey('acme', 'Listed');
    const result = await run('keys:list', '--org', 'acme');
    expect(result.code).toBe(0);
    const acmeKeys = await db.prisma.apiKey.findMany({ where: { orgId: demo.organizations[0].id } });
    for (const row of acmeKeys) expect(result.out.some((line) => line.startsWith(row.id))).toBe(true);
    expect(result.out.find((line) => line.startsWith(key.id))).toContain(secret.slice(0, 11));
    for (const clear of [secret, ...demoSecrets]) expect(result.text).not.toContain(clear);
    expect(result.text).not.toMatch(/cl_[0-9a-f]{12}/);
  });
});

describe('keys:revoke', () => {
  it('sets revoked_at, and revoking again keeps the first time', async () => {
    const { key } = await createKey('acme', 'To revoke');
    const first = await run('keys:revoke', '--org', 'acme', '--id', key.id);
    expect(first.code, first.text).toBe(0);
    const revoked = await db.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } });
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await run('keys:revoke', '--org', 'acme', '--id', key.id);
    expect(second.code).toBe(0);
    expect(second.out.join('\n')).toContain(`already revoked at ${revoked.revokedAt?.toISOString()}`);
    const again = await db.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } });
    expect(again.revokedAt).toEqual(revoked.revokedAt);
  });

  it('refuses a key of another organization and leaves it active', async () => {
    const { key } = await createKey('acme', 'Not globex');
    const result = await run('keys:revoke', '--org', 'globex', '--id', key.id);
    expect(result.code).toBe(1);
    expect(result.err.join('\n')).toContain('API key not found');
    expect((await db.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } })).revokedAt).toBeNull();
  });

  it('audits creation and the first revocation with no actor (the CLI), in the key organization', async () => {
    const { key } = await createKey('acme', 'Audited');
    await run('keys:revoke', '--org', 'acme', '--id', key.id);
    await run('keys:revoke', '--org', 'acme', '--id', key.id);
    const rows = await db.prisma.apiKeyAudit.findMany({
      where: { apiKeyId: key.id },
      orderBy: [{ createdAt: 'asc' }, { action: 'asc' }],
    });
    expect(rows.map(({ orgId, action, actorUserId }) => ({ orgId, action, actorUserId }))).toEqual([
      { orgId: key.orgId, action: 'created', actorUserId: null },
      { orgId: key.orgId, action: 'revoked', actorUserId: null },
    ]);
  });
});

describe('session:create', () => {
  const acme = demo.organizations[0];
  const member = acme.users.find((user: { role: string }) => user.role === 'member');

  it('creates a session for a member and stores only the token hash', async () => {
    const result = await run('session:create', '--user', member.email, '--org', 'acme', '--ttl-hours', '2');
    expect(result.code, result.text).toBe(0);
    const cookie = result.out.find((line) => line.startsWith('session=')) ?? '';
    const token = cookie.slice('session='.length);
    expect(token.length).toBeGreaterThanOrEqual(32);
    const session = await db.prisma.session.findUniqueOrThrow({ where: { tokenHash: sha256(token) } });
    expect(session).toMatchObject({ userId: member.id, orgId: acme.id });
    expect(Object.values(session)).not.toContain(token);
    const hours = (session.expiresAt.getTime() - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(1.9);
    expect(hours).toBeLessThanOrEqual(2);
  });

  it('accepts the user id and defaults to 30 days', async () => {
    const result = await run('session:create', '--user', member.id, '--org', acme.id);
    expect(result.code, result.text).toBe(0);
    const token = (result.out.find((line) => line.startsWith('session=')) ?? '').slice('session='.length);
    const session = await db.prisma.session.findUniqueOrThrow({ where: { tokenHash: sha256(token) } });
    expect(Math.round((session.expiresAt.getTime() - Date.now()) / 3_600_000)).toBe(24 * 30);
  });

  it('rejects a user who is not a member of the organization', async () => {
    const before = await db.prisma.session.count();
    const result = await run('session:create', '--user', member.email, '--org', 'globex');
    expect(result.code).toBe(1);
    expect(result.err.join('\n')).toContain(`user ${member.email} is not a member of organization globex`);
    expect(result.text).not.toContain('session=');
    expect(await db.prisma.session.count()).toBe(before);
  });
});

describe('session:revoke', () => {
  const acme = demo.organizations[0];
  const owner = acme.users.find((user: { role: string }) => user.role === 'owner');

  async function newSession(org = 'acme') {
    const result = await run('session:create', '--user', owner.email, '--org', org);
    expect(result.code, result.text).toBe(0);
    return (result.out.find((line) => line.startsWith('session=')) ?? '').slice('session='.length);
  }

  /** the signed-in admin route, as a browser would call it */
  async function listKeys(token: string) {
    const app = await buildTestInstance(db);
    try {
      const response = await app.inject({
        method: 'GET',
        url: '/api/api-keys',
        headers: { cookie: `session=${token}` },
      });
      return { status: response.statusCode, body: response.json() };
    } finally {
      await app.close();
    }
  }

  it('revokes one session by its token: the next request gets the 401 of an unknown session', async () => {
    const token = await newSession();
    const other = await newSession();
    expect((await listKeys(token)).status).toBe(200);

    const result = await run('session:revoke', '--token', `session=${token}`);
    expect(result.code, result.text).toBe(0);
    expect(result.out).toEqual(['Revoked 1 session']);

    const revoked = await listKeys(token);
    const unknown = await listKeys('f'.repeat(48));
    expect(revoked).toEqual({ status: 401, body: { error: 'Not signed in' } });
    expect(revoked).toEqual(unknown);
    // Only that one.
    expect((await listKeys(other)).status).toBe(200);

    // `--token=`: a token may start with '-', which would read as an option after a separate `--token`.
    const again = await run('session:revoke', `--token=${token}`);
    expect(again.code).toBe(1);
    expect(again.err.join('\n')).toContain('no session with this token');
  });

  it('--token - reads the token from standard input (kept out of argv), and says so in help', async () => {
    const token = await newSession();
    expect((await listKeys(token)).status).toBe(200);
    const withStdin = async (input: string) => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCli(['session:revoke', '--token', '-'], {
        prisma: db.prisma,
        out: (line) => out.push(line),
        err: (line) => err.push(line),
        stdin: async () => input,
      });
      return { code, out, err };
    };
    const result = await withStdin(`session=${token}\n`);
    expect(result).toEqual({ code: 0, out: ['Revoked 1 session'], err: [] });
    expect((await listKeys(token)).status).toBe(401);

    for (const input of ['', '\n', '  \n']) {
      const empty = await withStdin(input);
      expect(empty.code).toBe(2);
      expect(empty.err[0]).toBe('Error: --token -: no token on standard input');
    }
    const help = (await run('help')).out.join('\n');
    expect(help).toContain('session:revoke (--token - | --token TOKEN | --user USER --org ORG)');
    expect(help).toContain('`--token -` reads the token from standard input');
  });

  it("revokes all of a user's sessions in an organization, by email or id, and no other", async () => {
    const globex = demo.organizations[1];
    const inGlobex = globex.users.some((user: { email: string }) => user.email === owner.email);
    const tokens = [await newSession(), await newSession('acme')];
    const elsewhere = inGlobex ? await newSession('globex') : null;
    const before = await db.prisma.session.count({ where: { userId: owner.id, orgId: acme.id } });
    expect(before).toBeGreaterThanOrEqual(2);

    const result = await run('session:revoke', '--user', owner.email, '--org', acme.id);
    expect(result.code, result.text).toBe(0);
    expect(result.out).toEqual([`Revoked ${before} sessions of ${owner.email} in organization acme`]);
    for (const token of tokens) expect((await listKeys(token)).status).toBe(401);
    expect(await db.prisma.session.count({ where: { userId: owner.id, orgId: acme.id } })).toBe(0);
    if (elsewhere) expect(await db.prisma.session.count({ where: { tokenHash: sha256(elsewhere) } })).toBe(1);

    const none = await run('session:revoke', '--user', owner.id, '--org', 'acme');
    expect(none.code).toBe(0);
    expect(none.out).toEqual([`Revoked 0 sessions of ${owner.email} in organization acme`]);
  });

  it('is a usage error without a selector or with both', async () => {
    const cases: [string[], string][] = [
      [[], 'give either --token, or --user with --org'],
      [['--user', owner.email], '--org is required'],
      [['--token', 'x', '--org', 'acme'], 'give either --token, or --user with --org'],
    ];
    for (const [argv, message] of cases) {
      const result = await run('session:revoke', ...argv);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.err.join('\n')).toContain(message);
    }
  });
});

describe('--org', () => {
  it('a UUID-shaped value names an organization by id, anything else by slug', async () => {
    const acme = demo.organizations[0];
    expect((await run('keys:list', '--org', acme.id.toUpperCase())).code).toBe(0);
    expect((await run('keys:list', '--org', 'acme')).code).toBe(0);
    const unknown = await run('keys:list', '--org', '00000000-0000-4000-8000-000000000000');
    expect(unknown.code).toBe(1);
    expect(unknown.err.join('\n')).toContain('organization not found');
  });
});

describe('usage', () => {
  it('prints the usage and exits 2 for an unknown command', async () => {
    const result = await run('keys:delete', '--org', 'acme');
    expect(result.code).toBe(2);
    expect(result.err[0]).toBe('Unknown command: keys:delete');
    expect(result.err.join('\n')).toContain('keys:create --org ORG --name NAME');
  });

  it('prints the usage and exits 0 for help', async () => {
    const result = await run('help');
    expect(result.code).toBe(0);
    expect(result.out.join('\n')).toContain('session:create --user USER --org ORG');
  });
});

describe('the real command line', () => {
  // A child process cannot see the in-memory embedded database of this one.
  it.skipIf(lacks(POSTGRES))(
    'exits 1 naming the JSON path when `tsx src/cli.ts load` gets a bad fixture',
    async () => {
      if (db.target.kind !== 'postgres') throw new Error('expected a PostgreSQL test database');
      const bad = structuredClone(demo);
      bad.organizations[0].metrics[3].lifecycle_status = 'SHIPPED';
      const file = join(scratch, 'bad.json');
      writeFileSync(file, JSON.stringify(bad));
      const before = await db.prisma.organization.count();
      const child = spawn('npx', ['tsx', 'src/cli.ts', 'load', file], {
        cwd: projectRoot,
        env: { ...process.env, DATABASE_URL: db.target.url },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk;
      });
      const code = await new Promise<number | null>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', resolve);
      });
      expect(code, stderr).toBe(1);
      expect(stderr).toContain('organizations[0].metrics[3].lifecycle_status: Invalid option');
      expect(await db.prisma.organization.count()).toBe(before);
    },
    60_000,
  );
});
