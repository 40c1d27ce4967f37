import {
  EventSource,
  defineOptions,
  o,
  type Clock,
  type Disposable,
  type TimerHandle,
} from '../core/index.js';
import {
  batchSizeOption,
  retentionOption,
  type PruneReport,
  type RetentionPolicy,
  type StoreSize,
} from './retention.js';
import type { Store } from './store.js';
import { vacuumOption, type VacuumMode } from './vacuum.js';

/** What a {@link Pruner} prunes and measures: a store's retention facet, its counters and its watches. */
export type PrunedStore = Pick<Store, 'retention' | 'counters' | 'pruneWatches'>;

/**
 * Options of {@link startPruner}; checked at start (an `OptionsError`, owner `startPruner`, names every bad
 * option).
 */
export interface PrunerOptions {
  store: PrunedStore;
  /** Times the rounds and measures the ages (default the system clock; the gateway passes its own). */
  clock?: Clock;
  /** Time between two rounds, ms (default 300 000: 5 minutes; > 0), each wait varied by `jitter`. */
  everyMs?: number;
  /**
   * How much each wait varies, as a fraction of `everyMs` either way (default 0.1: 4.5 to 5.5 minutes), so
   * the gateways sharing one PostgreSQL do not all prune at the same moment. 0 to 1.
   */
  jitter?: number;
  /** Retentions differing from the defaults (`RETENTION_DEFAULTS`). */
  retention?: Partial<RetentionPolicy>;
  /** Rows per batch (default 500; see `PruneOptions.batchSize`). */
  batchSize?: number;
  /**
   * After a prune that removed rows, what `store.retention.vacuum` makes reusable (default `auto`: on
   * PostgreSQL, the tables autovacuum does not look after; see `VacuumMode`).
   */
  vacuum?: VacuumMode;
  /** A number in [0, 1) per wait (default `Math.random`; tests pass a fixed one). */
  random?: () => number;
  /** Hears each step that failed (the round goes on with the next; default: ignored). */
  onError?: (error: unknown) => void;
}

/** Defaults of {@link PrunerOptions} (`batchSize`: `PRUNE_BATCH.default`; `vacuum`: `VACUUM_DEFAULT`). */
export const PRUNER_DEFAULTS = { everyMs: 300_000, jitter: 0.1 } as const;

const ignore = (): void => undefined;

/** Checks {@link PrunerOptions} and applies their defaults. */
const parseOptions = defineOptions<PrunerOptions>()('startPruner', {
  store: o.custom<PrunedStore>(
    (store) => typeof (store as Partial<PrunedStore> | null | undefined)?.retention?.prune === 'function',
    'a Store',
  ),
  clock: o.clock(),
  everyMs: o.number().positive().default(PRUNER_DEFAULTS.everyMs),
  jitter: o.fraction(true).default(PRUNER_DEFAULTS.jitter),
  retention: retentionOption,
  batchSize: batchSizeOption,
  vacuum: vacuumOption,
  random: o.fn<() => number>().default(Math.random),
  onError: o.fn<(error: unknown) => void>().default(ignore),
});

/** A background pruner: see {@link startPruner}. */
export interface Pruner {
  /** The report of the last round's prune, or undefined before the first. */
  readonly lastReport: PruneReport | undefined;
  /** The store's size as last measured (at start, then after each round), or undefined before. */
  readonly size: StoreSize | undefined;
  /** Hears every round's report. */
  onPruned(listener: (report: PruneReport) => void): Disposable;
  /**
   * Runs a round now (after the one in progress, if any): prune, vacuum what it removed (per `vacuum`), then
   * the expired counters and the watches of ended jobs, then measure. Resolves with its report, undefined when the prune failed or the pruner stopped.
   */
  runNow(): Promise<PruneReport | undefined>;
  /** Stops: no more rounds; a round in progress stops after its current batch. Resolves once it has. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts pruning `store` in the background (docs/architecture.md#retention): one round after
 * each wait of about `everyMs`, on `clock`'s timers. A round is `store.retention.prune` with the options
 * given, then `retention.vacuum` of what it removed (per `vacuum`), `counters.prune()` and `pruneWatches()`,
 * then `retention.size()`; a failing step is passed to
 * `onError` and the round goes on. The size is measured once at start too, so it is known before the first
 * round. Rounds never overlap.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `startPruner`) naming every bad option.
 */
export function startPruner(options: PrunerOptions): Pruner {
  const { store, clock, everyMs, jitter, retention, batchSize, vacuum, random, onError } =
    parseOptions(options);

  const reports = new EventSource<PruneReport>();
  const stop = new AbortController();
  let timer: TimerHandle | undefined;
  /** The round in progress (or the last one), so rounds queue instead of overlapping. */
  let chain: Promise<unknown> = Promise.resolve();
  let closing: Promise<void> | undefined;
  const state: { lastReport: PruneReport | undefined; size: StoreSize | undefined } = {
    lastReport: undefined,
    size: undefined,
  };

  const step = async <T>(fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (error) {
      if (!stop.signal.aborted) onError(error);
      return undefined;
    }
  };
  const measure = async () => {
    const size = await step(() => store.retention.size());
    if (size !== undefined) state.size = size;
  };
  const round = async (): Promise<PruneReport | undefined> => {
    if (stop.signal.aborted) return undefined;
    const report = await step(() => store.retention.prune({ retention, batchSize, signal: stop.signal }));
    if (report !== undefined) {
      state.lastReport = report;
      reports.emit(report);
    }
    if (stop.signal.aborted) return report;
    if (report !== undefined) await step(() => store.retention.vacuum(report.removed, vacuum));
    await step(() => store.counters.prune());
    await step(() => store.pruneWatches());
    await measure();
    return report;
  };
  const queue = (): Promise<PruneReport | undefined> => {
    const next = chain.then(round);
    chain = next.catch(() => undefined);
    return next;
  };
  const schedule = () => {
    if (stop.signal.aborted) return;
    const waitMs = everyMs * (1 + jitter * (2 * random() - 1));
    timer = clock.setTimeout(() => {
      timer = undefined;
      void queue().finally(schedule);
    }, waitMs);
  };

  chain = measure();
  schedule();
  return {
    get lastReport() {
      return state.lastReport;
    },
    get size() {
      return state.size;
    },
    onPruned: (listener) => reports.on(listener),
    runNow: queue,
    close: () =>
      (closing ??= (async () => {
        stop.abort();
        if (timer !== undefined) clock.clearTimeout(timer);
        timer = undefined;
        await chain;
      })()),
  };
}
