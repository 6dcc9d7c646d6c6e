/**
 * A Redis Cluster of the test's own: three masters, no replicas, nothing kept
 * but each node's cluster configuration (nodes.conf), so that stopped nodes
 * started again in their directories form the same cluster.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const run = promisify(execFile);

export interface TestRedisCluster {
  /** each master's client port */
  ports: number[];
  /** `127.0.0.1:port,...`, as REDIS_CLUSTER_NODES takes it */
  seeds: string;
  /** Kills every node, or the `index`-th only (SIGKILL: as a crash would). */
  stop(index?: number): Promise<void>;
  /** Freezes the `index`-th node (SIGSTOP): its connections stay open and nothing answers. */
  freeze(index: number): void;
  /** Lets a frozen node run again (SIGCONT). */
  thaw(index: number): void;
  /** Starts the stopped nodes again in their directories and resolves once the cluster is whole. */
  restart(): Promise<void>;
  /** Stops the nodes and removes their directories. */
  destroy(): Promise<void>;
}

interface Node {
  port: number;
  busPort: number;
  dir: string;
  process?: ChildProcess;
}

function startNode(node: Node): Promise<ChildProcess> {
  const child = spawn('redis-server', [
    '--port',
    String(node.port),
    // A bus port of its own: the default, port + 10000, may be taken or past 65535.
    '--cluster-port',
    String(node.busPort),
    '--bind',
    '127.0.0.1',
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-node-timeout',
    '2000',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    node.dir,
    '--daemonize',
    'no',
  ]);
  node.process = child;
  return new Promise((resolve, reject) => {
    // Its log as a whole: the line may come in two reads of the pipe.
    let log = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redis-server on ${node.port} did not start within 20 s: ${log.slice(-500)}`));
    }, 20_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server on ${node.port} exited (${code}): ${log.slice(-500)}`));
    });
    let ready = false;
    child.stdout?.on('data', (chunk: Buffer) => {
      if (ready) return;
      log += chunk.toString();
      if (log.includes('Ready to accept connections')) {
        ready = true;
        clearTimeout(timer);
        resolve(child);
      }
    });
  });
}

async function stopNode(node: Node): Promise<void> {
  const child = node.process;
  node.process = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Resolves once every node says cluster_state:ok (every slot served); rejects after `timeoutMs`. */
async function clusterOk(nodes: Node[], timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const states = await Promise.all(
      nodes.map((node) =>
        // A node that has just been restarted, or is still frozen, must not hold the wait past its deadline.
        run('redis-cli', ['-p', String(node.port), 'cluster', 'info'], { timeout: 2000 }).then(
          (result) => result.stdout.includes('cluster_state:ok'),
          () => false,
        ),
      ),
    );
    if (states.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error('the test Redis Cluster did not reach cluster_state:ok');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function startRedisCluster(): Promise<TestRedisCluster> {
  const root = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  const nodes: Node[] = [];
  const destroy = async () => {
    await Promise.all(nodes.map(stopNode));
    rmSync(root, { recursive: true, force: true });
  };
  try {
    const ports: number[] = [];
    while (ports.length < 6) {
      const port = await freePort();
      if (!ports.includes(port)) ports.push(port);
    }
    for (let i = 0; i < 3; i++) {
      const dir = join(root, `node-${i}`);
      mkdirSync(dir);
      nodes.push({ port: ports[2 * i] as number, busPort: ports[2 * i + 1] as number, dir });
    }
    await Promise.all(nodes.map(startNode));
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    await clusterOk(nodes);
  } catch (error) {
    await destroy();
    throw error;
  }
  return {
    ports: nodes.map((node) => node.port),
    seeds: nodes.map((node) => `127.0.0.1:${node.port}`).join(','),
    stop: async (index) => {
      await Promise.all(nodes.filter((_, i) => index === undefined || i === index).map(stopNode));
    },
    freeze: (index) => void nodes[index]?.process?.kill('SIGSTOP'),
    thaw: (index) => void nodes[index]?.process?.kill('SIGCONT'),
    restart: async () => {
      await Promise.all(nodes.filter((node) => !node.process).map(startNode));
      await clusterOk(nodes);
    },
    destroy,
  };
}
