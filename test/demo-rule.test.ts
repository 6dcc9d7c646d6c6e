/** When `npm start` loads the demo registry, whose keys are public (src/demo.ts). */
import { describe, expect, it } from 'vitest';
import { isLoopbackHost, shouldLoadDemo } from '../src/demo.js';

const dev = { databaseKind: 'embedded', nodeEnv: 'development', host: '127.0.0.1', demo: undefined } as const;

describe('the demo rule', () => {
  it('loads on an embedded database of a development instance listening on loopback only', () => {
    expect(shouldLoadDemo(dev)).toBe(true);
    expect(shouldLoadDemo({ ...dev, nodeEnv: 'test', host: 'localhost' })).toBe(true);
    expect(shouldLoadDemo({ ...dev, host: '::1' })).toBe(true);
  });

  it('does not load in production, on a reachable address, or on PostgreSQL', () => {
    expect(shouldLoadDemo({ ...dev, nodeEnv: 'production' })).toBe(false);
    expect(shouldLoadDemo({ ...dev, host: '0.0.0.0' })).toBe(false);
    expect(shouldLoadDemo({ ...dev, host: '::' })).toBe(false);
    expect(shouldLoadDemo({ ...dev, host: '10.0.0.5' })).toBe(false);
    expect(shouldLoadDemo({ ...dev, databaseKind: 'postgres' })).toBe(false);
  });

  it('DEMO=1 asks for it on any embedded instance, DEMO=0 never; PostgreSQL never', () => {
    expect(shouldLoadDemo({ ...dev, nodeEnv: 'production', host: '0.0.0.0', demo: true })).toBe(true);
    expect(shouldLoadDemo({ ...dev, demo: false })).toBe(false);
    expect(shouldLoadDemo({ ...dev, databaseKind: 'postgres', demo: true })).toBe(false);
  });

  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ['0.0.0.0', '::', '192.168.1.2', 'example.com', '127.0.0.1.example.com', '']) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});
