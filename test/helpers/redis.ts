/** A Redis server of the test's own (nothing kept on disk), for counts no other test's clients can touch. */
import { type ChildProcess, spawn } from 'node:child_process';

/** Starts `redis-server` on 127.0.0.1:`port` and resolves once it accepts connections. */
export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('Ready to accept connections')) resolve();
    });
  });
  return child;
}
