/** When `npm start` loads the demo registry, whose keys are public, and how its dates follow the clock (src/demo.ts). */
import { describe, expect, it } from 'vitest';
import { DEMO_NEWEST_EVIDENCE_DAYS, demoAsOf, demoRefusal, isLoopbackHost, shouldLoadDemo } from '../src/demo.js';
import { demoFixture } from './helpers/app.js';

const dev = {
  databaseKind: 'embedded',
  nodeEnv: 'development',
  host: '127.0.0.1',
  demo: undefined,
  trustProxy: false,
} as const;

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

  it('TRUST_PROXY set refuses it, DEMO=1 included, and says why', () => {
    for (const trustProxy of [true, 1, ['10.0.0.0/8']]) {
      expect(shouldLoadDemo({ ...dev, trustProxy }), JSON.stringify(trustProxy)).toBe(false);
      expect(shouldLoadDemo({ ...dev, trustProxy, demo: true }), JSON.stringify(trustProxy)).toBe(false);
      expect(demoRefusal({ ...dev, trustProxy, demo: true })).toBe(
        'DEMO=1 ignored: TRUST_PROXY is set, so this instance is reachable through a proxy and the public demo keys would be too',
      );
      expect(demoRefusal({ ...dev, trustProxy })).toBeNull();
    }
    expect(demoRefusal({ ...dev, demo: true })).toBeNull();
    expect(demoRefusal({ ...dev, databaseKind: 'postgres', demo: true })).toBe(
      'DEMO=1 ignored: the demo registry is never loaded into PostgreSQL',
    );
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

type Fixture = {
  organizations: {
    api_keys: { revoked_at?: string }[];
    metrics: {
      key: string;
      name: string;
      created_at: string;
      governance: { next_review_date?: string };
      validations: { ran_at: string }[];
    }[];
  }[];
};

const DAY = 24 * 60 * 60 * 1000;
const newestRun = (fixture: Fixture) =>
  Math.max(
    ...fixture.organizations.flatMap((o) => o.metrics.flatMap((m) => m.validations.map((v) => Date.parse(v.ran_at)))),
  );

describe('the demo as of the moment it is loaded', () => {
  const original = demoFixture as Fixture;
  const snapshot = JSON.stringify(original);

  it.each([
    ['now', new Date()],
    ['90 days later', new Date(Date.now() + 90 * DAY)],
    ['a year earlier', new Date(Date.now() - 365 * DAY)],
  ])('%s: the newest evidence is 2 days old, every date moved by the same whole days', (_label, now) => {
    const moved = demoAsOf(original, now) as Fixture;
    const age = now.getTime() - newestRun(moved);
    expect(age).toBeGreaterThanOrEqual(DEMO_NEWEST_EVIDENCE_DAYS * DAY);
    expect(age).toBeLessThan((DEMO_NEWEST_EVIDENCE_DAYS + 1) * DAY);
    const shift = newestRun(moved) - newestRun(original);
    expect(Math.abs(shift % DAY)).toBe(0);
    const [acme] = original.organizations;
    const [movedAcme] = moved.organizations;
    for (const [index, metric] of (acme?.metrics ?? []).entries()) {
      const after = movedAcme?.metrics[index];
      expect(Date.parse(after?.created_at ?? '') - Date.parse(metric.created_at)).toBe(shift);
      expect(after?.name).toBe(metric.name);
      for (const [i, run] of metric.validations.entries()) {
        expect(Date.parse(after?.validations[i]?.ran_at ?? '') - Date.parse(run.ran_at)).toBe(shift);
      }
      // Dates without a time move by the same days.
      const review = metric.governance.next_review_date;
      if (review) {
        expect(Date.parse(`${after?.governance.next_review_date}T00:00:00Z`) - Date.parse(`${review}T00:00:00Z`)).toBe(
          shift,
        );
      }
    }
    const revoked = acme?.api_keys.find((key) => key.revoked_at)?.revoked_at as string;
    const movedRevoked = movedAcme?.api_keys.find((key) => key.revoked_at)?.revoked_at as string;
    expect(Date.parse(movedRevoked) - Date.parse(revoked)).toBe(shift);
    // The file's data is not changed.
    expect(JSON.stringify(original)).toBe(snapshot);
  });
});
