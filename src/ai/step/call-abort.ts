/**
 * The abort handle of one provider call. undici's `request` takes as its `signal` either an AbortSignal or
 * an EventEmitter-like object (`aborted`, `reason`, `on`/`once('abort', fn)`, `removeListener('abort', fn)`;
 * undici docs, `Dispatcher.request` options). This is the second kind, so a call costs one small object
 * instead of an AbortController, its signal (an EventTarget with its own listener map) and undici's
 * listener record on it: ~0.7 KB less kept alive per request in flight, counted with heap snapshots.
 *
 * It follows `parent` (the request's signal): the client leaving or the server's request timeout aborts
 * the call with the parent's reason. Call {@link CallAbort.dispose} when the call's work ends, whatever the
 * outcome, to detach from the parent.
 */
export class CallAbort {
  /** Read by undici. */
  aborted = false;
  /** Read by undici: what its request rejects with once aborted. */
  reason: unknown = undefined;
  /** undici's one listener (it adds one per request and removes it when the request ends). */
  private listener: (() => void) | undefined = undefined;
  private parent: AbortSignal | undefined;

  constructor(parent: AbortSignal) {
    if (parent.aborted) {
      this.aborted = true;
      this.reason = parent.reason;
      return;
    }
    this.parent = parent;
    // An object listener (handleEvent) instead of a closure: one allocation fewer per call.
    parent.addEventListener('abort', this);
  }

  /** undici's side: its abort listener (it adds one). Only `'abort'` is ever asked for. */
  once(_event: 'abort', listener: () => void): this {
    this.listener = listener;
    return this;
  }

  /** The same as {@link once} (an abort happens once); undici checks that it exists. */
  on(event: 'abort', listener: () => void): this {
    return this.once(event, listener);
  }

  /** undici's side: the request ended, its listener goes. */
  removeListener(_event: 'abort', listener: () => void): this {
    if (this.listener === listener) this.listener = undefined;
    return this;
  }

  /** Aborts the call with `reason` (a DOMException `AbortError` when none) and detaches. Once only. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.dispose();
    this.aborted = true;
    this.reason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }

  /** @internal EventListenerObject entry point: the parent aborted. */
  handleEvent(): void {
    this.abort(this.parent?.reason);
  }

  /** Detaches from the parent. Idempotent. */
  dispose(): void {
    const parent = this.parent;
    if (parent === undefined) return;
    this.parent = undefined;
    parent.removeEventListener('abort', this);
  }
}
