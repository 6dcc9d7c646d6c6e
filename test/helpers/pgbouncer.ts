/**
 * A PgBouncer of the test's own, in front of the test PostgreSQL: its
 * config in a temporary directory, a free port, every database passed
 * through (`* = host=... port=...`), no password (auth_type trust).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './ports.js';

/** Debian's pgbouncer, if installed (it is not on PATH for a user without sbin). */
export const pgbouncerBinary = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((path) => existsSync(path)) ?? null;

export interface PgBouncerOptions {
  /** the PostgreSQL server behind it, as a URL (its host, port and user are used) */
  upstream: string;
  poolMode: 'session' | 'transaction';
  /** server connections per database and user */
  defaultPoolSize: number;
  maxClientConn?: number;
  /**
   * Startup parameters accepted and dropped rather than refused: pg sends `options` and
   * `statement_timeout` when configured so (the service's session mode does).
   */
  ignoreStartupParameters?: string[];
}

export interface PgBouncer {
  port: number;
  /** its process (for CPU time) */
  pid: number;
  /** `upstream` with PgBouncer's address and the database `name` */
  urlFor(name: string): string;
  /** a statement of the admin console (SHOW POOLS, SHOW SERVERS): simple protocol, rows as objects */
  admin<R>(statement: string): Promise<R[]>;
  stop(): Promise<void>;
}

/** Starts PgBouncer and resolves once it listens; rejects (and cleans up) if it exits first. */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  if (!pgbouncerBinary) throw new Error('pgbouncer is not installed');
  const upstream = new URL(options.upstream);
  const user = decodeURIComponent(upstream.username || 'postgres');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  const config = join(dir, 'pgbouncer.ini');
  const usersFile = join(dir, 'users.txt');
  writeFileSync(usersFile, `"${user}" ""\n`);
  writeFileSync(
    config,
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${usersFile}`,
      `admin_users = ${user}`,
      `pool_mode = ${options.poolMode}`,
      `default_pool_size = ${options.defaultPoolSize}`,
      'reserve_pool_size = 0',
      `max_client_conn = ${options.maxClientConn ?? 200}`,
      `ignore_startup_parameters = ${['extra_float_digits', ...(options.ignoreStartupParameters ?? [])].join(',')}`,
      // Server connections that PostgreSQL closed (a test database dropped) are replaced, not reported.
      'server_login_retry = 1',
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root; it reads its config first, then switches user.
  const asUser = process.getuid?.() === 0 ? ['-u', 'nobody'] : [];
  const child: ChildProcess = spawn(pgbouncerBinary, [...asUser, config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk;
        if (output.includes('process up')) resolve();
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`pgbouncer exited (${code}) before it listened:\n${output}`)));
    });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const urlFor = (name: string) => {
    const url = new URL(options.upstream);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    url.pathname = `/${name}`;
    return url.toString();
  };
  return {
    port,
    pid: child.pid ?? 0,
    urlFor,
    admin: async <R>(statement: string) => {
      const client = new pg.Client({ connectionString: urlFor('pgbouncer') });
      await client.connect();
      try {
        return (await client.query(statement)).rows as R[];
      } finally {
        await client.end();
      }
    },
    stop: async () => {
      // SIGTERM: immediate shutdown, whatever clients are still connected.
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
