/**
 * The repository's prose holds together: code and docs link to sections that exist, cite the rules in
 * `docs/` rather than a design document outside the repository, and speak of rules, not of the issues that
 * brought them (docs/architecture.md#reading-order says how the docs are organized).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { comments } from './comments.js';
import { anchors, markdownLinks, proseLines, slug } from './markdown.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Where the checks look: the code, its tests, benchmarks, examples, the docs and the README. */
const SCANNED = ['src', 'test', 'bench', 'examples', 'docs', 'README.md', 'eslint.config.js'];
const CODE = /\.(?:ts|mts|cts|js|mjs|cjs)$/;
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'data', 'coverage']);

/** A citation of the design notes that used to live outside the repository (spelled so this file is not one). */
const DESIGN_CITATION = new RegExp(`\\b${'DES'}IGN\\b`);
/**
 * An issue number: the word issue (any case, singular or plural), then a number, with or without `#`. A status
 * code or a `Retry-After` value never matches.
 */
const ISSUE_NUMBER = /\bissues?\s+#?\d+/i;
/** A repository-relative mention of a docs page, with or without an anchor (`docs/<page>.md#<heading>`). */
const DOCS_MENTION = /(?<![\w./-])docs\/[\w./-]+?\.md(?:#[\w-]+)?/g;

function walk(path: string, out: string[]): void {
  const full = join(ROOT, path);
  if (!existsSync(full)) return;
  if (statSync(full).isFile()) {
    out.push(path);
    return;
  }
  for (const entry of readdirSync(full, { withFileTypes: true })) {
    if (SKIPPED_DIRS.has(entry.name)) continue; // a folder, or a link to one (a worktree links its node_modules)
    walk(join(path, entry.name), out);
  }
}

const files = ((): string[] => {
  const out: string[] = [];
  for (const path of SCANNED) walk(path, out);
  return out.filter((f) => CODE.test(f) || f.endsWith('.md')).sort();
})();

const text = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

const anchorCache = new Map<string, Set<string>>();
function anchorsOf(file: string): Set<string> {
  let found = anchorCache.get(file);
  if (found === undefined) {
    found = anchors(text(file));
    anchorCache.set(file, found);
  }
  return found;
}

/**
 * Why the link `target`, written in `from`, is broken (relative to `base`, a repository-relative folder), or
 * undefined when it resolves: the file must exist and, for a Markdown page, the anchor must be a heading's.
 */
function brokenLink(target: string, from: string, base: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto:, …
  const [path = '', anchor] = target.split('#', 2);
  const file = path === '' ? from : relative(ROOT, resolve(ROOT, base, decodeURIComponent(path)));
  if (file.startsWith('..') || !existsSync(join(ROOT, file))) return `${target}: no file ${file}`;
  if (anchor === undefined || anchor === '' || !file.endsWith('.md')) return undefined;
  if (!anchorsOf(file).has(decodeURIComponent(anchor).toLowerCase())) {
    return `${target}: ${file} has no heading with anchor #${anchor}`;
  }
  return undefined;
}

describe('the slugs and comments the checks rely on', () => {
  it('makes GitHub anchors: punctuation dropped, underscores kept, spaces hyphenated, repeats numbered', () => {
    expect(slug('Defaults (`UPSTREAM_DEFAULTS`)')).toBe('defaults-upstream_defaults');
    expect(slug('Inbound idempotency (`Idempotency-Key`)')).toBe('inbound-idempotency-idempotency-key');
    expect(slug('`checkout` and unknown outcomes')).toBe('checkout-and-unknown-outcomes');
    expect(slug('Every fault × tool: what the model is told')).toBe(
      'every-fault--tool-what-the-model-is-told',
    );
    expect(slug('See [the docs](x.md) now')).toBe('see-the-docs-now');
    const page = '# A\n## Example\n```sh\n# not a heading\n```\n## Example\n### Example ##\n';
    expect([...anchors(page)]).toEqual(['a', 'example', 'example-1', 'example-2']);
  });

  it('finds comments, not comment-like text in strings, templates or regular expressions', () => {
    const source = [
      "const a = '// not one'; // one",
      'const b = `/* not one ${a /* two */} */`;',
      'const c = /\\/\\/ not one/;',
      '/** three */',
      'function f() {',
      '  // four, before a closing brace',
      '}',
    ].join('\n');
    expect(comments(source).map((c) => c.text)).toEqual([
      '// one',
      '/* two */',
      '/** three */',
      '// four, before a closing brace',
    ]);
  });

  it('tells an issue number from a status or a header', () => {
    expect(ISSUE_NUMBER.test('// issue 28, finding 5')).toBe(true);
    expect(ISSUE_NUMBER.test('(Issue #7)')).toBe(true);
    expect(ISSUE_NUMBER.test('a 429 with Retry-After: 20, issues no token')).toBe(false);
    expect(ISSUE_NUMBER.test('see the issue tracker')).toBe(false);
  });
});

describe('the prose of the repository', () => {
  it('scans the code, tests, benchmarks, examples and docs', () => {
    for (const expected of ['README.md', 'docs/architecture.md', 'src/core/errors.ts', 'eslint.config.js']) {
      expect(files).toContain(expected);
    }
  });

  it('cites docs/, never the design notes that are not in the repository', () => {
    const found: string[] = [];
    for (const file of files) {
      text(file)
        .split('\n')
        .forEach((line, i) => {
          if (DESIGN_CITATION.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('speaks of rules, not issue numbers, in comments and docs', () => {
    const found: string[] = [];
    for (const file of files) {
      const source = text(file);
      const lines = file.endsWith('.md')
        ? proseLines(source)
        : comments(source).flatMap((c) => c.text.split('\n').map((t, i) => ({ line: c.line + i, text: t })));
      for (const { line, text: t } of lines) {
        if (ISSUE_NUMBER.test(t)) found.push(`${file}:${line}: ${t.trim()}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('links only to docs files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of files) {
      const source = text(file);
      if (file.endsWith('.md')) {
        for (const { line, target } of markdownLinks(source)) {
          const why = brokenLink(target, file, dirname(file));
          if (why !== undefined) broken.push(`${file}:${line}: ${why}`);
        }
      }
      source.split('\n').forEach((line, i) => {
        for (const m of line.matchAll(DOCS_MENTION)) {
          const why = brokenLink(m[0], file, '.');
          if (why !== undefined) broken.push(`${file}:${i + 1}: ${why}`);
        }
      });
    }
    expect(broken).toEqual([]);
  });
});
