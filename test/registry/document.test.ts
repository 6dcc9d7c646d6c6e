/**
 * A registry document's text to a validated document (src/registry/text.ts,
 * src/registry/document.ts), with no database: every kind of bad input is
 * refused with its place, the JSON path and, for YAML, the line and column
 * of the offending text; YAML is read as data only (no anchors, aliases,
 * merge keys, tags, duplicate keys, several documents or nesting past 64
 * levels), so that nothing expands. The problems are rendered as the route
 * and the CLI render them.
 */
import { describe, expect, it } from 'vitest';
import { parseRegistryDocument } from '../../src/registry/document.js';
import { RegistryError } from '../../src/registry/registry-error.js';
import { type DocumentFormat, describeTextProblem, detectFormat, parseDocumentText } from '../../src/registry/text.js';

type Outcome = { ok: true; document: ReturnType<typeof parseRegistryDocument> & { ok: true } } | string[];

/** The document, or its problems as the route words them (first one is its `error`). */
function read(text: string, format: DocumentFormat = 'yaml'): Outcome {
  const parsed = parseDocumentText(text, format);
  if (!parsed.ok) return parsed.problems.map(describeTextProblem);
  const document = parseRegistryDocument(parsed.value);
  if (!document.ok) return new RegistryError(document.problems).lines(parsed.locate);
  return { ok: true, document };
}

function problems(text: string, format: DocumentFormat = 'yaml'): string[] {
  const outcome = read(text, format);
  if (!Array.isArray(outcome)) throw new Error('expected the document to be refused');
  return outcome;
}

function accepted(text: string, format: DocumentFormat = 'yaml') {
  const outcome = read(text, format);
  if (Array.isArray(outcome)) throw new Error(`expected the document to be accepted: ${outcome.join('\n')}`);
  return outcome.document.document;
}

/** `line L, column C` of the first occurrence of `marker` in `text` (1-based, as editors count). */
/** `line L, column ` of the line holding `marker`: for problems whose column is the node's, not the marker's. */
function onLineOf(text: string, marker: string): RegExp {
  const line = at(text, marker).split(',')[0];
  return new RegExp(`^${line}, column \\d+: `);
}

function at(text: string, marker: string, occurrence = 1, offset = 0): string {
  let index = -1;
  for (let n = 0; n < occurrence; n++) index = text.indexOf(marker, index + 1);
  if (index < 0) throw new Error(`no ${marker} in the text`);
  const before = text.slice(0, index + offset).split('\n');
  return `line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
}

/** A valid YAML document with one metric `a`; `extra` is appended as more lines of it (or more metrics). */
const yaml = (extra = '') => `organization: acme
defaults:
  project: Core
  owner_team: Finance
metrics:
  - key: a
    name: A
    description: d
    sql_expression: x
${extra}`;

const secondMetric = (key: string) => `  - key: ${key}\n    name: B\n    description: d\n    sql_expression: x\n`;

describe('a valid document', () => {
  it('is read with the defaults of the spec', () => {
    const document = accepted(yaml());
    expect(document.organization).toBe('acme');
    expect(document.metrics).toEqual([
      expect.objectContaining({
        key: 'a',
        project: 'Core',
        owner_team: 'Finance',
        domain: null,
        metric_type: 'base',
        lifecycle_status: 'DRAFT',
        definition_version: '1.0.0',
        policy_tier: 'tier_3',
        scope: 'exploratory',
        concept_name: 'a',
        template_name: 'base',
        grains: [],
        default_grain: '',
        versions: [],
        approvals: [],
        relationships: [],
      }),
    ]);
  });

  it('reads YAML 1.2 as data: unquoted timestamps stay text, yes/no/on/off are strings where strings are due', () => {
    const document = accepted(
      yaml(`    tags: [yes, no, on, off]
    versions:
      - definition_version: 3.0.0
        status: released
        released_at: 2026-02-15T00:00:00Z
`),
    );
    expect(document.metrics[0]?.tags).toEqual(['yes', 'no', 'on', 'off']);
    expect(document.metrics[0]?.versions).toEqual([
      { definition_version: '3.0.0', status: 'released', released_at: '2026-02-15T00:00:00.000Z', change_summary: '' },
    ]);
  });

  it('a key of 128 characters and every character the pattern allows', () => {
    const long = 'a'.repeat(128);
    expect(accepted(yaml(secondMetric(long) + secondMetric('0.b_c-d'))).metrics.map((m) => m.key)).toEqual([
      'a',
      long,
      '0.b_c-d',
    ]);
  });

  it('the same document as JSON reads the same', () => {
    const text = yaml();
    const json = JSON.stringify({
      organization: 'acme',
      defaults: { project: 'Core', owner_team: 'Finance' },
      metrics: [{ key: 'a', name: 'A', description: 'd', sql_expression: 'x' }],
    });
    expect(accepted(json, 'json')).toEqual(accepted(text));
  });
});

describe('the format', () => {
  it.each([
    ['registry.json', '{}', 'json'],
    ['registry.JSON', 'organization: acme', 'json'],
    ['registry.yaml', '{"organization": "acme"}', 'yaml'],
    ['registry.yml', '{}', 'yaml'],
    [undefined, '  {"organization": "acme"}', 'json'],
    [undefined, 'organization: acme', 'yaml'],
    ['registry', '\n[1]', 'json'],
  ])('%s with %j reads as %s', (file, text, format) => {
    expect(detectFormat(text, file)).toBe(format);
  });
});

describe('fields', () => {
  it('an unknown field at the top', () => {
    const text = 'organizatoin: acme\nmetrics: []\n';
    expect(problems(text)).toEqual([
      'organization (line 1, column 1): required',
      `organizatoin (${at(text, 'acme')}): unknown field "organizatoin"`,
    ]);
  });

  it('an unknown field of a metric (a typo)', () => {
    const text = yaml('    descripton: oops\n');
    expect(problems(text)).toEqual([`metrics[0].descripton (${at(text, 'oops')}): unknown field "descripton"`]);
  });

  it('an unknown field of defaults, a version, an approval, a relationship and business_definition', () => {
    const text = `organization: acme
defaults:
  project: Core
  owner_team: Finance
  projet: Typo
metrics:
  - key: a
    name: A
    description: d
    sql_expression: x
    business_definition:
      include: typo1
    versions:
      - definition_version: 1.0.0
        status: released
        released_at: 2026-01-01T00:00:00Z
        released_by: typo2
    approvals:
      - definition_version: 1.0.0
        approver_role: cfo
        approver: null
        decision: approved
        decided_at: 2026-01-01T00:00:00Z
        approved_by: typo3
    relationships:
      - kind: related_to
        target: b
        target_id: typo4
`;
    expect(problems(text)).toEqual([`defaults.projet (${at(text, 'Typo')}): unknown field "projet"`]);
    const withoutDefaultsTypo = text.replace('  projet: Typo\n', '');
    expect(problems(withoutDefaultsTypo)).toEqual([
      `metrics[0].business_definition.include (${at(withoutDefaultsTypo, 'typo1')}): unknown field "include"`,
      `metrics[0].versions[0].released_by (${at(withoutDefaultsTypo, 'typo2')}): unknown field "released_by"`,
      `metrics[0].approvals[0].approved_by (${at(withoutDefaultsTypo, 'typo3')}): unknown field "approved_by"`,
      `metrics[0].relationships[0].target_id (${at(withoutDefaultsTypo, 'typo4')}): unknown field "target_id"`,
    ]);
  });

  it.each([
    ['id', '8f7c2e8a-3e8f-4b7e-9d8f-7c2e8a3e8f4b'],
    ['project_id', '8f7c2e8a-3e8f-4b7e-9d8f-7c2e8a3e8f4b'],
    ['domain_id', 'null'],
    ['created_at', '2026-01-01T00:00:00Z'],
    ['updated_at', '2026-01-01T00:00:00Z'],
    ['validations', '[]'],
    ['challenges', '[]'],
    ['threads', '[]'],
  ])('%s is the service’s, not the document’s', (field, value) => {
    const text = yaml(`    ${field}: ${value}\n`);
    expect(problems(text)).toEqual([`metrics[0].${field} (${at(text, value)}): unknown field "${field}"`]);
  });

  it('a required field left out is named, at its metric', () => {
    const text = yaml('  - key: b\n    description: d\n    sql_expression: x\n');
    expect(problems(text)).toEqual([`metrics[1].name (${at(text, 'key: b')}): required`]);
  });

  it('project and owner_team are required unless in defaults', () => {
    const text = 'organization: acme\nmetrics:\n  - key: a\n    name: A\n    description: d\n    sql_expression: x\n';
    expect(problems(text)).toEqual([
      `metrics[0].owner_team (${at(text, 'key: a')}): required`,
      `metrics[0].project (${at(text, 'key: a')}): required`,
    ]);
  });

  it('invalid lifecycle_status', () => {
    const text = yaml('    lifecycle_status: SHIPPED\n');
    expect(problems(text)).toEqual([
      `metrics[0].lifecycle_status (${at(text, 'SHIPPED')}): Invalid option: expected one of "DRAFT"|"VALIDATED"|"CANDIDATE"|"APPROVED"|"RELEASED"|"DEPRECATED"`,
    ]);
  });

  it('a definition_version YAML reads as a number is refused rather than turned into "1"', () => {
    const text = yaml('    definition_version: 1.0\n');
    expect(problems(text)).toEqual([
      `metrics[0].definition_version (${at(text, '1.0')}): Invalid input: expected string, received number`,
    ]);
  });

  it('a timestamp that is not ISO 8601', () => {
    const text = yaml('    versions:\n      - {definition_version: 1.0.0, status: released, released_at: yesterday}\n');
    expect(problems(text)).toEqual([
      `metrics[0].versions[0].released_at (${at(text, 'yesterday')}): expected an ISO 8601 timestamp, e.g. 2026-01-31T09:00:00Z`,
    ]);
  });

  it('default_grain not among the grains', () => {
    const text = yaml('    grains: [day]\n    default_grain: month\n');
    expect(problems(text)).toEqual([`metrics[0].default_grain (${at(text, 'month')}): "month" is not in grains`]);
  });

  it('a relationship of an unknown kind, and one to the metric itself', () => {
    const kind = yaml('    relationships:\n      - {kind: friend_of, target: b}\n');
    expect(problems(kind)).toEqual([
      `metrics[0].relationships[0].kind (${at(kind, 'friend_of')}): Invalid option: expected one of "variant_of"|"supersedes"|"related_to"|"conflicts_with"`,
    ]);
    const self = yaml('    relationships:\n      - {kind: related_to, target: a}\n');
    expect(problems(self)).toEqual([
      `metrics[0].relationships[0].target (${at(self, 'a}')}): a metric cannot be related to itself`,
    ]);
  });

  it('the top level must be an object with a list of metrics', () => {
    expect(problems('')).toEqual(['(document): Invalid input: expected object, received null']);
    expect(problems('- a\n- b\n')).toEqual([
      '(document) (line 1, column 1): Invalid input: expected object, received array',
    ]);
    expect(problems('organization: acme\nmetrics: {}\n')).toEqual([
      'metrics (line 2, column 10): Invalid input: expected array, received object',
    ]);
    expect(problems('organization: acme\nmetrics: [3]\n')).toEqual([
      'metrics[0] (line 2, column 11): Invalid input: expected object, received number',
    ]);
    expect(problems('[]', 'json')).toEqual(['(document): Invalid input: expected object, received array']);
  });

  it('every problem is reported, each with its place', () => {
    const text = yaml(`    lifecycle_status: SHIPPED\n${secondMetric('Bad Key')}    scope: everywhere\n`);
    expect([...problems(text)].sort()).toEqual([
      `metrics[0].lifecycle_status (${at(text, 'SHIPPED')}): Invalid option: expected one of "DRAFT"|"VALIDATED"|"CANDIDATE"|"APPROVED"|"RELEASED"|"DEPRECATED"`,
      `metrics[1].key (${at(text, 'Bad Key')}): expected lowercase letters, digits, "_", "." and "-", starting with a letter or digit`,
      `metrics[1].scope (${at(text, 'everywhere')}): Invalid option: expected one of "enterprise_canonical"|"domain_canonical"|"exploratory"`,
    ]);
  });

  // The route's `error` is the first problem: the first a reader meets in the document.
  it('problems are listed in the order of the document (the first is the first in the text)', () => {
    const text = yaml(`${secondMetric('Bad Key')}    scope: everywhere\n`);
    expect(problems(text)).toEqual([
      `metrics[1].key (${at(text, 'Bad Key')}): expected lowercase letters, digits, "_", "." and "-", starting with a letter or digit`,
      `metrics[1].scope (${at(text, 'everywhere')}): Invalid option: expected one of "enterprise_canonical"|"domain_canonical"|"exploratory"`,
    ]);
  });

  it('more metrics than a document may hold', () => {
    const json = JSON.stringify({ organization: 'acme', metrics: new Array(20_001).fill(null) });
    expect(problems(json, 'json')).toEqual([`line 1, column ${json.length - 5}: metrics: more than 20000 entries`]);
  });
});

describe('keys', () => {
  it.each([
    ['Net-Revenue', 'upper case'],
    ['_net', 'a leading underscore'],
    ['.net', 'a leading dot'],
    ['net revenue', 'a space'],
    ['"net/revenue"', 'a slash'],
    ['"né"', 'a letter outside a-z'],
  ])('%s (%s) is not a key', (key) => {
    const text = yaml(secondMetric(key));
    expect(problems(text)).toEqual([
      `metrics[1].key (${at(text, key)}): expected lowercase letters, digits, "_", "." and "-", starting with a letter or digit`,
    ]);
  });

  it('a key of 129 characters', () => {
    const key = 'a'.repeat(129);
    const text = yaml(secondMetric(key));
    expect(problems(text)).toEqual([`metrics[1].key (${at(text, key)}): a key is at most 128 characters`]);
  });

  it('a key that YAML reads as null or a number', () => {
    const nullKey = yaml(secondMetric('null'));
    expect(problems(nullKey)).toEqual([
      `metrics[1].key (${at(nullKey, 'null')}): Invalid input: expected string, received null`,
    ]);
    const numberKey = yaml(secondMetric('2024'));
    expect(problems(numberKey)).toEqual([
      `metrics[1].key (${at(numberKey, '2024')}): Invalid input: expected string, received number`,
    ]);
  });

  it('a duplicate key names both metrics', () => {
    const text = yaml(secondMetric('a'));
    expect(problems(text)).toEqual([
      `metrics[1].key (${at(text, 'key: a', 2, 'key: '.length)}): duplicate key "a": also metrics[0]`,
    ]);
  });
});

describe('identities within a metric', () => {
  const released = '{definition_version: 1.0.0, status: released, released_at: 2026-01-01T00:00:00Z}';

  it('two versions with the same definition_version', () => {
    const text = yaml(
      `    versions:\n      - ${released}\n      - {definition_version: 1.0.0, status: draft, released_at: null}\n`,
    );
    expect(problems(text)).toEqual([
      `metrics[0].versions[1] (${at(text, '{definition_version: 1.0.0, status: draft')}): duplicate version (same definition_version): also [0]`,
    ]);
  });

  it('two approvals with the same definition_version, approver_role and decided_at (the same instant in two spellings)', () => {
    const text = yaml(`    versions:
      - ${released}
    approvals:
      - {definition_version: 1.0.0, approver_role: cfo, approver: null, decision: approved, decided_at: 2026-01-01T10:00:00Z}
      - {definition_version: 1.0.0, approver_role: cfo, approver: null, decision: rejected, decided_at: "2026-01-01T11:00:00+01:00"}
`);
    expect(problems(text)).toEqual([
      `metrics[0].approvals[1] (${at(text, '{definition_version: 1.0.0, approver_role: cfo, approver: null, decision: rejected')}): duplicate approval (same definition_version, approver_role and decided_at): also [0]`,
    ]);
  });

  it('two relationships with the same kind and target', () => {
    const text = yaml(
      `    relationships:\n      - {kind: related_to, target: b}\n      - {kind: related_to, target: b}\n${secondMetric('b')}`,
    );
    expect(problems(text)).toEqual([
      `metrics[0].relationships[1] (${at(text, '{kind: related_to, target: b}', 2)}): duplicate relationship (same kind and target): also [0]`,
    ]);
  });

  it('the same target under two kinds is two relationships', () => {
    const text = yaml(
      `    relationships:\n      - {kind: related_to, target: b}\n      - {kind: supersedes, target: b}\n${secondMetric('b')}`,
    );
    expect(accepted(text).metrics[0]?.relationships).toHaveLength(2);
  });

  it('an approval of a version the metric does not list', () => {
    const text = yaml(`    versions:
      - ${released}
    approvals:
      - {definition_version: 2.0.0, approver_role: cfo, approver: null, decision: approved, decided_at: 2026-01-01T00:00:00Z}
`);
    expect(problems(text)).toEqual([
      `metrics[0].approvals[0].definition_version (${at(text, '2.0.0')}): version 2.0.0 is not in this metric's versions`,
    ]);
  });
});

describe('YAML is data only', () => {
  it('an anchor', () => {
    const text = yaml('    tags: &t [a]\n');
    const found = problems(text);
    expect(found).toEqual([expect.stringMatching(onLineOf(text, '&t'))]);
    expect(found[0]).toMatch(/: anchors \(&t\) are not allowed$/);
  });

  it('an alias (and its anchor)', () => {
    const text = yaml('    tags: &t [a]\n    aliases: *t\n');
    expect(problems(text)).toEqual([
      expect.stringMatching(new RegExp(`${onLineOf(text, '&t').source}anchors \\(&t\\) are not allowed$`)),
      `${at(text, '*t')}: aliases (*t) are not allowed`,
    ]);
  });

  it('a merge key', () => {
    const text = yaml('    business_definition:\n      <<: {included: a}\n');
    expect(problems(text)).toEqual([`${at(text, '<<')}: merge keys (<<) are not allowed`]);
  });

  it('a billion laughs is refused, not expanded', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 10; i++) {
      const name = String.fromCharCode(97 + i);
      const previous = String.fromCharCode(96 + i);
      levels.push(`${name}: &${name} [${new Array(9).fill(`*${previous}`).join(',')}]`);
    }
    const text = `${levels.join('\n')}\norganization: acme\nmetrics: [*j]\n`;
    const started = process.hrtime.bigint();
    const found = problems(text);
    expect(found[0]).toMatch(new RegExp(`${onLineOf(text, '&a').source}anchors \\(&a\\) are not allowed$`));
    expect(found.every((line) => /^line \d+, column \d+: (anchors|aliases) \(/.test(line))).toBe(true);
    // Expanded, it would be 9^10 strings: refused long before (generous bound, for a shared machine).
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(5_000);
  });

  it.each([
    ['a custom tag', '!foo bar', 'Unresolved tag: !foo'],
    ['!!binary', '!!binary aGVsbG8=', 'tags (tag:yaml.org,2002:binary) are not allowed'],
    ['!!str', '!!str hello', 'tags (tag:yaml.org,2002:str) are not allowed'],
    ['!!map', '!!map {a: 1}', 'tags (tag:yaml.org,2002:map) are not allowed'],
    ['!!python/object', '!!python/object:os.system {}', 'tag'],
  ])('%s', (_name, value, message) => {
    const text = yaml(`    owner_display_name: ${value}\n`);
    const [first, ...rest] = problems(text);
    expect(first).toMatch(onLineOf(text, value));
    expect(first).toContain(message);
    expect(rest).toEqual([]);
  });

  it('a key given twice in one mapping', () => {
    const text = yaml('    name: Again\n');
    expect(problems(text)).toEqual([`${at(text, 'name: Again')}: duplicate key`]);
  });

  it('several documents in one file', () => {
    const text = 'organization: acme\nmetrics: []\n---\norganization: other\nmetrics: []\n';
    expect(problems(text)).toEqual([
      'line 3, column 1: a registry document is one YAML document: this one has several (a second "---")',
    ]);
  });

  it('a syntax error names its line and column', () => {
    const text = 'organization: acme\nmetrics:\n  - key: a\n   name: b\n';
    expect(problems(text)).toEqual([`${at(text, '   name: b')}: Sequence item without - indicator`]);
  });

  it('a tab where YAML wants spaces names its line', () => {
    const found = problems('organization: acme\nmetrics:\n\t- key: a\n');
    expect(found[0]).toMatch(/^line 3, column \d+: /);
  });
});

describe('nesting', () => {
  /** A document whose deepest value is `levels` collections deep (the document itself is the first). */
  function nested(levels: number): Record<string, unknown> {
    // document > metrics > metric > time_semantics > ...
    let inner: unknown = {};
    for (let i = 0; i < levels - 4; i++) inner = { n: inner };
    return {
      organization: 'acme',
      defaults: { project: 'Core', owner_team: 'Finance' },
      metrics: [{ key: 'a', name: 'A', description: 'd', sql_expression: 'x', time_semantics: inner }],
    };
  }

  /** The same as block YAML, one level an indentation. */
  function nestedYaml(levels: number): string {
    let text = `organization: acme
defaults:
  project: Core
  owner_team: Finance
metrics:
  - key: a
    name: A
    description: d
    sql_expression: x
    time_semantics:\n`;
    let indent = '      ';
    for (let i = 0; i < levels - 5; i++) {
      text += `${indent}n:\n`;
      indent += '  ';
    }
    return `${text}${indent}n: {}\n`;
  }

  it('64 levels are read, as JSON and as YAML', () => {
    expect(accepted(JSON.stringify(nested(64)), 'json').metrics).toHaveLength(1);
    expect(accepted(nestedYaml(64)).metrics).toHaveLength(1);
    expect(accepted(nestedYaml(64))).toEqual(accepted(JSON.stringify(nested(64)), 'json'));
  });

  it('65 levels are refused, as JSON and as YAML (with the line)', () => {
    expect(problems(JSON.stringify(nested(65)), 'json')).toEqual([
      expect.stringMatching(/^line 1, column \d+: [\w.[\]]+: nested deeper than 64 levels$/),
    ]);
    const text = nestedYaml(65);
    const found = problems(text);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^line \d+, column \d+: nested deeper than 64 levels$/);
  });

  it('a deeply nested flow sequence is refused without a stack overflow', () => {
    const depth = 100_000;
    const text = `organization: acme\nmetrics: ${'['.repeat(depth)}${']'.repeat(depth)}\n`;
    expect(problems(text).length).toBeGreaterThan(0);
    expect(problems(`{"organization": "acme", "metrics": ${'['.repeat(depth)}${']'.repeat(depth)}}`, 'json')).toEqual([
      expect.stringMatching(/^line 1, column 100: metrics(\[0\])+: nested deeper than 64 levels$/),
    ]);
  });
});

describe('text that is not a document', () => {
  it('truncated JSON', () => {
    const found = problems('{"organization": "acme", "metrics": [', 'json');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^not valid JSON: /);
  });

  it.each<[string, DocumentFormat]>([
    ['organization: acme\u0000\nmetrics: []\n', 'yaml'],
    ['{"organization": "acme\u0000", "metrics": []}', 'json'],
  ])('a NUL character (%#)', (text, format) => {
    expect(problems(text, format)).toEqual(['the document contains a NUL character']);
  });
});
