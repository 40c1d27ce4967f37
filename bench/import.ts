/**
 * `npm run bench -- import`: what importing the package root costs a process, against cockatiel and opossum
 * (what users of a policy library compare). Each import runs in a fresh `node` (no tsx) loading the built
 * entry from `dist/` (`npm run bench` builds it first) or the peer from node_modules, interleaved round by
 * round; the table gives medians of `--runs=N` (default 9):
 * - time: wall ms of the `await import(…)` alone;
 * - rss: the process's resident set after the import (MB), and what the import added to it;
 * - heap: V8 heap in use after the import and a full GC (MB), and what the import added to it.
 * For reference it also times `breakwater/jobs`, `breakwater/gateway` (everything, what the single root
 * entry used to load), and `zod` against `zod/mini`.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { intArg, median } from './support.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const dist = (entry: string): string => pathToFileURL(`${ROOT}dist/entries/${entry}.js`).href;

/** The peers live in bench/node_modules (bench/package.json); everything else resolves from the root. */
const PEERS = new Set(['cockatiel', 'opossum']);

const TARGETS: { name: string; specifier: string }[] = [
  { name: 'breakwater', specifier: dist('index') },
  { name: 'cockatiel', specifier: 'cockatiel' },
  { name: 'opossum', specifier: 'opossum' },
  { name: 'breakwater/jobs', specifier: dist('jobs') },
  { name: 'breakwater/gateway', specifier: dist('gateway') },
  { name: 'zod', specifier: 'zod' },
  { name: 'zod/mini', specifier: 'zod/mini' },
];

interface Sample {
  ms: number;
  rss: number;
  rssAdded: number;
  heap: number;
  heapAdded: number;
}

/** One fresh process importing `specifier`. */
async function sample(specifier: string): Promise<Sample> {
  const script = `
    globalThis.gc();
    const before = process.memoryUsage();
    const start = performance.now();
    await import(${JSON.stringify(specifier)});
    const ms = performance.now() - start;
    globalThis.gc();
    const after = process.memoryUsage();
    console.log(JSON.stringify({
      ms, rss: after.rss, rssAdded: after.rss - before.rss,
      heap: after.heapUsed, heapAdded: after.heapUsed - before.heapUsed,
    }));`;
  const { stdout } = await run(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
    cwd: PEERS.has(specifier) ? `${ROOT}bench` : ROOT,
  });
  return JSON.parse(stdout) as Sample;
}

const MB = 1024 * 1024;

export async function main(): Promise<void> {
  const runs = intArg('runs', 9);
  const samples = new Map<string, Sample[]>(TARGETS.map((target) => [target.name, []]));
  for (let round = 0; round < runs; round += 1) {
    for (const target of TARGETS) samples.get(target.name)!.push(await sample(target.specifier));
  }
  const med = (name: string, key: keyof Sample): number => median(samples.get(name)!.map((s) => s[key]));

  console.log(`\nimport cost, median of ${runs} fresh processes (node ${process.version})`);
  const width = Math.max(...TARGETS.map((target) => target.name.length));
  for (const { name } of TARGETS) {
    console.log(
      `  ${name.padEnd(width)}  ${med(name, 'ms').toFixed(1).padStart(7)} ms` +
        `  rss ${(med(name, 'rss') / MB).toFixed(1).padStart(6)} MB (+${(med(name, 'rssAdded') / MB).toFixed(1)})` +
        `  heap ${(med(name, 'heap') / MB).toFixed(1).padStart(5)} MB (+${(med(name, 'heapAdded') / MB).toFixed(1)})`,
    );
  }
  for (const peer of ['cockatiel', 'opossum']) {
    const ratio = (key: keyof Sample): string => (med('breakwater', key) / med(peer, key)).toFixed(2);
    console.log(
      `  breakwater / ${peer}: time ${ratio('ms')}x, rss ${ratio('rss')}x (added ${ratio('rssAdded')}x),` +
        ` heap ${ratio('heap')}x (added ${ratio('heapAdded')}x)`,
    );
  }
}
