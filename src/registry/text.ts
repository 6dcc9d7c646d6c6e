/**
 * A registry document's text, YAML or JSON, to plain data, and document paths
 * back to YAML lines. YAML is read as data only: anchors and aliases, merge
 * keys, explicit tags, duplicate keys, several documents in one file and
 * nesting past MAX_DEPTH are refused rather than expanded, so a small file
 * cannot expand into a large one (billion laughs) or into types that JSON
 * does not have.
 */
import { type Document, isCollection, isNode, isScalar, LineCounter, parseDocument, visit } from 'yaml';
import { formatIssuePath } from '../fixtures/schema.js';
import { storableText, UNSTORABLE_TEXT } from '../metric/input.js';

export type DocumentFormat = 'json' | 'yaml';

/** Deeper than any registry document needs (a metric's own JSON fields included). */
export const MAX_DEPTH = 64;

export interface TextProblem {
  message: string;
  line?: number;
  column?: number;
}

export type ParsedText =
  | { ok: true; value: unknown; format: DocumentFormat; locate: (path: readonly PropertyKey[]) => string }
  | { ok: false; problems: TextProblem[] };

/** By the file name when it says, else by the first character: JSON is an object. */
export function detectFormat(text: string, fileName?: string): DocumentFormat {
  if (fileName && /\.json$/i.test(fileName)) return 'json';
  if (fileName && /\.ya?ml$/i.test(fileName)) return 'yaml';
  return /^\s*[{[]/.test(text) ? 'json' : 'yaml';
}

/**
 * The path of the first string (value or member name) that cannot be stored
 * ({@link storableText}); null when there is none.
 */
function unstorableAt(value: unknown, path: PropertyKey[] = []): PropertyKey[] | null {
  if (typeof value === 'string') return storableText(value) ? null : path;
  if (value === null || typeof value !== 'object') return null;
  const entries: [PropertyKey, unknown][] = Array.isArray(value)
    ? value.map((item, i) => [i, item])
    : Object.entries(value);
  for (const [key, child] of entries) {
    if (typeof key === 'string' && !storableText(key)) return [...path, key];
    const found = unstorableAt(child, [...path, key]);
    if (found) return found;
  }
  return null;
}

/** A parsed document holding text that cannot be stored is refused with the place. */
function storable(parsed: ParsedText): ParsedText {
  if (!parsed.ok) return parsed;
  const path = unstorableAt(parsed.value);
  if (path === null) return parsed;
  return { ok: false, problems: [{ message: `${parsed.locate(path) || '(document)'}: ${UNSTORABLE_TEXT}` }] };
}

function jsonDepthOk(value: unknown, depth = 0): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (depth >= MAX_DEPTH) return false;
  const children = Array.isArray(value) ? value : Object.values(value);
  return children.every((child) => jsonDepthOk(child, depth + 1));
}

export function describeTextProblem(problem: TextProblem): string {
  return problem.line === undefined
    ? problem.message
    : `line ${problem.line}, column ${problem.column}: ${problem.message}`;
}

function parseJson(text: string): ParsedText {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, problems: [{ message: `not valid JSON: ${(error as Error).message}` }] };
  }
  if (!jsonDepthOk(value)) return { ok: false, problems: [{ message: `nested deeper than ${MAX_DEPTH} levels` }] };
  return { ok: true, value, format: 'json', locate: formatIssuePath };
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
  visit(document, {
    Alias(_key, node) {
      report(node, `aliases (*${node.source}) are not allowed`);
      return visit.SKIP;
    },
    Pair(_key, pair) {
      if (isScalar(pair.key) && pair.key.value === '<<') report(pair.key, 'merge keys (<<) are not allowed');
    },
    Node(_key, node, path) {
      if (node.anchor) report(node, `anchors (&${node.anchor}) are not allowed`, `&${node.anchor}`);
      // The composer sets `tag` only for a tag written in the source.
      if (node.tag) report(node, `tags (${node.tag}) are not allowed`, '!');
      if (isCollection(node) && path.filter((step) => isCollection(step)).length >= MAX_DEPTH) {
        report(node, `nested deeper than ${MAX_DEPTH} levels`);
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return problems;
}

/** The parser and its walks recurse once a level: a document nested far deeper than MAX_DEPTH overflows the stack. */
function parseYaml(text: string): ParsedText {
  try {
    return parseYamlDocument(text);
  } catch (error) {
    if (error instanceof RangeError)
      return { ok: false, problems: [{ message: `nested deeper than ${MAX_DEPTH} levels` }] };
    throw error;
  }
}

function parseYamlDocument(text: string): ParsedText {
  const lines = new LineCounter();
  const document = parseDocument(text, {
    lineCounter: lines,
    uniqueKeys: true,
    merge: false,
    schema: 'core',
    prettyErrors: false,
    keepSourceTokens: false,
  });
  const position = (offset: number) => lines.linePos(offset);
  const fromErrors = [...document.errors, ...document.warnings].map((error): TextProblem => {
    const { line, col } = position(error.pos[0]);
    const message =
      error.code === 'DUPLICATE_KEY'
        ? 'duplicate key'
        : error.code === 'MULTIPLE_DOCS'
          ? 'a registry document is one YAML document: this one has several (a second "---")'
          : (error.message.split('\n')[0] ?? error.code);
    return { message: message.replace(/ at line \d+, column \d+:?$/, ''), line, column: col };
  });
  // The parser reports its own stack overflow as a document error: the nesting is what is wrong.
  if (fromErrors.some((problem) => /call stack/i.test(problem.message))) {
    return { ok: false, problems: [{ message: `nested deeper than ${MAX_DEPTH} levels` }] };
  }
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

/** Parses a document's text in the format given or detected. */
export function parseDocumentText(text: string, format: DocumentFormat): ParsedText {
  if (text.includes('\u0000')) return { ok: false, problems: [{ message: 'the document contains a NUL character' }] };
  return storable(format === 'json' ? parseJson(text) : parseYaml(text));
}
