/** Returned by every subscription; call `dispose()` to unsubscribe. Idempotent. */
export interface Disposable {
  dispose(): void;
}

/** A listener for events of type `T`. */
export type Listener<T> = (event: T) => void;

/**
 * A minimal typed event source in the cockatiel style: `on(listener)` returns a {@link Disposable}.
 * Emitting with no listeners costs one length check, so hot paths guard event construction with
 * {@link EventSource.hasListeners}. A listener that throws (a metrics exporter with a bug) never breaks the
 * policy that emitted, the other listeners or the process: its error is reported as a process warning
 * (`process.emitWarning`, name `BreakwaterListenerWarning`, the error as `cause`), which Node prints to
 * stderr and `process.on('warning')` can route to a logger.
 */
export class EventSource<T> {
  private listeners: Listener<T>[] = [];

  /** Subscribes `listener`; the returned disposable removes it (once; idempotent). */
  readonly on = (listener: Listener<T>): Disposable => {
    // Copy on write so a listener that unsubscribes during emit does not skip its neighbour.
    this.listeners = [...this.listeners, listener];
    let active = true;
    return {
      dispose: () => {
        if (!active) return;
        active = false;
        // Remove this subscription only: the same function subscribed twice stays subscribed once.
        const index = this.listeners.indexOf(listener);
        if (index >= 0)
          this.listeners = [...this.listeners.slice(0, index), ...this.listeners.slice(index + 1)];
      },
    };
  };

  /** True when at least one listener is subscribed: build an event object only then. */
  get hasListeners(): boolean {
    return this.listeners.length > 0;
  }

  /** Calls every listener subscribed at the time of the call with `event`, in subscription order. */
  emit(event: T): void {
    const listeners = this.listeners;
    for (let i = 0; i < listeners.length; i++) {
      try {
        listeners[i]!(event);
      } catch (error) {
        reportListenerError(error);
      }
    }
  }
}

function reportListenerError(error: unknown): void {
  const detail = error instanceof Error ? error.message : String(error);
  const warning = new Error(`An event listener threw: ${detail}`, { cause: error });
  warning.name = 'BreakwaterListenerWarning';
  process.emitWarning(warning);
}
