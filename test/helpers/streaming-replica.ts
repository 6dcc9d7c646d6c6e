/**
 * A PostgreSQL primary and a streaming replica of it (`initdb`, then
 * `pg_basebackup -R`), each on a free port of 127.0.0.1 in a temporary
 * directory, for the read-replica tests and bench/replicas.ts. PostgreSQL
 * refuses to run as root: the servers run as the `postgres` user.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './ports.js';

const bin = '/usr/lib/postgresql/15/bin';

/** Whether this machine can run them: the binaries, and root to run them as `postgres`. */
export const canRunReplicas =
  ['initdb', 'pg_ctl', 'pg_basebackup'].every((name) => existsSync(join(bin, name))) && process.getuid?.() === 0;

function asPostgres(command: string, args: string[]): void {
  execFileSync('runuser', ['-u', 'postgres', '--', join(bin, command), ...args], { stdio: 'pipe' });
}

export interface Server {
  url: string;
  /** CPU time (user + system, ms) of the server and its processes so far, ended ones included */
  cpuMs(): number;
  /** the server's log (`log_statement = all`: every statement it ran) */
  log(): string;
  start(): void;
  /** immediate shutdown, as a crash would */
  stop(): void;
  /** SIGSTOP to the server and its processes: it stops answering without closing anything */
  freeze(): void;
  /** SIGCONT: it answers again */
  thaw(): void;
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** utime, stime, cutime, cstime of a process (fields 14 to 17 of /proc/<pid>/stat), and its parent. */
function times(pid: number): { ticks: number; children: number; parent: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    return {
      ticks: (fields[11] ?? 0) + (fields[12] ?? 0),
      children: (fields[13] ?? 0) + (fields[14] ?? 0),
      parent: fields[1] ?? 0,
    };
  } catch {
    return null;
  }
}

const postmasterOf = (data: string) => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);

/** The live processes whose parent is `postmaster`. */
function childrenOf(postmaster: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && times(Number(entry))?.parent === postmaster)
    .map(Number);
}

/** The postmaster's CPU, its ended children's (reaped into it) and its live children's. */
function serverCpuMs(postmaster: number): number {
  const own = times(postmaster);
  let ticks = own ? own.ticks + own.children : 0;
  for (const child of childrenOf(postmaster)) ticks += times(child)?.ticks ?? 0;
  return (ticks * 1000) / CLOCK_TICKS;
}

function signalServer(postmaster: number, signal: NodeJS.Signals): void {
  for (const pid of [postmaster, ...childrenOf(postmaster)]) {
    try {
      process.kill(pid, signal);
    } catch {
      // ended meanwhile
    }
  }
}

export interface PrimaryWithReplica {
  primary: Server;
  replica: Server;
  /** one query on a server */
  query<R extends pg.QueryResultRow>(url: string, text: string, values?: unknown[]): Promise<R[]>;
  /** until the replica has replayed everything the primary has written so far */
  caughtUp(timeoutMs?: number): Promise<void>;
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  /** stops both and removes their directory */
  close(): void;
}

export async function startPrimaryWithReplica(options: { logStatements?: boolean } = {}): Promise<PrimaryWithReplica> {
  const dir = mkdtempSync(join(tmpdir(), 'mg-replica-'));
  execFileSync('chown', ['postgres', dir]);
  const settings = `-c listen_addresses=127.0.0.1 -k ${dir}${options.logStatements ? ' -c log_statement=all' : ''}`;
  const server = async (name: string): Promise<Server> => {
    const port = await freePort();
    const data = join(dir, name);
    const logFile = join(dir, `${name}.log`);
    const started = { running: false };
    return {
      url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
      cpuMs: () => serverCpuMs(postmasterOf(data)),
      freeze: () => signalServer(postmasterOf(data), 'SIGSTOP'),
      thaw: () => signalServer(postmasterOf(data), 'SIGCONT'),
      log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
      start() {
        asPostgres('pg_ctl', ['-D', data, '-w', '-o', `-p ${port} ${settings}`, '-l', logFile, 'start']);
        started.running = true;
      },
      stop() {
        if (!started.running) return;
        started.running = false;
        asPostgres('pg_ctl', ['-D', data, '-w', '-m', 'immediate', 'stop']);
      },
    };
  };
  const primary = await server('primary');
  const replica = await server('replica');
  const close = () => {
    for (const each of [replica, primary]) {
      try {
        each.stop();
      } catch {
        // already stopped
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    asPostgres('initdb', ['-D', join(dir, 'primary'), '-U', 'postgres', '--auth=trust']);
    primary.start();
    const primaryUrl = new URL(primary.url);
    asPostgres('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      primaryUrl.port,
      '-U',
      'postgres',
      '-D',
      join(dir, 'replica'),
      '-R',
      '-X',
      'stream',
    ]);
    replica.start();
  } catch (error) {
    close();
    throw error;
  }
  const query = async <R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  };
  return {
    primary,
    replica,
    query,
    async caughtUp(timeoutMs = 30_000) {
      const [{ lsn }] = (await query<{ lsn: string }>(primary.url, 'SELECT pg_current_wal_lsn()::text AS lsn')) as [
        { lsn: string },
      ];
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const [row] = await query<{ done: boolean }>(
          replica.url,
          'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS done',
          [lsn],
        );
        if (row?.done) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`the replica did not replay ${lsn} within ${timeoutMs} ms`);
    },
    pauseReplay: async () => void (await query(replica.url, 'SELECT pg_wal_replay_pause()')),
    resumeReplay: async () => void (await query(replica.url, 'SELECT pg_wal_replay_resume()')),
    close,
  };
}
