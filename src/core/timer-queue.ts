import type { Clock, TimerHandle } from './clock.js';

/**
 * An entry of a {@link TimerQueue}. The queue links entries through these fields (an intrusive list), so
 * scheduling allocates nothing; an object can be in one queue at a time. Initialise them to `undefined`
 * and `false` in the implementing class so every instance has the same shape.
 */
export interface TimerEntry {
  /** When it is due, ms since the epoch on the queue's clock. Set by {@link TimerQueue.add}. */
  dueAt: number;
  prevTimer: TimerEntry | undefined;
  nextTimer: TimerEntry | undefined;
  queued: boolean;
  /** Called once when due, after the entry has left the queue. */
  onTimer(): void;
}

/**
 * Many timers on one clock timer. Entries are kept sorted by due time in a linked list: adding scans from
 * the tail, which is O(1) when delays are equal (a timeout policy's usual case), and removing is O(1).
 * At most one clock timer is armed, for the earliest entry. Removing entries never touches the clock:
 * when the armed timer fires early it re-arms for the new head, and when the queue has emptied it does
 * nothing. So a call that finishes before its timeout costs two pointer updates instead of a
 * `setTimeout`/`clearTimeout` pair.
 *
 * While the queue is empty its armed timer is `unref`'d (with Node timers), so an idle policy never keeps
 * the process alive; it is `ref`'d again as soon as an entry is added.
 */
export class TimerQueue {
  private head: TimerEntry | undefined;
  private tail: TimerEntry | undefined;
  private count = 0;
  private handle: TimerHandle | undefined;
  private armedAt = Infinity;
  private readonly fire = (): void => this.onClockTimer();

  constructor(private readonly clock: Clock) {}

  /** Number of entries waiting. */
  get size(): number {
    return this.count;
  }

  /** Schedules `entry` to fire at `dueAt` (ms since the epoch). The entry must not be queued already. */
  add(entry: TimerEntry, dueAt: number): void {
    entry.dueAt = dueAt;
    entry.queued = true;
    let after = this.tail;
    while (after !== undefined && after.dueAt > dueAt) after = after.prevTimer;
    if (after === undefined) {
      entry.prevTimer = undefined;
      entry.nextTimer = this.head;
      if (this.head !== undefined) this.head.prevTimer = entry;
      else this.tail = entry;
      this.head = entry;
    } else {
      entry.prevTimer = after;
      entry.nextTimer = after.nextTimer;
      if (after.nextTimer !== undefined) after.nextTimer.prevTimer = entry;
      else this.tail = entry;
      after.nextTimer = entry;
    }
    if (this.count++ === 0 && this.handle !== undefined) keepAlive(this.handle, true);
    if (this.handle === undefined || dueAt < this.armedAt) this.arm(dueAt);
  }

  /** Removes `entry` if it is queued; it will not fire. O(1), never touches the clock. */
  remove(entry: TimerEntry): void {
    if (!entry.queued) return;
    this.unlink(entry);
    if (this.count === 0 && this.handle !== undefined) keepAlive(this.handle, false);
  }

  private unlink(entry: TimerEntry): void {
    const { prevTimer, nextTimer } = entry;
    if (prevTimer === undefined) this.head = nextTimer;
    else prevTimer.nextTimer = nextTimer;
    if (nextTimer === undefined) this.tail = prevTimer;
    else nextTimer.prevTimer = prevTimer;
    entry.prevTimer = undefined;
    entry.nextTimer = undefined;
    entry.queued = false;
    this.count--;
  }

  private arm(at: number): void {
    if (this.handle !== undefined) this.clock.clearTimeout(this.handle);
    this.armedAt = at;
    this.handle = this.clock.setTimeout(this.fire, at - this.clock.now());
  }

  private onClockTimer(): void {
    this.handle = undefined;
    this.armedAt = Infinity;
    const now = this.clock.now();
    // A callback that adds an entry already due has it fired in this same pass.
    for (let entry = this.head; entry !== undefined && entry.dueAt <= now; entry = this.head) {
      this.unlink(entry);
      entry.onTimer();
    }
    if (this.head !== undefined && this.handle === undefined) this.arm(this.head.dueAt);
  }
}

/** `ref`/`unref` a Node timer handle; other clocks' handles are left alone. */
function keepAlive(handle: TimerHandle, on: boolean): void {
  const timer = handle as { ref?: () => unknown; unref?: () => unknown };
  if (on) timer.ref?.();
  else timer.unref?.();
}
