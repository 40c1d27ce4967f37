/**
 * The abort handle of one provider call: one small object with one listener slot instead of an
 * AbortController and its signal (an EventTarget with its own listener map): ~0.7 KB less kept alive per
 * request in flight, counted with heap snapshots. Its shape is undici's EventEmitter-like signal (`aborted`,
 * `reason`, `on`/`once('abort', fn)`, `removeListener('abort', fn)`; undici docs, `Dispatcher.request`
 * options), so it can also be given to `request` as its `signal`; the provider call's handler
 * (`provider-call.ts`) listens to it the same way.
 *
 * It follows `parent` (the request's signal): the client leaving or the server's request timeout aborts
 * the call with the parent's reason. Call {@link CallAbort.dispose} when the call's work ends, whatever the
 * outcome, to detach from the parent.
 */
export class CallAbort {
  /** True once aborted. */
  aborted = false;
  /** What the call rejects with once aborted. */
  reason: unknown = undefined;
  /** The one listener (the call's handler adds it, and removes it when the call ends). */
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

  /** Sets the abort listener (there is one). Only `'abort'` is ever asked for. */
  once(_event: 'abort', listener: () => void): this {
    this.listener = listener;
    return this;
  }

  /** The same as {@link once} (an abort happens once); undici's `request` checks that it exists. */
  on(event: 'abort', listener: () => void): this {
    return this.once(event, listener);
  }

  /** The call ended: its listener goes. */
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
