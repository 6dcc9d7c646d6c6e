/**
 * A registry document's text, YAML or JSON, to plain data, and document paths
 * back to YAML lines. The structure is counted while it is read
 * (src/registry/text-scan.ts): nesting, entries and values past their limits
 * are refused before anything is built. YAML is read as data only: anchors
 * and aliases, merge keys, explicit tags, duplicate keys and several
 * documents in one file are refused rather than expanded, so a small file
 * cannot expand into a large one (billion laughs) or into types that JSON
 * does not have; JSON's duplicate member names are refused as YAML's are.
 */
import {
  Composer,
  type CST,
  type Document,
  isMap,
  isNode,
  isScalar,
  LineCounter,
  type Node,
  visit,
  type YAMLMap,
  YAMLParseError,
} from 'yaml';
import { formatIssuePath } from '../fixtures/schema.js';
import { DOCUMENT_LIMITS, type StructureLimits } from './limits.js';
import { readYamlTokens, scanJson, type TextProblem } from './text-scan.js';

export type DocumentFormat = 'json' | 'yaml';

export type ParsedText =
  | { ok: true; value: unknown; format: DocumentFormat; locate: (path: readonly PropertyKey[]) => string }
  | { ok: false; problems: TextProblem[] };

/** By the file name when it says, else by the first character: JSON is an object. */
export function detectFormat(text: string, fileName?: string): DocumentFormat {
  if (fileName && /\.json$/i.test(fileName)) return 'json';
  if (fileName && /\.ya?ml$/i.test(fileName)) return 'yaml';
  return /^\s*[{[]/.test(text) ? 'json' : 'yaml';
}

export function describeTextProblem(problem: TextProblem): string {
  return problem.line === undefined
    ? problem.message
    : `line ${problem.line}, column ${problem.column}: ${problem.message}`;
}

function parseJson(text: string, limits: StructureLimits): ParsedText {
  const problem = scanJson(text, limits);
  if (problem) return { ok: false, problems: [problem] };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, problems: [{ message: `not valid JSON: ${(error as Error).message}` }] };
  }
  return { ok: true, value, format: 'json', locate: formatIssuePath };
}

/**
 * A mapping's keys that are not plain values, or that repeat one before them.
 * The composer's own check compares each key with every one before it:
 * quadratic in the size of a mapping.
 */
function duplicateKeys(map: YAMLMap, report: (node: Node | null, message: string) => void) {
  const keys = new Set<string>();
  for (const { key } of map.items) {
    if (!isScalar(key)) {
      report(key as Node | null, 'a key must be a plain value');
      continue;
    }
    const name = String(key.value);
    if (keys.has(name)) report(key, 'duplicate key');
    keys.add(name);
  }
}

/** The problems of a YAML document that would make it more than plain data. */
function unsafeYaml(document: Document, lines: LineCounter, text: string): TextProblem[] {
  const problems: TextProblem[] = [];
  /** `marker`: an anchor or tag written before the node, whose place is the marker's, not the value's. */
  const report = (
    node: { range?: [number, number, number] | null } | null | undefined,
    message: string,
    marker?: string,
  ) => {
    let offset = node?.range?.[0];
    if (offset !== undefined && marker !== undefined) {
      const at = text.lastIndexOf(marker, offset);
      if (at >= 0) offset = at;
    }
    const position = offset === undefined ? undefined : lines.linePos(offset);
    problems.push({ message, line: position?.line, column: position?.col });
  };
  // The walk recurses once a level: the structure was counted before (at most MAX_DEPTH).
  visit(document, {
    Alias(_key, node) {
      report(node, `aliases (*${node.source}) are not allowed`);
      return visit.SKIP;
    },
    Pair(_key, pair) {
      if (isScalar(pair.key) && pair.key.value === '<<') report(pair.key, 'merge keys (<<) are not allowed');
    },
    Node(_key, node) {
      if (node.anchor) report(node, `anchors (&${node.anchor}) are not allowed`, `&${node.anchor}`);
      // The composer sets `tag` only for a tag written in the source.
      if (node.tag) report(node, `tags (${node.tag}) are not allowed`, '!');
      if (isMap(node)) duplicateKeys(node, report);
    },
  });
  return problems;
}

/** The first of the documents the tokens hold; a second is an error of the first, as parseDocument() says it. */
function composeOne(tokens: Iterable<CST.Token>, text: string): Document.Parsed {
  const composer = new Composer({ uniqueKeys: false, merge: false, schema: 'core', keepSourceTokens: false });
  let document: Document.Parsed | undefined;
  for (const composed of composer.compose(tokens, true, text.length)) {
    if (!document) document = composed;
    else {
      document.errors.push(
        new YAMLParseError(composed.range.slice(0, 2) as [number, number], 'MULTIPLE_DOCS', 'several documents'),
      );
      break;
    }
  }
  // compose(tokens, true) always ends with a document, an empty one for an empty text.
  return document as Document.Parsed;
}

function parseYaml(text: string, limits: StructureLimits): ParsedText {
  const lines = new LineCounter();
  const read = readYamlTokens(text, lines, limits);
  if (!read.ok) return { ok: false, problems: [read.problem] };
  const document = composeOne(read.tokens, text);
  const position = (offset: number) => lines.linePos(offset);
  const fromErrors = [...document.errors, ...document.warnings].map((error): TextProblem => {
    const { line, col } = position(error.pos[0]);
    const message =
      error.code === 'MULTIPLE_DOCS'
        ? 'a registry document is one YAML document: this one has several (a second "---")'
        : (error.message.split('\n')[0] ?? error.code);
    return { message: message.replace(/ at line \d+, column \d+:?$/, ''), line, column: col };
  });
  if (fromErrors.length > 0) return { ok: false, problems: fromErrors };
  const unsafe = unsafeYaml(document, lines, text);
  if (unsafe.length > 0) return { ok: false, problems: unsafe };
  const value = document.toJS({ maxAliasCount: 0 });
  const locate = (path: readonly PropertyKey[]): string => {
    const rendered = formatIssuePath(path);
    // The deepest node of the path that exists: a missing field is reported at its object.
    for (let length = path.length; length >= 0; length--) {
      const node = length === 0 ? document.contents : document.getIn(path.slice(0, length) as unknown[], true);
      if (isNode(node) && node.range) {
        const { line, col } = position(node.range[0]);
        return `${rendered || '(document)'} (line ${line}, column ${col})`;
      }
    }
    return rendered;
  };
  return { ok: true, value, format: 'yaml', locate };
}

/** Parses a document's text in the format given or detected, its structure within `limits`. */
export function parseDocumentText(
  text: string,
  format: DocumentFormat,
  limits: StructureLimits = DOCUMENT_LIMITS[format],
): ParsedText {
  if (text.includes('\u0000')) return { ok: false, problems: [{ message: 'the document contains a NUL character' }] };
  return format === 'json' ? parseJson(text, limits) : parseYaml(text, limits);
}
