import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository's root. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Every subpath of package.json `exports` that is an entry, as `{ subpath, file }`: `'.'` is `index`,
 * `'./jobs'` is `jobs`, and `file` is the source behind it (`src/entries/<name>.ts`).
 */
export function packageEntries(): { subpath: string; name: string; file: string }[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { import: string }>;
  };
  return Object.entries(pkg.exports)
    .filter(([, target]) => typeof target !== 'string')
    .map(([subpath, target]) => {
      const built = (target as { import: string }).import;
      const name = built.replace(/^\.\/dist\/entries\//, '').replace(/\.js$/, '');
      return { subpath, name, file: join(ROOT, 'src/entries', `${name}.ts`) };
    });
}

/**
 * The names each file exports, sorted, a type-only export written `type Name`: what a user can import
 * from the entry.
 */
export function exportedNames(files: string[]): Map<string, string[]> {
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const lists = new Map<string, string[]>();
  for (const file of files) {
    const source = program.getSourceFile(file);
    const module = source === undefined ? undefined : checker.getSymbolAtLocation(source);
    if (module === undefined) throw new Error(`no module for ${file}`);
    const names = checker.getExportsOfModule(module).map((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return target.flags & ts.SymbolFlags.Value ? symbol.name : `type ${symbol.name}`;
    });
    lists.set(
      file,
      names.sort((a, b) => a.replace(/^type /, '').localeCompare(b.replace(/^type /, ''), 'en')),
    );
  }
  return lists;
}
