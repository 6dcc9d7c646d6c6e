/**
 * The admin CLI against a database it cannot use: one line naming the
 * database and the cause, exit 1, no stack (what is wrong is the
 * environment, not the code).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);

async function cli(databaseUrl: string) {
  const { DATABASE_URL: _unset, ...env } = process.env;
  return run('npx', ['tsx', 'src/cli.ts', 'keys:list', '--org', 'acme'], {
    env: { ...env, DATABASE_URL: databaseUrl },
    timeout: 60_000,
  }).then(
    () => ({ code: 0, stderr: '' }),
    (error: { code: number; stderr: string }) => ({ code: error.code, stderr: error.stderr }),
  );
}

it.each([
  ['unreachable', 'postgresql://postgres@127.0.0.1:1/x', "Can't reach database server at 127.0.0.1:1"],
  ['a database that does not exist', 'postgresql://postgres@127.0.0.1:5432/mg_no_such_database', 'does not exist'],
])(
  '%s: one line and exit 1',
  async (_case, url, cause) => {
    const { code, stderr } = await cli(url);
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Error: the database of PostgreSQL at /);
    expect(lines[0]).toContain(cause);
  },
  90_000,
);
