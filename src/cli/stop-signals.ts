/**
 * How `breakwater serve` and `breakwater worker` hear SIGINT and SIGTERM: the first asks for a graceful stop;
 * copies of it that arrive within {@link STOP_SIGNALS_DEFAULTS.sameRequestMs} are the same request; a signal
 * after that window means "exit now".
 *
 * Why a window: a Ctrl-C in a terminal reaches every process of the foreground process group, so under
 * `npm start` the gateway gets it from the terminal and once more from npm, which forwards every SIGINT and
 * SIGTERM it receives to its child (`@npmcli/run-script`'s signal manager). Counting the forwarded copy as a
 * second Ctrl-C made the gateway exit at once about half the time (when the kernel did not merge the two),
 * leaving its running jobs `in_progress` until their lease lapsed and costing them an attempt.
 */
import { systemClock, type Clock } from '../core/index.js';
import { EXIT } from './context.js';

/** Defaults of {@link StopSignalsOptions}. */
export const STOP_SIGNALS_DEFAULTS = {
  /**
   * Signals within this many ms of the first are the same request (ms). A forwarded copy arrives within a
   * few ms, but it is read on the event loop, so a loop stalled by a GC pause or a synchronous write delays
   * it: 500 ms leaves that room, and is still shorter than a person takes to see the "shutting down" line and
   * press Ctrl-C again on purpose.
   */
  sameRequestMs: 500,
} as const;

/** The signals that stop the process. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** A stop signal's name. */
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** What {@link watchStopSignals} listens on: `process`, or a test's emitter. */
export interface SignalSource {
  on(signal: StopSignal, listener: (signal: StopSignal) => void): unknown;
  removeListener(signal: StopSignal, listener: (signal: StopSignal) => void): unknown;
}

/** Options of {@link watchStopSignals}. */
export interface StopSignalsOptions {
  /** Where the process's lines go (`breakwater: SIGINT received, …`). */
  out: (line: string) => void;
  /** Measures the window (default the system clock). */
  clock?: Clock;
  /** See {@link STOP_SIGNALS_DEFAULTS.sameRequestMs}; integer >= 0 (default 500). */
  sameRequestMs?: number;
  /** Default `process`. */
  source?: SignalSource;
  /** Ends the process at once (default `process.exit`); called with {@link EXIT.failed}. */
  exit?: (code: number) => void;
}

/** Stop signals being watched. */
export interface StopSignals {
  /** Resolves with the first signal's name. */
  readonly requested: Promise<StopSignal>;
  /** Stops listening (the process's default handling applies again: a SIGINT then ends it). */
  dispose(): void;
}

/**
 * Listens for SIGINT and SIGTERM until disposed. The first resolves {@link StopSignals.requested} and prints
 * that the process is shutting down; others within `sameRequestMs` of it are ignored; the next one after
 * that prints a line and exits at once with code 1 ({@link EXIT.failed}), leaving running jobs to be
 * reclaimed when their lease lapses. The listeners stay installed while the shutdown runs and after it, so
 * a process that takes long to end still exits at the next signal.
 * @throws RangeError when `sameRequestMs` is not an integer >= 0.
 */
export function watchStopSignals(options: StopSignalsOptions): StopSignals {
  const clock = options.clock ?? systemClock;
  const source: SignalSource = options.source ?? process;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const windowMs = options.sameRequestMs ?? STOP_SIGNALS_DEFAULTS.sameRequestMs;
  if (!Number.isInteger(windowMs) || windowMs < 0) {
    throw new RangeError(`watchStopSignals: sameRequestMs must be an integer >= 0, got ${String(windowMs)}`);
  }
  let firstAt: number | undefined;
  let resolve!: (signal: StopSignal) => void;
  const requested = new Promise<StopSignal>((r) => (resolve = r));
  const onSignal = (signal: StopSignal): void => {
    const now = clock.now();
    if (firstAt === undefined) {
      firstAt = now;
      options.out(`breakwater: ${signal} received, shutting down (send it again to exit at once)`);
      resolve(signal);
      return;
    }
    if (now - firstAt < windowMs) return;
    options.out(
      `breakwater: ${signal} received again, exiting at once (running jobs are taken over when their lease lapses)`,
    );
    exit(EXIT.failed);
  };
  for (const signal of STOP_SIGNALS) source.on(signal, onSignal);
  return {
    requested,
    dispose() {
      for (const signal of STOP_SIGNALS) source.removeListener(signal, onSignal);
    },
  };
}
