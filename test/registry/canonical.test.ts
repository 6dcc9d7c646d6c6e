/**
 * The canonical spelling of a value (src/registry/canonical.ts) hashes every
 * applied registry entry, and the hashes are stored: it must write exactly
 * what the first spelling wrote (JSON.stringify with a replacer sorting each
 * object's members, kept here as the reference), for every kind of value a
 * metric row, its governance or a trust policy holds, and for many made-up
 * ones.
 */
import { describe, expect, it } from 'vitest';
import { Prisma } from '../../src/generated/prisma/client.js';
import { canonical } from '../../src/registry/canonical.js';

/** The spelling every stored applied_hash was made with. */
function reference(value: unknown): string {
  return JSON.stringify(value, (_key, member: unknown) => {
    if (member === Prisma.DbNull || member === Prisma.JsonNull) return null;
    if (member !== null && typeof member === 'object' && !Array.isArray(member) && !(member instanceof Date)) {
      return Object.fromEntries(Object.entries(member).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return member;
  });
}

/** A deterministic generator (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = ['b', 'a', 'Z', '_x', 'é', '10', '2', '0', '01', '-1', '1.5', 'key with space', '\u{1F600}', ''];
const STRINGS = ['', 'plain', 'quote " and \\ back', 'line\nbreak\ttab', 'é\u00e9\u0301', '\u{1F600}', '\ud800', '<>&'];

function value(next: () => number, depth: number): unknown {
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T;
  const kind = Math.floor(next() * (depth > 3 ? 8 : 11));
  switch (kind) {
    case 0:
      return null;
    case 1:
      return pick(STRINGS);
    case 2:
      return pick([0, -0, 1, -1.5, 1e21, 1e-7, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY, 123.456]);
    case 3:
      return next() < 0.5;
    case 4:
      return new Date(Date.UTC(2026, Math.floor(next() * 12), 1 + Math.floor(next() * 28), 7, 30));
    case 5:
      return pick([Prisma.DbNull, Prisma.JsonNull, undefined]);
    case 6:
      return pick([new Prisma.Decimal('12.50'), new Prisma.Decimal('-0.001')]);
    case 7:
      return pick(['enterprise_canonical', 'RELEASED', 'SUM(revenue)']);
    case 8:
    case 9: {
      const object: Record<string, unknown> = {};
      for (let i = Math.floor(next() * 6); i > 0; i--) object[pick(KEYS)] = value(next, depth + 1);
      return object;
    }
    default:
      return Array.from({ length: Math.floor(next() * 5) }, () => value(next, depth + 1));
  }
}

describe('the canonical spelling', () => {
  it('writes what the reference writes for the values a metric row holds', () => {
    const row = {
      id: '0b6f8c1e-3c1d-5a7e-9a4b-2f1e0d9c8b7a',
      name: 'Net Revenue',
      description: 'Revenue after refunds.',
      lifecycleStatus: 'RELEASED',
      tags: ['finance', 'core'],
      aliases: [],
      dimensions: { region: { values: ['EU', 'US'] }, channel: null },
      filters: Prisma.JsonNull,
      timeSemantics: Prisma.DbNull,
      resolvedParameters: { '2': 'b', '10': 'a', z: 1, a: [1, { y: 2, x: 1 }] },
      approvedAt: new Date('2026-02-14T10:00:00Z'),
      effectiveTo: undefined,
      revenue: new Prisma.Decimal('1234.5600'),
    };
    expect(canonical(row)).toBe(reference(row));
    expect(canonical(['registry-entry-2', 'dbt:rides', ['name'], row, [], []])).toBe(
      reference(['registry-entry-2', 'dbt:rides', ['name'], row, [], []]),
    );
    // Members sorted by code unit, indices first by number, undefined members left out, DbNull as null.
    expect(canonical({ b: 1, a: undefined, '10': 2, '2': 3, B: Prisma.DbNull })).toBe('{"2":3,"10":2,"B":null,"b":1}');
  });

  it('writes what the reference writes for 5,000 made-up values', () => {
    for (let seed = 1; seed <= 5000; seed++) {
      const made = value(random(seed), 0);
      expect(canonical(made ?? null), `seed ${seed}`).toBe(reference(made ?? null));
    }
  });

  it('refuses a bigint as JSON.stringify does', () => {
    expect(() => canonical({ n: 1n })).toThrow(TypeError);
    expect(() => reference({ n: 1n })).toThrow(TypeError);
  });
});
