/**
 * Helpers the benchmarks share: integer arguments, the median of rounds, a reachability probe, a one-shot
 * PostgreSQL client, the CPU time of a server process.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { constants, monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import pg from 'pg';

/** The item whose `key` is the median of `items` (for an even count, the upper of the two middle ones). */
export function middle<T>(items: readonly T[], key: (item: T) => number): T {
  return [...items].sort((a, b) => key(a) - key(b))[Math.floor(items.length / 2)]!;
}

/** The median of `values` (for an even count, the upper of the two middle ones). */
export function median(values: readonly number[]): number {
  return middle(values, (value) => value);
}

/** `--name=N` from the command line: an integer >= `min` (default 1), or `fallback` when absent. */
export function intArg(name: string, fallback: number, min = 1): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  if (arg === undefined) return fallback;
  const value = Number(arg.slice(name.length + 3));
  if (!Number.isInteger(value) || value < min) throw new RangeError(`--${name} must be an integer >= ${min}`);
  return value;
}

/** Resolves with undefined when a TCP connection opens within a second, or with the reason it did not. */
export function reachable(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (reason?: string) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(1000, () => done(`${host}:${port} did not answer within 1 s`));
    socket.once('connect', () => done());
    socket.once('error', (error) => done(`${host}:${port} unreachable (${error.message})`));
  });
}

/** Runs `fn` with a fresh client of the database at `url`, closed afterwards. */
export async function withPg<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * CPU time (ms, user + system) used so far by the processes whose command name is `name` (`postgres`,
 * `redis-server`), read from Linux's /proc; undefined elsewhere. Clock ticks are 10 ms, so compare totals
 * over seconds, not single calls.
 */
export function serverCpuMs(name: string): number | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  let ticks = 0;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // the process ended meanwhile
    }
    // pid (comm) state ppid … utime(14) stime(15): comm may hold spaces, so split after its ')'.
    const close = stat.lastIndexOf(')');
    if (stat.slice(stat.indexOf('(') + 1, close) !== name) continue;
    const fields = stat.slice(close + 2).split(' ');
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** `PerformanceEntry.detail.kind` of a GC entry (`perf_hooks.constants.NODE_PERFORMANCE_GC_*`), named. */
const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};

/** Linux's USER_HZ: 100 on every mainstream kernel configuration. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * For a server the bench runs in a child process: what it saw, printed on stderr when the bench stops it
 * (SIGTERM, then it exits): its event-loop delay (a stall delays every request it holds), its CPU as a share
 * of one core, and its longest GC pauses. SIGUSR2 from the load side marks the start of the measured run:
 * what came before (start-up, warm-up) is dropped.
 */
export function reportServerStats(kind: string): void {
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  const pauses: { ms: number; kind: string }[] = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = ((entry as { detail?: unknown }).detail as { kind?: number } | null)?.kind;
      pauses.push({ ms: entry.duration, kind: kind === undefined ? '?' : (GC_KINDS[kind] ?? String(kind)) });
    }
  }).observe({ entryTypes: ['gc'] });
  let cpuAtStart = process.cpuUsage();
  let startedAt = performance.now();
  process.on('SIGUSR2', () => {
    cpuAtStart = process.cpuUsage();
    startedAt = performance.now();
    loopDelay.reset();
    pauses.length = 0;
  });
  process.once('SIGTERM', () => {
    const cpu = process.cpuUsage(cpuAtStart);
    const cpuShare = (cpu.user + cpu.system) / 1000 / (performance.now() - startedAt);
    pauses.sort((a, b) => b.ms - a.ms);
    const total = pauses.reduce((sum, p) => sum + p.ms, 0);
    process.stderr.write(
      `  [${kind} server] event-loop delay p50 ${(loopDelay.percentile(50) / 1e6).toFixed(1)} ms,` +
        ` p99 ${(loopDelay.percentile(99) / 1e6).toFixed(1)} ms; CPU ${(cpuShare * 100).toFixed(0)} % of a core;` +
        ` ${pauses.length} GC pauses (${total.toFixed(0)} ms in all), longest ${pauses
          .slice(0, 3)
          .map((p) => `${p.ms.toFixed(1)} (${p.kind})`)
          .join(', ')} ms\n`,
    );
    process.exit(0);
  });
}
