import { clockOption, type Clock } from '../../core/index.js';
import { MAX_COUNTER_KEY_LENGTH, UNCHANGED, type CounterStep, type CounterStore } from '../../store/index.js';

interface Entry {
  state: unknown;
  expiresAt: number | null;
}

/**
 * A {@link CounterStore} in process memory, for a gateway without a store (spend budgets then hold for this
 * process only). Each `update` runs its step synchronously, so updates of a key are serialized by the event
 * loop. States are copied through JSON on the way in, as a database would. Expired keys are dropped when
 * touched and by `prune`.
 */
export class MemoryCounterStore implements CounterStore {
  private readonly entries = new Map<string, Entry>();
  private readonly clock: Clock;

  constructor(clock?: Clock) {
    this.clock = clockOption('MemoryCounterStore', clock);
  }

  update<R>(key: string, step: CounterStep<R>): Promise<R> {
    try {
      checkKey(key);
      const now = this.clock.now();
      const outcome = step(this.live(key, now), now);
      if (outcome.state !== UNCHANGED) {
        if (outcome.state === undefined) this.entries.delete(key);
        else {
          const json = JSON.stringify(outcome.state) as string | undefined;
          if (json === undefined) throw new TypeError(`counter ${key}: the state has no JSON form`);
          this.entries.set(key, { state: JSON.parse(json), expiresAt: outcome.expiresAt });
        }
      }
      return Promise.resolve(outcome.result);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  get(key: string): Promise<unknown> {
    return Promise.resolve(this.live(key, this.clock.now()));
  }

  delete(key: string): Promise<void> {
    this.entries.delete(key);
    return Promise.resolve();
  }

  prune(limit = 1000): Promise<number> {
    const now = this.clock.now();
    let removed = 0;
    for (const [key, entry] of this.entries) {
      if (removed >= limit) break;
      if (entry.expiresAt !== null && entry.expiresAt <= now) {
        this.entries.delete(key);
        removed++;
      }
    }
    return Promise.resolve(removed);
  }

  private live(key: string, now: number): unknown {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt !== null && entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.state;
  }
}

function checkKey(key: string): void {
  if (
    typeof key !== 'string' ||
    key.length === 0 ||
    key.length > MAX_COUNTER_KEY_LENGTH ||
    key.includes('\0')
  ) {
    throw new RangeError(`counters: key must be 1 to ${MAX_COUNTER_KEY_LENGTH} characters without NUL`);
  }
}
