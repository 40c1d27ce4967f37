import { randomUUID } from 'node:crypto';
import {
  Log,
  OptionsError,
  defineOptions,
  errorFields,
  o,
  type Clock,
  type Disposable,
  type Logger,
  type TimerHandle,
} from '../core/index.js';
import type { CircuitBreakerPolicy, CircuitBreakerSnapshot, CircuitStateChange } from '../policy/index.js';
import { UNCHANGED, type CounterStore } from '../store/index.js';

/** Options of {@link shareBreakerState}. */
export interface SharedBreakerOptions {
  /**
   * Where the shared state lives: `store.counters` of the SQLite or PostgreSQL store every instance opens
   * (one row per breaker, changed by an atomic read-modify-write).
   */
  store: CounterStore;
  /** How often the shared state is read, ms (default 1 000): an open elsewhere reaches this instance within it. */
  refreshMs?: number;
  /** The row's key (default `breaker:<breaker name>`): instances share a breaker by using the same key. */
  key?: string;
  /** Time source for the reads' schedule; default the system clock. The breaker's own clock stamps its state. */
  clock?: Clock;
  /** Where a failed read or write is said (pino-compatible); default the process's logger. */
  logger?: Logger;
}

/** Defaults of {@link SharedBreakerOptions}. */
export const SHARED_BREAKER_DEFAULTS = { refreshMs: 1_000 } as const;

/** The options a sharing has wherever it is configured (here and an upstream's `breaker.shared`). */
export const SHARED_STORE_SHAPE = {
  store: o.methods<CounterStore>('a CounterStore (store.counters)', 'update', 'get'),
  refreshMs: o.number().int().min(1).default(SHARED_BREAKER_DEFAULTS.refreshMs),
};

/** A logger option: pino-compatible, all three methods. */
export const loggerSchema = o
  .methods<Logger>('a pino-compatible logger with info, warn and error methods', 'info', 'warn', 'error')
  .optional();

/** Checks {@link SharedBreakerOptions} and applies {@link SHARED_BREAKER_DEFAULTS}. */
const parseOptions = defineOptions<SharedBreakerOptions>()('shareBreakerState', {
  ...SHARED_STORE_SHAPE,
  key: o.string().min(1).optional(),
  clock: o.clock(),
  logger: loggerSchema,
});

/** A breaker's sharing, from {@link shareBreakerState}. */
export interface SharedBreakerState extends Disposable {
  /** Reads the shared state now and takes it on if it is newer (the timer does this every `refreshMs`). */
  sync(): Promise<void>;
  /** Resolves once every publish started so far has been written (or has failed and been logged). */
  flush(): Promise<void>;
}

/** The stored record: the snapshot of the instance that changed state last. */
interface SharedRecord {
  snapshot: CircuitBreakerSnapshot;
  /** Which sharing wrote it (one id per {@link shareBreakerState} call). */
  writer: string;
  /** The transition's reason (`consecutive_failures`, `trials_succeeded`, `isolated`, `reset`, …). */
  reason?: string;
  /** Bumped by every write, inside the store's atomic update: the order of decisions, whatever the clocks. */
  version: number;
}

/** Reasons of an operator's decisions: only a `reset` ends an isolation, wherever it was decided. */
const ISOLATED = 'isolated';
const RESET = 'reset';

/**
 * Shares a circuit breaker's open state with the breakers of other instances through the store (per process
 * by default, shared on request: docs/upstream.md#sharing-the-breaker). Breakers stay per process and keep
 * their own windows; what travels is each instance's decisions:
 * - a breaker that opens (its window tripped, or a trial failed), is isolated, or closes (trials succeeded,
 *   or an operator's `reset`) writes its snapshot with the next `version` (bumped inside the store's atomic
 *   update, so versions order the writes whatever the clocks say). Its own open or close is not written over
 *   a newer snapshot (`takenAt`) nor over an isolation; an operator's isolate or reset is always written;
 * - every `refreshMs` each instance reads the row and takes on a version it has not seen, from another
 *   instance: an open one (with its absolute `halfOpenAt`, so only the remaining open time is waited) when
 *   it is still open, was decided after this breaker's own last decision and would end later than its own
 *   open period; a closed one when this breaker is open or half-open (the dependency recovered for
 *   somebody's trial). The first read marks what is there as seen (an old close never reopens anything).
 *   A half-open breaker is not shared: every instance sends its own trial once its open period ends.
 * - an isolation holds everywhere until an operator's `reset` on any instance: a stored isolation is taken
 *   on whenever this breaker is not isolated, and an isolated breaker is closed only by a shared reset.
 *   The row is kept (one per breaker key), so versions never restart.
 *
 * No cost on the call path: one listener on state changes and one timer per breaker. The store being
 * unreachable changes nothing locally (the breaker goes on per process); the failure is logged (`warn`,
 * `shared breaker state: read failed` / `write failed`). Clocks of the instances are trusted to agree within
 * a small fraction of the open period. The refresh timer is unref'd (Node timers): it never keeps a process
 * alive by itself; `dispose()` stops it and the listener.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `shareBreakerState`) naming every bad argument
 *   and option.
 */
export function shareBreakerState(
  breaker: CircuitBreakerPolicy,
  options: SharedBreakerOptions,
): SharedBreakerState {
  const b = breaker as Partial<CircuitBreakerPolicy> | null;
  const badBreaker =
    typeof b !== 'object' ||
    b === null ||
    typeof b.onStateChange !== 'function' ||
    typeof b.snapshot !== 'function' ||
    typeof b.restore !== 'function';
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(options);
  } catch (error) {
    if (!(error instanceof OptionsError) || !badBreaker) throw error;
    throw new OptionsError(error.owner, [breakerProblem(breaker), ...error.problems]);
  }
  if (badBreaker) throw new OptionsError('shareBreakerState', [breakerProblem(breaker)]);
  const { store, refreshMs, clock } = parsed;
  const key = parsed.key ?? `breaker:${breaker.name}`;
  const log = new Log(parsed.logger);
  const writer = randomUUID();
  /** When this breaker last decided or took on an open (its clock): an open decided earlier is stale here. */
  let newest = -Infinity;
  /** The highest record version written or taken on here. */
  let seen = 0;
  let publishing: Promise<void> = Promise.resolve();
  let timer: TimerHandle | undefined;
  let active = true;

  const warn = (what: string, error: unknown): void =>
    log.warn({ breaker: breaker.name, key, err: errorFields(error) }, `shared breaker state: ${what} failed`);

  const publish = (change: CircuitStateChange): void => {
    // Restored: taken from the store (or by hand). Half-open: each instance's own, computed lazily.
    if (change.reason === 'restored' || change.to === 'half-open') return;
    const snapshot = breaker.snapshot();
    newest = Math.max(newest, snapshot.takenAt);
    const operator = change.reason === ISOLATED || change.reason === RESET;
    publishing = publishing.then(() =>
      store
        .update(key, (state) => {
          const stored = asRecord(state);
          // An operator's isolate or reset is the latest intent whatever the clocks say; an instance's own
          // open or close never replaces a newer decision, nor lifts an isolation.
          const keep =
            stored !== undefined &&
            !operator &&
            (stored.snapshot.takenAt > snapshot.takenAt || stored.snapshot.state === 'isolated');
          if (keep) return { state: UNCHANGED, expiresAt: null, result: undefined };
          const version = (stored?.version ?? 0) + 1;
          const record: SharedRecord = { snapshot, writer, reason: change.reason, version };
          return { state: record, expiresAt: null, result: version };
        })
        .then((version) => {
          if (version !== undefined) seen = Math.max(seen, version);
        })
        .catch((error: unknown) => warn('write', error)),
    );
  };

  const apply = (record: SharedRecord): void => {
    const s = record.snapshot;
    if (record.writer === writer) return;
    const local = breaker.snapshot(); // takenAt: now on the breaker's clock
    // A stored isolation holds whatever this instance saw before (its own refused open, a reset whose write
    // failed); anything else is taken once, in write order (versions, not clocks).
    if (record.version <= seen && !(s.state === 'isolated' && local.state !== 'isolated')) return;
    seen = Math.max(seen, record.version);
    switch (s.state) {
      case 'open':
        // An open decided before this breaker's own last decision is stale for it.
        if (s.takenAt <= newest || local.state === 'isolated') return;
        newest = s.takenAt;
        if (s.halfOpenAt === null || s.halfOpenAt <= local.takenAt) return;
        if (local.state === 'open' && (local.halfOpenAt ?? 0) >= s.halfOpenAt) return;
        return breaker.restore(s);
      case 'isolated':
        if (local.state !== 'isolated') breaker.restore(s);
        return;
      case 'closed':
        if (local.state === 'closed' || (local.state === 'isolated' && record.reason !== RESET)) return;
        return breaker.restore(s);
      default:
        return; // half-open is never written
    }
  };

  const sync = async (): Promise<void> => {
    try {
      const record = asRecord(await store.get(key));
      if (active && record !== undefined) apply(record);
    } catch (error) {
      warn('read', error);
    }
  };

  // The next read is scheduled whether or not this one answers: a read that hangs (a stuck connection) must
  // not end the refreshes. One read at a time; a hang is said once.
  let reading = false;
  let hangSaid = false;
  const refresh = (): void => {
    schedule();
    read();
  };
  const read = (): void => {
    if (reading) {
      if (!hangSaid) warn('read', new Error(`the previous read has not answered after ${refreshMs} ms`));
      hangSaid = true;
      return;
    }
    reading = true;
    hangSaid = false;
    void sync().finally(() => (reading = false));
  };
  const schedule = (): void => {
    if (!active) return;
    timer = clock.setTimeout(refresh, refreshMs);
    // A background refresh must not keep the process alive (a Node timer; other clocks' handles are left).
    (timer as { unref?: () => unknown }).unref?.();
  };

  const subscription = breaker.onStateChange(publish);
  read();
  schedule();
  return {
    sync,
    flush: () => publishing,
    dispose() {
      if (!active) return;
      active = false;
      subscription.dispose();
      if (timer !== undefined) clock.clearTimeout(timer);
    },
  };
}

function breakerProblem(value: unknown) {
  return { option: 'breaker', rule: 'a CircuitBreakerPolicy', value };
}

/** The stored value as a record, or undefined when absent or not one (written by something else). */
function asRecord(state: unknown): SharedRecord | undefined {
  if (typeof state !== 'object' || state === null) return undefined;
  const { snapshot, writer, reason, version } = state as Partial<SharedRecord>;
  if (typeof writer !== 'string' || typeof snapshot !== 'object' || snapshot === null) return undefined;
  if (snapshot.version !== 1 || typeof snapshot.takenAt !== 'number') return undefined;
  if (typeof version !== 'number' || !Number.isInteger(version)) return undefined;
  return { snapshot, writer, reason: typeof reason === 'string' ? reason : undefined, version };
}
