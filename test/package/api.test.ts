/**
 * The public API, entry by entry: the names each package entry exports must equal the list checked in under
 * `test/package/api/<entry>.txt`, so that a name made public (or withdrawn) is a decision seen in review.
 * After a deliberate change: `UPDATE_API=1 npx vitest run test/package/api.test.ts`, then commit the lists.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, exportedNames, packageEntries } from './entries.js';

const LISTS = join(ROOT, 'test/package/api');
const UPDATE = process.env.UPDATE_API === '1';
const HOW = 'if the change is meant, run `UPDATE_API=1 npx vitest run test/package/api.test.ts` and commit';

const entries = packageEntries();
const names = exportedNames(entries.map((entry) => entry.file));

describe('the names each entry exports', () => {
  it('package.json names an entry for each file of src/entries/, and the reverse', () => {
    const files = readdirSync(join(ROOT, 'src/entries')).filter((file) => file.endsWith('.ts'));
    expect(entries.map((entry) => `${entry.name}.ts`).sort()).toEqual(files.sort());
  });

  for (const entry of entries) {
    it(`${entry.subpath === '.' ? 'breakwater' : `breakwater/${entry.subpath.slice(2)}`} (${entry.name}.txt)`, () => {
      const actual = names.get(entry.file)!;
      const file = join(LISTS, `${entry.name}.txt`);
      if (UPDATE) {
        mkdirSync(LISTS, { recursive: true });
        writeFileSync(file, `${actual.join('\n')}\n`);
        return;
      }
      const expected = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
      const added = actual.filter((name) => !expected.includes(name));
      const removed = expected.filter((name) => !actual.includes(name));
      expect(
        { added, removed },
        `the API of ${entry.subpath} changed (added: ${added.join(', ') || 'none'}; removed: ${removed.join(', ') || 'none'}); ${HOW}`,
      ).toEqual({ added: [], removed: [] });
      expect(actual, `the order of ${entry.name}.txt is stale; ${HOW}`).toEqual(expected);
    });
  }
});
