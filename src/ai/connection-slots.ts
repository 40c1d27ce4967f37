/**
 * The queue in front of a provider with a connection cap (`maxConnections`). undici queues a call
 * that finds every connection busy, and a queued call that is aborted stays queued: undici aborts it only
 * when a connection comes free for it, and aborting a request on a connection destroys that connection
 * (undici's `client-h1` `abort`), though nothing was written. Under overload, when clients give up while
 * waiting, every give-up then costs a connection and a new handshake. So the gateway keeps at most `max`
 * calls on the pool, and the others wait here, in arrival order, where an abort costs nothing: a waiter
 * whose call is over is skipped when its turn comes.
 */

/** A call waiting for a slot. */
export interface SlotWaiter {
  /** False once the call is over (aborted while waiting): it is skipped. */
  readonly live: boolean;
  /** Its turn: the slot is taken for it, and it dispatches. */
  start(): void;
}

/** Compact the queue once this many entries before its head were served. */
const COMPACT_AT = 1024;

/** At most `max` calls on a provider's pool; the rest wait in arrival order. */
export class ConnectionSlots {
  private busy = 0;
  private queue: SlotWaiter[] = [];
  private head = 0;
  /** Inside {@link release}'s loop (a waiter's `start()` released synchronously). */
  private releasing = false;
  /** Waiters in the queue whose call is over ({@link abandoned}), not yet skipped. */
  private dead = 0;

  /** @param max the pool's `connections` (≥ 1). */
  constructor(readonly max: number) {}

  /** Takes a slot for `waiter` now (true: dispatch it), or queues it until {@link release} starts it (false). */
  acquire(waiter: SlotWaiter): boolean {
    if (this.busy < this.max) {
      this.busy++;
      return true;
    }
    this.queue.push(waiter);
    return false;
  }

  /**
   * A call that held a slot is done with the pool: the next live waiter, if any, takes the slot. A waiter may
   * release its slot inside its own `start()` (undici reports a closed pool to the handler at once): that
   * inner release only frees the slot, and this loop goes on to the next waiter, so a queue of any length is
   * drained without recursion.
   */
  release(): void {
    this.busy--;
    if (this.releasing) return;
    this.releasing = true;
    try {
      while (this.busy < this.max && this.head < this.queue.length) {
        const next = this.queue[this.head]!;
        this.queue[this.head++] = DONE;
        if (!next.live) {
          this.dead--;
          continue;
        }
        this.busy++;
        next.start();
      }
    } finally {
      this.releasing = false;
      this.compact();
    }
  }

  /**
   * A queued waiter's call is over before its turn (its client left, its timer fired): it will be skipped.
   * Once such waiters are at least 64 and half the queue, they are dropped at once, so a queue stuck behind
   * long streams does not keep every abandoned call (and its payload) until a slot frees.
   */
  abandoned(): void {
    this.dead++;
    if (this.releasing || this.dead < 64 || this.dead * 2 < this.queue.length - this.head) return;
    this.queue = this.queue.slice(this.head).filter((waiter) => waiter.live);
    this.head = 0;
    this.dead = 0;
  }

  /** Calls on the pool, and live calls waiting, for stats and tests. */
  get stats(): { busy: number; waiting: number } {
    return { busy: this.busy, waiting: this.queue.length - this.head - this.dead };
  }

  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head >= COMPACT_AT && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}

/** What a served queue entry is replaced with, so the queue keeps no call alive. */
const DONE: SlotWaiter = { live: false, start: () => undefined };
