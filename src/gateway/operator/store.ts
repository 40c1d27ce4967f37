/**
 * Notices about the store: unreachable, and reachable again. The store is probed on a timer (one indexed
 * read, as `/readyz` does) rather than judged from failures on the hot paths, so a worker with nothing to
 * do still hears of an outage, and a line comes only when the answer changes.
 */
import { redactText, type Clock, type Disposable, type TimerHandle } from '../../core/index.js';
import { clip, duration, type NoticeSink } from './lines.js';

/** Defaults of the store probe. */
export const STORE_NOTICES = {
  /** How often the store is probed, ms. */
  checkEveryMs: 10_000,
  /** A probe with no answer after this many ms counts as unreachable. */
  timeoutMs: 2_000,
  /** Longest error message quoted, characters. */
  maxMessage: 160,
} as const;

/** The job id the probe reads: one that never exists (one indexed read, as `/readyz` does). */
export const STORE_PROBE_ID = 'job_store-probe';

/** What the probe reads of a store (any `Store` fits). */
export interface ProbedStore {
  get(id: string): Promise<unknown>;
}

/**
 * Probes the store every `checkEveryMs` (the first probe one interval after the start, which already
 * needed the store). Prints `store unreachable (…)` when a probe fails or times out after one that
 * answered, and `store reachable again after …` when one answers after that. At most one line per probe.
 */
export function watchStore(
  store: ProbedStore,
  sink: NoticeSink,
  clock: Clock,
  checkEveryMs: number = STORE_NOTICES.checkEveryMs,
): Disposable {
  let disposed = false;
  let timer: TimerHandle | undefined;
  let downSince: number | undefined;

  const check = async (): Promise<void> => {
    const startedAt = clock.now();
    let failure: unknown;
    let lateTimer: TimerHandle | undefined;
    try {
      const late = new Promise<never>((_resolve, reject) => {
        lateTimer = clock.setTimeout(
          () => reject(new Error(`no answer within ${duration(STORE_NOTICES.timeoutMs)}`)),
          STORE_NOTICES.timeoutMs,
        );
      });
      await Promise.race([Promise.resolve().then(() => store.get(STORE_PROBE_ID)), late]);
    } catch (error) {
      failure = error ?? new Error('the probe failed');
    } finally {
      clock.clearTimeout(lateTimer);
    }
    if (disposed) return;
    if (failure !== undefined && downSince === undefined) {
      downSince = startedAt;
      const message = clip(
        redactText(failure instanceof Error ? failure.message : String(failure)),
        STORE_NOTICES.maxMessage,
      );
      sink({
        event: 'store_unreachable',
        level: 'warn',
        text: `store unreachable (${message}); work that needs it waits or fails (webhooks get 503, no job is claimed); checking again every ${duration(checkEveryMs)}`,
        fields: { message },
      });
    } else if (failure === undefined && downSince !== undefined) {
      const downMs = clock.now() - downSince;
      downSince = undefined;
      sink({
        event: 'store_reachable',
        level: 'info',
        text: `store reachable again after ${duration(downMs)}`,
        fields: { down_ms: downMs },
      });
    }
    schedule();
  };

  const schedule = (): void => {
    if (!disposed) timer = clock.setTimeout(() => void check(), checkEveryMs);
  };
  schedule();
  return {
    dispose() {
      disposed = true;
      if (timer !== undefined) clock.clearTimeout(timer);
    },
  };
}
