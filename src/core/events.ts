/** Returned by every subscription; call `dispose()` to unsubscribe. Idempotent. */
export interface Disposable {
  dispose(): void;
}

/** A listener for events of type `T`. */
export type Listener<T> = (event: T) => void;

/**
 * A minimal typed event source in the cockatiel style: `on(listener)` returns a {@link Disposable}.
 * Emitting with no listeners costs one length check, so hot paths guard event construction with
 * {@link EventSource.hasListeners}. A listener that throws does not stop the others; the error is reported
 * through `queueMicrotask` so it surfaces as an uncaught exception instead of corrupting the caller.
 */
export class EventSource<T> {
  private listeners: Listener<T>[] = [];

  /** Subscribes `listener`; the returned disposable removes it. */
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

  get hasListeners(): boolean {
    return this.listeners.length > 0;
  }

  emit(event: T): void {
    const listeners = this.listeners;
    for (let i = 0; i < listeners.length; i++) {
      try {
        listeners[i]!(event);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}
