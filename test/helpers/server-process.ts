/**
 * `src/server.ts` as its own process (node itself, not npx, so that a signal
 * reaches the server), on a free port of 127.0.0.1, with the environment
 * given and nothing of the test's own Redis or data directory.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { freePort } from './ports.js';

export interface ServerProcess {
  base: string;
  child: ChildProcess;
  /** what the process printed so far */
  output(): string;
  /** SIGTERM by default; resolves once the process has exited */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const projectRoot = new URL('../..', import.meta.url).pathname;

/**
 * Starts the server and waits until /healthz answers; rejects with its output if it exits first.
 * `nodeArgs` go to node before the script (`--max-old-space-size=256`, as `npm start` runs it).
 */
export async function startServerProcess(
  env: Record<string, string>,
  options: { nodeArgs?: string[] } = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', 'src/server.ts'], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DEMO: '0',
      LOG_LEVEL: 'warn',
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output += chunk;
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}): ${output}`);
    if (
      await fetch(`${base}/healthz`).then(
        (res) => res.ok,
        () => false,
      )
    )
      break;
    if (i >= 600) {
      child.kill('SIGKILL');
      throw new Error(`server did not answer within 60 s: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    base,
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
