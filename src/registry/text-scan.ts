/**
 * A body's structure counted while it is read, before anything is built from
 * it: nesting, the entries of each collection and the values of the whole
 * (src/registry/limits.ts). Both readers go through the text once, keeping
 * only a stack of the open collections, so a body of any shape costs at most
 * what the limits allow: JSON is scanned before JSON.parse, and YAML's
 * syntax tree is checked as the parser builds it, before it is composed.
 * Neither recurses.
 */
import { CST, Lexer, type LineCounter, Parser } from 'yaml';
import { formatIssuePath } from '../fixtures/schema.js';
import type { StructureLimits } from './limits.js';

export interface TextProblem {
  message: string;
  line?: number;
  column?: number;
}

/** Line and column (from 1) of `offset`; walks the text once, for the one problem reported. */
function positionOf(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let at = text.indexOf('\n'); at !== -1 && at < offset; at = text.indexOf('\n', at + 1)) {
    line++;
    lineStart = at + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

const tooDeep = (limits: StructureLimits) => `nested deeper than ${limits.depth} levels`;
const tooManyEntries = (limits: StructureLimits) => `more than ${limits.entries} entries`;
const tooManyNodes = (limits: StructureLimits) => `more than ${limits.nodes} values in all`;

interface JsonFrame {
  object: boolean;
  entries: number;
  /** the member names of an object so far, to refuse a duplicate as YAML does */
  names: Set<string> | null;
  /** the key of the entry being read: an index, or a member name */
  at: PropertyKey | undefined;
  /** an object's next string is a member name */
  expectName: boolean;
}

/** Where a number or a literal ends: white space, `,` `:` `[` `]` `{` `}` `"`. */
const DELIMITERS = new Set([0x20, 0x09, 0x0a, 0x0d, 0x2c, 0x3a, 0x5b, 0x5d, 0x7b, 0x7d, 0x22]);

/**
 * The first limit the JSON text breaks, or a duplicate member name, with its
 * place; null when there is none. Text that is not JSON is left to
 * JSON.parse to report: the scan stops where the structure stops making sense.
 */
export function scanJson(text: string, limits: StructureLimits): TextProblem | null {
  const stack: JsonFrame[] = [];
  let nodes = 0;
  const problem = (offset: number, path: PropertyKey[], message: string): TextProblem => {
    const place = formatIssuePath(path);
    return { message: place ? `${place}: ${message}` : message, ...positionOf(text, offset) };
  };
  const pathOf = (frames: JsonFrame[]) => frames.map((frame) => frame.at as PropertyKey);
  /** Counts a value starting at `offset`: an array's entry, or the value of the member just named. */
  const value = (offset: number): TextProblem | null => {
    if (++nodes > limits.nodes) return problem(offset, pathOf(stack), tooManyNodes(limits));
    const top = stack.at(-1);
    if (top && !top.object) {
      top.at = top.entries;
      if (++top.entries > limits.entries) return problem(offset, pathOf(stack.slice(0, -1)), tooManyEntries(limits));
    }
    return null;
  };
  let i = 0;
  while (i < text.length) {
    const char = text[i] as string;
    if (char === ' ' || char === '\n' || char === '\r' || char === '\t' || char === ':') {
      i++;
      continue;
    }
    if (char === '{' || char === '[') {
      const counted = value(i);
      if (counted) return counted;
      const object = char === '{';
      stack.push({ object, entries: 0, names: object ? new Set() : null, at: undefined, expectName: object });
      if (stack.length > limits.depth) return problem(i, pathOf(stack.slice(0, -1)), tooDeep(limits));
      i++;
      continue;
    }
    if (char === '}' || char === ']') {
      const top = stack.pop();
      if (!top || top.object !== (char === '}')) return null;
      i++;
      continue;
    }
    if (char === ',') {
      const top = stack.at(-1);
      if (top?.object) top.expectName = true;
      i++;
      continue;
    }
    if (char === '"') {
      let end = i + 1;
      let escaped = false;
      while (end < text.length) {
        const c = text.charCodeAt(end);
        if (c === 0x22) break;
        if (c === 0x5c) {
          escaped = true;
          end++;
        }
        end++;
      }
      if (end >= text.length) return null;
      const top = stack.at(-1);
      if (top?.object && top.expectName) {
        top.expectName = false;
        if (++nodes > limits.nodes) return problem(i, pathOf(stack), tooManyNodes(limits));
        if (++top.entries > limits.entries) return problem(i, pathOf(stack.slice(0, -1)), tooManyEntries(limits));
        const raw = text.slice(i + 1, end);
        let name = raw;
        if (escaped) {
          try {
            name = JSON.parse(`"${raw}"`) as string;
          } catch {
            return null;
          }
        }
        if (top.names?.has(name)) return problem(i, [...pathOf(stack.slice(0, -1)), name], 'duplicate key');
        top.names?.add(name);
        top.at = name;
      } else {
        const counted = value(i);
        if (counted) return counted;
      }
      i = end + 1;
      continue;
    }
    // A number or a literal (or something JSON.parse will refuse).
    const counted = value(i);
    if (counted) return counted;
    let end = i + 1;
    while (end < text.length && !DELIMITERS.has(text.charCodeAt(end))) end++;
    i = end;
  }
  return null;
}

/** Lexer tokens that start a value of the document (YAML counts sequence entries and flow commas as well). */
const YAML_VALUE_TOKENS = new Set<string>([
  'scalar',
  'single-quoted-scalar',
  'double-quoted-scalar',
  'block-scalar-header',
  'alias',
  'flow-map-start',
  'flow-seq-start',
  'seq-item-ind',
  'explicit-key-ind',
  'comma',
]);

export type YamlTokens = { ok: true; tokens: CST.Token[] } | { ok: false; problem: TextProblem };

/**
 * The YAML syntax tree of `text`, its structure checked after each lexical
 * token: the parser's stack holds the collections open at that point, and a
 * collection receives its entries while it is on top (or just below the
 * entry being read).
 */
export function readYamlTokens(text: string, lines: LineCounter, limits: StructureLimits): YamlTokens {
  const parser = new Parser(lines.addNewLine);
  lines.addNewLine(0);
  const tokens: CST.Token[] = [];
  let nodes = 0;
  const problem = (offset: number, message: string): YamlTokens => {
    const { line, col } = lines.linePos(offset);
    return { ok: false, problem: { message, line, column: col } };
  };
  for (const lexeme of new Lexer().lex(text)) {
    for (const token of parser.next(lexeme)) tokens.push(token);
    const type = CST.tokenType(lexeme);
    if (type !== null && YAML_VALUE_TOKENS.has(type) && ++nodes > limits.nodes) {
      return problem(parser.offset, tooManyNodes(limits));
    }
    const { stack } = parser;
    if (stack.length > limits.depth) {
      const collections = stack.filter((token) => CST.isCollection(token));
      if (collections.length > limits.depth) {
        return problem((collections[limits.depth] as CST.Token).offset, tooDeep(limits));
      }
    }
    for (let at = stack.length - 1; at >= Math.max(0, stack.length - 3); at--) {
      const token = stack[at];
      if (CST.isCollection(token) && token.items.length > limits.entries) {
        return problem(token.offset, tooManyEntries(limits));
      }
    }
  }
  for (const token of parser.end()) tokens.push(token);
  return { ok: true, tokens };
}
