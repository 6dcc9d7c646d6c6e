/**
 * Whether `npm start` loads the demo registry (prisma/fixtures/demo.json)
 * into an empty embedded database. Its API keys and its owner's session
 * token are public in the repository, so by default only a development
 * instance that nothing but this machine can reach gets it: embedded
 * database, `NODE_ENV` not `production`, `HOST` a loopback address.
 * `DEMO=1` asks for it anyway (still only into an empty embedded database),
 * `DEMO=0` never.
 */
import { isIP } from 'node:net';

export interface DemoDecisionInput {
  databaseKind: 'embedded' | 'postgres';
  nodeEnv: string;
  host: string;
  /** DEMO: true (1), false (0) or unset */
  demo: boolean | undefined;
}

/** 127.0.0.0/8, ::1, an IPv4-mapped 127.x address, or `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const address = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (address === 'localhost') return true;
  if (address === '::1') return true;
  const v4 = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

export function shouldLoadDemo(input: DemoDecisionInput): boolean {
  if (input.databaseKind !== 'embedded') return false;
  if (input.demo !== undefined) return input.demo;
  return input.nodeEnv !== 'production' && isLoopbackHost(input.host);
}
