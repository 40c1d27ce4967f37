/**
 * A small throughput harness: each case is an async function run sequentially in a loop; cases are
 * interleaved round by round so machine noise hits them alike, and the median of the rounds is reported.
 * Results are only ever compared as ratios between cases measured in the same process run.
 *
 * No forced garbage collection between rounds: a forced full collection throws away the code and type
 * feedback V8 had built, so the next round measures re-optimisation instead of the steady state (seen
 * here: a 10x swing for a pipeline of small functions). Each case pays for its own garbage as it goes.
 */
import { median } from './support.js';

export interface BenchCase {
  name: string;
  /** One call; awaited. */
  run: () => Promise<unknown>;
}

export interface BenchResult {
  name: string;
  /** Median over the rounds. */
  opsPerSec: number;
  nsPerOp: number;
  /** Ops per second of each round, in round order (rounds of different cases are interleaved). */
  rounds: number[];
}

export interface BenchOptions {
  /** Rounds per case (default 15); the median is reported. */
  rounds?: number;
  /** Wall time per case per round in ms (default 200). */
  roundMs?: number;
  /** Warm-up time per case in ms (default 300). */
  warmupMs?: number;
}

type Runner = (fn: () => Promise<unknown>, ms: number) => Promise<{ ops: number; elapsedNs: bigint }>;

/**
 * A fresh copy of the measuring loop per case, so the `fn()` call site inside it only ever sees one case
 * (a shared loop would turn megamorphic and make every case pay for the others).
 */
function makeRunner(): Runner {
  return new Function(
    `return async function runFor(fn, ms) {
      const start = process.hrtime.bigint();
      const budget = BigInt(ms) * 1000000n;
      let ops = 0;
      for (;;) {
        for (let i = 0; i < 1000; i++) await fn();
        ops += 1000;
        const elapsedNs = process.hrtime.bigint() - start;
        if (elapsedNs >= budget) return { ops, elapsedNs };
      }
    };`,
  )() as Runner;
}

export async function bench(cases: BenchCase[], options: BenchOptions = {}): Promise<BenchResult[]> {
  const rounds = options.rounds ?? 15;
  const roundMs = options.roundMs ?? 200;
  const runners = new Map(cases.map((c) => [c.name, makeRunner()]));
  for (const c of cases) await runners.get(c.name)!(c.run, options.warmupMs ?? 300);
  const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      const { ops, elapsedNs } = await runners.get(c.name)!(c.run, roundMs);
      samples.get(c.name)!.push((ops * 1e9) / Number(elapsedNs));
    }
  }
  return cases.map((c) => {
    const rounds = samples.get(c.name)!;
    const opsPerSec = median(rounds);
    return { name: c.name, opsPerSec, nsPerOp: 1e9 / opsPerSec, rounds };
  });
}

export function printTable(title: string, results: BenchResult[]): void {
  console.log(`\n${title}`);
  const width = Math.max(...results.map((r) => r.name.length));
  for (const r of results) {
    const ops = Math.round(r.opsPerSec).toLocaleString('en-US').padStart(12);
    console.log(`  ${r.name.padEnd(width)}  ${ops} ops/s  ${r.nsPerOp.toFixed(0).padStart(7)} ns/op`);
  }
}

/**
 * How many times faster `a` is than `b`: the median of the per-round ratios. Each round measures both
 * back to back, so pairing them cancels most of the drift a shared machine has between rounds.
 * Printed with the lowest and highest round ratio.
 */
export function ratio(a: BenchResult, b: BenchResult): string {
  const ratios = a.rounds.map((ops, i) => ops / b.rounds[i]!);
  const sorted = [...ratios].sort((x, y) => x - y);
  return `${median(ratios).toFixed(2)}x (rounds ${sorted[0]!.toFixed(2)}-${sorted.at(-1)!.toFixed(2)})`;
}
