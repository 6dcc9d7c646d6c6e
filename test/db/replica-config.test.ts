/**
 * DATABASE_REPLICA_URLS and REPLICA_MAX_LAG_MS at start-up (src/env.ts): every
 * bad value is a clear error, and WAL positions compare as numbers
 * (src/db/replicas.ts). The replicas themselves: test/scale-out/read-replicas.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { parseLsn } from '../../src/db/replicas.js';
import { parseEnv } from '../../src/env.js';

const primary = 'postgresql://app@db-primary:5432/registry';
const replicaA = 'postgresql://app@db-replica-a:5432/registry';
const replicaB = 'postgresql://app:secret@db-replica-b:5432/registry';

describe('replica configuration', () => {
  it('takes a comma-separated list of postgresql:// URLs, with a 1000 ms lag bound by default', () => {
    expect(parseEnv({ DATABASE_URL: primary }).DATABASE_REPLICA_URLS).toEqual([]);
    const env = parseEnv({ DATABASE_URL: primary, DATABASE_REPLICA_URLS: ` ${replicaA}, ${replicaB} ,` });
    expect(env.DATABASE_REPLICA_URLS).toEqual([replicaA, replicaB]);
    expect(env.REPLICA_MAX_LAG_MS).toBe(1000);
    expect(parseEnv({ DATABASE_URL: primary, REPLICA_MAX_LAG_MS: '250' }).REPLICA_MAX_LAG_MS).toBe(250);
  });

  it('refuses what cannot work, naming the variable (and never a password)', () => {
    const refused = (source: Record<string, string>) => () => parseEnv({ DATABASE_URL: primary, ...source });
    expect(refused({ DATABASE_REPLICA_URLS: 'mysql://user:hunter2@replica/db' })).toThrow(
      'DATABASE_REPLICA_URLS: not a postgresql:// URL: mysql://***@replica/db',
    );
    expect(refused({ DATABASE_REPLICA_URLS: `${replicaA},${replicaA}` })).toThrow(
      'DATABASE_REPLICA_URLS: a replica is named twice',
    );
    expect(refused({ DATABASE_REPLICA_URLS: `${replicaA},${primary}` })).toThrow(
      'DATABASE_REPLICA_URLS: names DATABASE_URL itself',
    );
    expect(() => parseEnv({ DATABASE_REPLICA_URLS: replicaA })).toThrow(
      'DATABASE_REPLICA_URLS: read replicas need DATABASE_URL',
    );
    expect(refused({ REPLICA_MAX_LAG_MS: '0' })).toThrow('REPLICA_MAX_LAG_MS');
    expect(refused({ REPLICA_MAX_LAG_MS: 'soon' })).toThrow('REPLICA_MAX_LAG_MS');
  });

  it('compares WAL positions as numbers, not as text', () => {
    expect(parseLsn('0/10000000') > parseLsn('0/3000060')).toBe(true);
    expect(parseLsn('1/0') > parseLsn('0/FFFFFFFF')).toBe(true);
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) + 0xb374d848n);
  });
});
