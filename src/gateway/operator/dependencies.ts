/**
 * Notices about dependencies: a breaker opening, reopening, closing or isolated (every transition but
 * open → half-open, which only lets a trial through), and a dependency timing out repeatedly.
 */
import type { Clock, Disposable } from '../../core/index.js';
import type { CircuitBreakerPolicy, CircuitStateChange } from '../../policy/index.js';
import type { Upstream } from '../../upstream/index.js';
import { duration, type Notice, type NoticeSink } from './lines.js';
import { Pacer, TrailingCount } from './pace.js';

/** The limits of the dependency notices. */
export const DEPENDENCY_NOTICES = {
  /** Breaker lines per breaker per interval; more are summed up at its end with the state then. */
  breakerBurst: 4,
  /** Timeouts of one dependency within `intervalMs` that make it "timing out repeatedly". */
  repeatedTimeouts: 3,
  /** The interval of both: at most one timeout line per dependency in it (ms). */
  intervalMs: 60_000,
} as const;

/** A breaker and what its lines call it (an upstream's name, or the breaker's own). */
export interface WatchedBreaker {
  readonly label: string;
  readonly breaker: CircuitBreakerPolicy;
}

/** What the timeout notices read of an upstream. */
export type WatchedUpstream = Pick<Upstream, 'name' | 'policies'>;

/** Prints each breaker's transitions, at most {@link DEPENDENCY_NOTICES.breakerBurst} per breaker per minute. */
export function watchBreakers(
  breakers: readonly WatchedBreaker[],
  sink: NoticeSink,
  clock: Clock,
): Disposable {
  const byLabel = new Map(breakers.map((b) => [b.label, b.breaker]));
  const pacer = new Pacer({
    clock,
    burst: DEPENDENCY_NOTICES.breakerBurst,
    intervalMs: DEPENDENCY_NOTICES.intervalMs,
    summary: (label, held) => {
      const state = byLabel.get(label)?.state().state ?? 'unknown';
      sink({
        event: 'breaker_changes_held',
        level: 'warn',
        text: `breaker ${label}: ${held} more state ${held === 1 ? 'change' : 'changes'} within ${duration(DEPENDENCY_NOTICES.intervalMs)} not shown; now ${state}`,
        fields: { breaker: label, held, state },
      });
    },
  });
  const subscriptions = breakers.map(({ label, breaker }) =>
    breaker.onStateChange((change) => {
      const notice = breakerNotice(label, change, breaker);
      if (notice !== undefined && pacer.allow(label)) sink(notice);
    }),
  );
  return {
    dispose() {
      for (const s of subscriptions) s.dispose();
      pacer.dispose();
    },
  };
}

/** The line of one transition, or undefined for open → half-open. */
export function breakerNotice(
  label: string,
  change: CircuitStateChange,
  breaker: CircuitBreakerPolicy,
): Notice | undefined {
  const { from, to, reason } = change;
  const fields = { breaker: label, from, to, reason };
  const elsewhere = reason === 'restored' ? ' in another process (shared state)' : '';
  if (to === 'closed') {
    const how =
      reason === 'trials_succeeded'
        ? `closed: the trial ${breaker.successesToClose === 1 ? 'call' : 'calls'} succeeded`
        : reason === 'reset'
          ? 'reset by hand'
          : `closed${elsewhere}`;
    return {
      event: 'breaker_closed',
      level: 'info',
      text: `breaker ${label} ${how}; calls flow again`,
      fields,
    };
  }
  if (to === 'isolated') {
    return {
      event: 'breaker_isolated',
      level: 'warn',
      text: `breaker ${label} isolated ${reason === 'restored' ? elsewhere.trim() : 'by hand'}; calls fail fast until it is reset`,
      fields,
    };
  }
  if (to !== 'open') return undefined;
  const status = breaker.state();
  // A snapshot restored late may have little (or none) of its open period left.
  const openMs =
    status.halfOpenAt === null ? breaker.openDurationMs : Math.max(0, status.halfOpenAt - change.at);
  const next = `calls fail fast for ${duration(openMs)}, then a trial call`;
  let text: string;
  if (reason === 'restored') text = `breaker ${label} opened${elsewhere}; ${next}`;
  else if (from === 'half-open') {
    const times = status.consecutiveOpens;
    text = `breaker ${label} reopened: ${TRIAL_ENDS[reason] ?? reason}; ${next} (opened ${times} times in a row)`;
  } else text = `breaker ${label} opened ${openCause(reason, status.window)}; ${next}`;
  return { event: 'breaker_opened', level: 'warn', text, fields: { ...fields, open_ms: openMs } };
}

const TRIAL_ENDS: Readonly<Record<string, string>> = {
  trial_failed: 'the trial call failed',
  trial_slow: 'the trial call was slow',
  trial_timeout: 'the trial call did not end in time',
};

function openCause(reason: string, window: { calls: number; failures: number; slow: number } | null): string {
  if (window !== null) {
    if (reason === 'consecutive_failures') return `after ${window.failures} failures in a row`;
    if (reason === 'failure_rate') return `after ${window.failures} of ${window.calls} calls failed`;
    if (reason === 'slow_call_rate') return `after ${window.slow} of ${window.calls} calls were slow`;
  }
  return `(${reason})`;
}

/**
 * Prints a dependency "timing out repeatedly" when {@link DEPENDENCY_NOTICES.repeatedTimeouts} of its calls
 * were cut off within a minute, then at most once a minute while it goes on. Counted: attempts cut off by the
 * dependency's own limit (`timeout`) or by the caller's deadline while waiting for it; not calls refused
 * before they started because the deadline had already run out (not the dependency's doing).
 */
export function watchTimeouts(
  upstreams: readonly WatchedUpstream[],
  sink: NoticeSink,
  clock: Clock,
): Disposable {
  const { intervalMs, repeatedTimeouts } = DEPENDENCY_NOTICES;
  const pacer = new Pacer({ clock, burst: 1, intervalMs });
  const subscriptions = upstreams.map((upstream) => {
    const recent = new TrailingCount(intervalMs);
    const dependency = upstream.name;
    const breaker = upstream.policies.breaker !== undefined;
    return upstream.policies.timeout.onTimeout((event) => {
      if (event.afterMs <= 0) return;
      const now = clock.now();
      recent.add(now);
      const count = recent.count(now);
      if (count < repeatedTimeouts || !pacer.allow(dependency)) return;
      sink({
        event: 'dependency_timeouts',
        level: 'warn',
        text:
          `dependency ${dependency} timing out repeatedly: ${count} timeouts within ${duration(intervalMs)} ` +
          `(the last cut off after ${duration(event.afterMs)}); callers get ${event.code} errors` +
          (breaker ? ', and its breaker opens if they go on' : ''),
        fields: {
          dependency,
          timeouts: count,
          window_ms: intervalMs,
          after_ms: event.afterMs,
          code: event.code,
        },
      });
    });
  });
  return {
    dispose() {
      for (const s of subscriptions) s.dispose();
      pacer.dispose();
    },
  };
}
