/**
 * Abort-signal linking that never leaks listeners: a child controller follows its parents until disposed,
 * and disposing removes every listener it added. (`AbortSignal.any` keeps its sources alive until garbage
 * collection and cannot be detached, which is why this exists.)
 */

/** A signal that never aborts; shared, so code can always pass a signal without allocating one. */
export const neverAbortedSignal: AbortSignal = new AbortController().signal;

/**
 * An `AbortController` that aborts when any parent signal aborts (with that parent's reason).
 * Call {@link LinkedAbort.dispose} when the work ends, whatever the outcome, to detach from the parents.
 */
export class LinkedAbort {
  readonly controller = new AbortController();
  private parents: AbortSignal[] | undefined;

  constructor(...parents: (AbortSignal | undefined)[]) {
    for (const parent of parents) {
      // The shared never-aborting signal can never fire: listening to it would only pile up listeners.
      if (parent === undefined || parent === neverAbortedSignal) continue;
      if (parent.aborted) {
        this.controller.abort(parent.reason);
        break;
      }
      (this.parents ??= []).push(parent);
      // An object listener (handleEvent) instead of a closure: one allocation fewer per link.
      parent.addEventListener('abort', this);
    }
    if (this.controller.signal.aborted) this.dispose();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Aborts the child (and detaches from the parents). */
  abort(reason?: unknown): void {
    this.dispose();
    this.controller.abort(reason);
  }

  /** @internal EventListenerObject entry point for a parent's abort. */
  handleEvent(event: Event): void {
    const reason = (event.target as AbortSignal).reason;
    this.dispose();
    this.controller.abort(reason);
  }

  /** Detaches from every parent. Idempotent. */
  dispose(): void {
    const parents = this.parents;
    if (parents === undefined) return;
    this.parents = undefined;
    for (const parent of parents) parent.removeEventListener('abort', this);
  }
}

/** The reason to reject with when `signal` aborted: its reason, or a DOMException `AbortError`. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
