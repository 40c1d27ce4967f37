/**
 * Progress throttling (docs/jobs.md#progress-throttling: step changes or >= 10 % deltas). A handler may
 * call `progress` thousands of times; only calls that tell a watcher something new become `job.progress`
 * events.
 */
import { BreakwaterError } from '../core/index.js';

/** Smallest change of `step / total` that is written even when `step` did not change. */
export const PROGRESS_MIN_DELTA = 0.1;

/** What a `job.progress` event carries. */
export interface ProgressPayload {
  step: number;
  total: number;
  message?: string;
}

/**
 * Why a handler's `progress(step, total, message)` is refused: BreakwaterError `invalid_payload` unless
 * `step` is finite and >= 0, `total` finite and > 0, and `message` undefined or a string; else undefined.
 */
export function progressError(step: number, total: number, message: unknown): BreakwaterError | undefined {
  if (!(Number.isFinite(step) && step >= 0 && Number.isFinite(total) && total > 0)) {
    return new BreakwaterError('invalid_payload', {
      message: `progress needs a finite step >= 0 and total > 0, got ${step} / ${total}.`,
    });
  }
  if (message !== undefined && typeof message !== 'string') {
    return new BreakwaterError('invalid_payload', { message: 'progress message must be a string.' });
  }
  return undefined;
}

/**
 * Decides which progress reports to write, per run. A report is written when it is the first, when `step`
 * differs from the last written step, when `step / total` moved by >= {@link PROGRESS_MIN_DELTA} since the
 * last written report (a changed `total`), or when it is the final step (`step >= total`) and the last
 * written one was not final with the same values. A message alone never forces a write.
 */
export class ProgressThrottle {
  private last: { step: number; total: number; fraction: number } | undefined;

  /** Returns the payload to write, or undefined to skip; records it as written. Inputs are validated by the caller. */
  next(step: number, total: number, message?: string): ProgressPayload | undefined {
    const fraction = step / total;
    const last = this.last;
    const final = step >= total;
    const write =
      last === undefined ||
      step !== last.step ||
      Math.abs(fraction - last.fraction) >= PROGRESS_MIN_DELTA ||
      (final && total !== last.total);
    if (!write) return undefined;
    this.last = { step, total, fraction };
    return message === undefined ? { step, total } : { step, total, message };
  }
}
