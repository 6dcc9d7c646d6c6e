/** Child processes of the bench (the service, the floor), free ports and peak memory. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface Started {
  name: string;
  child: ChildProcess;
  base: string;
  pid: number;
  /** stderr/stdout tail, for error reports */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `node [nodeArgs] <script>` (a compiled `.js` file, as in production) or, for a `.ts` script,
 * `node [nodeArgs] --import tsx <script>`; either way the pid is the server's own process (for memory
 * polling). Waits until `readyPath` answers.
 */
export async function startNode(
  name: string,
  script: string,
  env: Record<string, string | undefined>,
  options: { nodeArgs?: string[]; readyPath?: string } = {},
): Promise<Started> {
  const port = await freePort();
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...loader, script], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-8000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}) while starting:\n${log}`);
    try {
      await fetch(base + (options.readyPath ?? '/'));
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`${name} did not start in 60 s:\n${log}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    name,
    child,
    base,
    pid: child.pid ?? 0,
    output: () => log,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resident memory of a process in MB: current (VmRSS) and lifetime peak (VmHWM). */
export function memoryMb(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
    return { rss: field('VmRSS'), hwm: field('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** Clock ticks a second of /proc/<pid>/stat's CPU times (`getconf CLK_TCK`; 100 on Linux x86). */
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU time a process has used so far (user + system), in ms; 0 when it cannot be read. */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** Polls a process's RSS while `work` runs; returns the work's result and the highest RSS seen (MB). */
export async function withPeakRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
  let peak = memoryMb(pid).rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, memoryMb(pid).rss);
  }, 100);
  try {
    const result = await work();
    return { result, peakMb: Math.max(peak, memoryMb(pid).rss) };
  } finally {
    clearInterval(timer);
  }
}
