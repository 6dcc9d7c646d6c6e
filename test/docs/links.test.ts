/**
 * The README and docs/ link only to what the repository ships: every
 * relative link names a file that exists, and an #anchor into a markdown
 * file names one of its headings (GitHub's slugs). The CLI's help and the
 * source name only markdown files that exist.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Lines outside fenced code blocks, with inline code spans blanked. */
function proseLines(markdown: string): string[] {
  const lines: string[] = [];
  let fence: string | null = null;
  for (const line of markdown.split('\n')) {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line);
    if (opening?.[1]) {
      if (fence === null) fence = opening[1][0] ?? null;
      else if (opening[1][0] === fence) fence = null;
      lines.push('');
      continue;
    }
    lines.push(fence === null ? line.replace(/`+[^`]*`+/g, (code) => ' '.repeat(code.length)) : '');
  }
  return lines;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as '-', repeats numbered. */
function headingSlugs(markdown: string): Set<string> {
  const slugs = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | null = null;
  for (const line of markdown.split('\n')) {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line);
    if (opening?.[1]) {
      if (fence === null) fence = opening[1][0] ?? null;
      else if (opening[1][0] === fence) fence = null;
      continue;
    }
    if (fence !== null) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading?.[1]) continue;
    const text = heading[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .replace(/[`*_~]/g, (c) => (c === '_' ? '_' : ''));
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    slugs.add(count === 0 ? base : `${base}-${count}`);
  }
  return slugs;
}

/** Link targets of a markdown text: inline links, images and reference definitions. */
function linkTargets(markdown: string): { line: number; target: string }[] {
  const targets: { line: number; target: string }[] = [];
  proseLines(markdown).forEach((text, index) => {
    for (const match of text.matchAll(/!?\[(?:[^\]]|\][^(])*?\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      if (match[1]) targets.push({ line: index + 1, target: match[1] });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(text);
    if (definition?.[1]) targets.push({ line: index + 1, target: definition[1] });
  });
  return targets;
}

/** Problems of one markdown file's relative links, as `file:line target: why`. */
function brokenLinks(file: string, markdown: string, read: (path: string) => string | null): string[] {
  const problems: string[] = [];
  for (const { line, target } of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
    const [pathPart = '', anchor] = target.split('#', 2) as [string, string | undefined];
    const path = pathPart === '' ? file : join(dirname(file), decodeURIComponent(pathPart));
    const where = `${file}:${line} ${target}`;
    const text = read(path);
    if (text === null) {
      problems.push(`${where}: no file ${path}`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (!path.endsWith('.md')) {
      problems.push(`${where}: an anchor into a file that is not markdown`);
    } else if (!headingSlugs(text).has(decodeURIComponent(anchor).toLowerCase())) {
      problems.push(`${where}: no heading #${anchor} in ${path}`);
    }
  }
  return problems;
}

/** Reads a repository file (a directory reads as ''); null when there is none. */
function readRepoFile(path: string): string | null {
  const absolute = resolve(root, path);
  if (!absolute.startsWith(root) || !existsSync(absolute)) return null;
  try {
    return readFileSync(absolute, 'utf8');
  } catch {
    return ''; // a directory
  }
}

const markdownFiles = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

describe('the checker', () => {
  it('reports a missing file, a missing anchor and an anchor into a non-markdown file, and nothing else', () => {
    const files: Record<string, string> = {
      'docs/a.md': '# A page\n\n## Set up `npm`, then run\n\n## Set up `npm`, then run\n',
      LICENSE: 'text',
    };
    const markdown = [
      '[ok](docs/a.md) [ok](docs/a.md#a-page) [ok](docs/a.md#set-up-npm-then-run) [ok](docs/a.md#set-up-npm-then-run-1)',
      '[ok](LICENSE) [ok](https://example.com/x.md) [ok](#local) ',
      '# Local',
      '[gone](docs/b.md) [no anchor](docs/a.md#set-up) [bad](LICENSE#x)',
      '```',
      '[in a code block](nowhere.md)',
      '```',
      '`[inline code](nowhere.md)`',
      '[ref]: docs/missing.md',
    ].join('\n');
    files['README.md'] = markdown;
    const read = (path: string) => files[path] ?? null;
    expect(brokenLinks('README.md', markdown, read)).toEqual([
      'README.md:4 docs/b.md: no file docs/b.md',
      'README.md:4 docs/a.md#set-up: no heading #set-up in docs/a.md',
      'README.md:4 LICENSE#x: an anchor into a file that is not markdown',
      'README.md:9 docs/missing.md: no file docs/missing.md',
    ]);
  });

  it('resolves links relative to the file that holds them', () => {
    const files: Record<string, string> = { 'README.md': '# Quick start\n', 'docs/b.md': '# B\n' };
    const read = (path: string) => files[path] ?? null;
    expect(brokenLinks('docs/a.md', '[up](../README.md#quick-start) [here](b.md#b) [wrong](docs/b.md)', read)).toEqual([
      'docs/a.md:1 docs/b.md: no file docs/docs/b.md',
    ]);
  });
});

describe('README.md and docs/', () => {
  it('link only to files and headings that exist', () => {
    expect(markdownFiles).toContain('docs/registry.md');
    const problems = markdownFiles.flatMap((file) => brokenLinks(file, readRepoFile(file) ?? '', readRepoFile));
    expect(problems).toEqual([]);
  });

  it('name in code spans only repository files that exist (docs/..., LICENSE, scripts/...)', () => {
    const problems: string[] = [];
    for (const file of markdownFiles) {
      const text = readRepoFile(file) ?? '';
      for (const match of text.matchAll(
        /`((?:docs|scripts|src|test|prisma|bench)\/[\w./-]+\.(?:md|ts|mjs|json|graphql))`/g,
      )) {
        if (match[1] && readRepoFile(match[1]) === null) problems.push(`${file}: ${match[1]}`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('the CLI help and the source', () => {
  it('name only markdown files that the repository ships, by their path', () => {
    const problems: string[] = [];
    const visit = (dir: string) => {
      for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
        const path = `${dir}/${entry.name}`;
        if (entry.isDirectory()) {
          if (path !== 'src/generated') visit(path);
        } else if (entry.name.endsWith('.ts')) {
          const text = readFileSync(join(root, path), 'utf8');
          for (const match of text.matchAll(/[\w./-]*\.md\b/g)) {
            const named = match[0];
            if (readRepoFile(named) === null) problems.push(`${path}: ${named}`);
          }
        }
      }
    };
    visit('src');
    expect(relative(root, join(root, 'src'))).toBe('src');
    expect(problems).toEqual([]);
  });
});
