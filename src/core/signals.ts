/**
 * Abort-signal linking that never leaks listeners: a child controller follows its parents until disposed,
 * and disposing removes every listener it added. (`AbortSignal.any` keeps its sources alive until garbage
 * collection and cannot be detached, which is why this exists.)
 */

/** A signal that never aborts; shared, so code can always pass a signal without allocating one. */
export const neverAbortedSignal: AbortSignal = new AbortController().signal;

/**
 * The key of a host server's per-request signal: server/'s `createServer` decorates its Fastify instance with
 * a {@link RequestSignalOf} under it, so a capability's route mounted there can use the signal the server
 * keeps for each request anyway (aborted by the server's request timeout, or when the client leaves) instead
 * of an AbortController and a close listener of its own per request. Capabilities cannot import server/
 * (docs/architecture.md#import-rules: imports point down), so the key lives here. `Symbol.for`: one key
 * across copies.
 */
export const REQUEST_SIGNAL: unique symbol = Symbol.for('breakwater.requestSignal');

/** What a host puts under {@link REQUEST_SIGNAL}: the signal of one of its requests. */
export type RequestSignalOf = (request: unknown) => AbortSignal;

/** The {@link RequestSignalOf} of the host server `app` (a Fastify instance) was mounted on, if it has one. */
export function hostRequestSignal(app: object): RequestSignalOf | undefined {
  const found = (app as { [REQUEST_SIGNAL]?: unknown })[REQUEST_SIGNAL];
  return typeof found === 'function' ? (found as RequestSignalOf) : undefined;
}

/**
 * The key of a host server's shutdown hook for long answers: server/'s `createServer` decorates its Fastify
 * instance with a {@link AtGraceEnd} under it. A stream that may finish within a graceful close's grace
 * (an AI completion) registers how to end itself honestly when the grace runs out, before the connections
 * are destroyed. Same reason as {@link REQUEST_SIGNAL} for living here.
 */
export const GRACE_END: unique symbol = Symbol.for('breakwater.graceEnd');

/**
 * What a host puts under {@link GRACE_END}: registers `cut`, called once if the server's graceful close
 * runs out of grace while it is registered; returns the unregistration (call it when the answer ends).
 */
export type AtGraceEnd = (cut: () => void) => () => void;

/** The {@link AtGraceEnd} of the host server `app` was mounted on, if it has one. */
export function hostGraceEnd(app: object): AtGraceEnd | undefined {
  const found = (app as { [GRACE_END]?: unknown })[GRACE_END];
  return typeof found === 'function' ? (found as AtGraceEnd) : undefined;
}

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
