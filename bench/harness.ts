/**
 * A small throughput harness: each case is an async function run sequentially in a loop; cases are
 * interleaved round by round so machine noise hits them alike, and the median of the rounds is reported.
 * Results are only ever compared as ratios between cases measured in the same process run.
 */
export interface BenchCase {
  name: string;
  /** One call; awaited. */
  run: () => Promise<unknown>;
}

export interface BenchResult {
  name: string;
  opsPerSec: number;
  nsPerOp: number;
}

export interface BenchOptions {
  /** Rounds per case (default 9); the median is reported. */
  rounds?: number;
  /** Wall time per case per round in ms (default 200). */
  roundMs?: number;
  /** Warm-up time per case in ms (default 300). */
  warmupMs?: number;
}

/** With `--expose-gc`, collects before each measurement so one case's garbage is not paid for by the next. */
const collect = (globalThis as { gc?: () => void }).gc ?? ((): void => undefined);

type Runner = (fn: () => Promise<unknown>, ms: number) => Promise<{ ops: number; elapsedNs: bigint }>;

/**
 * A fresh copy of the measuring loop per case, so the `fn()` call site inside it only ever sees one case
 * (a shared loop would turn megamorphic and make every case pay for the others).
 */
function makeRunner(): Runner {
  return new Function(
    'collect',
    `return async function runFor(fn, ms) {
      collect();
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
  )(collect) as Runner;
}

export async function bench(cases: BenchCase[], options: BenchOptions = {}): Promise<BenchResult[]> {
  const rounds = options.rounds ?? 9;
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
    const sorted = samples.get(c.name)!.sort((a, b) => a - b);
    const opsPerSec = sorted[Math.floor(sorted.length / 2)]!;
    return { name: c.name, opsPerSec, nsPerOp: 1e9 / opsPerSec };
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

export function ratio(a: BenchResult, b: BenchResult): string {
  return `${(a.opsPerSec / b.opsPerSec).toFixed(2)}x`;
}
