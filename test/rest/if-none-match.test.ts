/**
 * The If-None-Match parser (src/rest/etag.ts) runs on every conditional read,
 * after admission: its time must be linear in the header's length, or one key
 * holds the event loop of every tenant. Time is measured as the process's CPU
 * time (process.cpuUsage), which other processes of a busy machine do not
 * add to, and bounded far above what a linear parse takes (a 16 KiB header
 * parses in well under a millisecond; the backtracking pattern took hundreds).
 * Values are checked against a reference parser written differently: a
 * tokenizer, then the list grammar over the tokens.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseIfNoneMatch } from '../../src/http/if-none-match.js';

const ETAGC = '[\\x21\\x23-\\x7e\\x80-\\xff]';
const TOKEN = new RegExp(`[ \\t]+|,|(W/)?("${ETAGC}*")`, 'y');

/** RFC 9110: If-None-Match = "*" / #entity-tag, entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE. */
function referenceParse(header: string): '*' | string[] | null {
  const text = header.trim();
  if (text === '*') return '*';
  const elements: string[][] = [[]];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const match = TOKEN.exec(text);
    if (!match) return null;
    if (match[0] === ',') elements.push([]);
    else if (match[2]) elements[elements.length - 1]?.push(match[2]);
  }
  // An element holds at most one tag (whitespace around it; empty elements are allowed).
  if (elements.some((tags) => tags.length > 1)) return null;
  const tags = elements.flat();
  return tags.length ? tags : null;
}

/** CPU microseconds (user + system) of `run`. */
function cpuMicros(run: () => void): number {
  const before = process.cpuUsage();
  run();
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

/**
 * The least CPU of `run` over a few tries: a garbage collection or a compile
 * landing in one try is the machine's, not the parser's (a quadratic parse
 * costs ~270 ms every time).
 */
function leastCpuMicros(run: () => void, tries = 3): number {
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < tries && least >= CPU_BOUND_MICROS / 4; i++) least = Math.min(least, cpuMicros(run));
  return least;
}

const KIB_16 = 16 * 1024;
/** Far above a linear parse of 16 KiB (tens of microseconds), far below the quadratic one (~270 ms). */
const CPU_BOUND_MICROS = 20_000;

const hostile = [
  `"a",${' '.repeat(KIB_16 - 5)}x`,
  `"a",${'\t'.repeat(KIB_16 - 5)}x`,
  `${', '.repeat(KIB_16 / 2 - 1)}x`,
  `W/"${'a'.repeat(KIB_16 - 4)}`,
  `${'"a" ,'.repeat(KIB_16 / 5)} W/x`,
  `"a"${' '.repeat(KIB_16 - 6)}"b"`,
];

describe('parseIfNoneMatch', () => {
  it('parses the lists of RFC 9110 and refuses what is not one', () => {
    expect(parseIfNoneMatch(undefined)).toBeNull();
    expect(parseIfNoneMatch(' * ')).toBe('*');
    expect(parseIfNoneMatch('"a"')).toEqual(['"a"']);
    expect(parseIfNoneMatch('W/"a" ,\t"b,c", ,""')).toEqual(['"a"', '"b,c"', '""']);
    expect(parseIfNoneMatch(['"a"', 'W/"b"'])).toEqual(['"a"', '"b"']);
    for (const bad of ['', ',', 'a', '"a" "b"', '"a"x', 'W/a', 'w/"a"', '"a', '"a b"', '"\u0100"', '*, "a"']) {
      expect(parseIfNoneMatch(bad), bad).toBeNull();
    }
  });

  it('a 16 KiB hostile header costs as little CPU as a linear parse: the comma-then-spaces case of the audit and others', () => {
    for (const header of hostile) {
      expect(header.length).toBeLessThanOrEqual(KIB_16);
      let result: unknown;
      const micros = leastCpuMicros(() => {
        result = parseIfNoneMatch(header);
      });
      expect(micros, header.slice(0, 12)).toBeLessThan(CPU_BOUND_MICROS);
      expect(result).toEqual(referenceParse(header));
    }
  });

  it('any header up to 16 KiB: the same result as the reference parser, in CPU time bounded as a linear parse', () => {
    const piece = fc.oneof(
      fc.constantFrom(' ', '\t', ',', '"', 'W/', 'W', '/', '*', 'x', '"a"', 'W/"b"', '""', ' , ', '\u00ff', '\u0100'),
      fc.stringMatching(/^[ \t]{0,200}$/),
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'binary-ascii', maxLength: 40 }),
    );
    const header = fc.array(piece, { maxLength: 2000 }).map((parts) => parts.join('').slice(0, KIB_16));
    fc.assert(
      fc.property(header, (value) => {
        let result: unknown;
        const micros = leastCpuMicros(() => {
          result = parseIfNoneMatch(value);
        });
        expect(result).toEqual(referenceParse(value));
        expect(micros).toBeLessThan(CPU_BOUND_MICROS);
      }),
      { numRuns: 300 },
    );
  });

  it('parse time grows linearly: 16 KiB of whitespace after a comma costs per byte what 1 KiB does (within 4 times; the pattern was 16 times)', () => {
    const header = (length: number) => `"a",${' '.repeat(length - 5)}x`;
    // The same number of bytes parsed both ways: 10 headers of 16 KiB, 160 of 1 KiB; the best of 3 rounds.
    const cost = (length: number, times: number) => {
      const value = header(length);
      let best = Number.POSITIVE_INFINITY;
      for (let round = 0; round < 3 && (round === 0 || best < 10 * CPU_BOUND_MICROS); round++) {
        best = Math.min(
          best,
          cpuMicros(() => {
            for (let i = 0; i < times; i++) parseIfNoneMatch(value);
          }),
        );
      }
      return best;
    };
    cost(KIB_16, 10); // warm up the compiler
    const large = cost(KIB_16, 10);
    const small = cost(1024, 160);
    expect(large).toBeLessThan(4 * Math.max(small, 500));
  });
});
