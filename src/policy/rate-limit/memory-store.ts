import { defineOptions, o } from '../../core/index.js';
import type { RateLimitAlgorithm, RateLimitDecision } from './algorithms.js';
import type { RateLimitStore } from './store.js';

/** Options of {@link MemoryRateLimitStore}; validated at construction. */
export interface MemoryRateLimitStoreOptions {
  /** Run a sweep every this many `consume` calls (integer >= 1, default 64). */
  sweepEvery?: number;
  /** Entries examined per sweep (integer >= 1, default 128): twice `sweepEvery`, so sweeping outpaces new keys. */
  sweepBatch?: number;
}

/** Defaults of {@link MemoryRateLimitStoreOptions}. */
export const MEMORY_RATE_LIMIT_STORE_DEFAULTS = { sweepEvery: 64, sweepBatch: 128 } as const;

const parseOptions = defineOptions<MemoryRateLimitStoreOptions>()('MemoryRateLimitStore', {
  sweepEvery: o.number().int().min(1).default(MEMORY_RATE_LIMIT_STORE_DEFAULTS.sweepEvery),
  sweepBatch: o.number().int().min(1).default(MEMORY_RATE_LIMIT_STORE_DEFAULTS.sweepBatch),
});

interface Entry {
  state: unknown;
  /** When the state becomes equivalent to none (ms since the epoch): `nowMs + decision.resetMs`. */
  expiresAtMs: number;
}

/**
 * A {@link RateLimitStore} in process memory: a `Map` from key to state. For one process only; use a shared
 * store (SQLite, Postgres, Redis) when limits must hold across instances.
 *
 * `consume` is synchronous (it returns the decision, not a promise). Expired entries are evicted by a bounded
 * incremental sweep: every `sweepEvery` calls it examines the next `sweepBatch` entries, resuming where the
 * last sweep stopped, so each call costs O(1) amortized, no timer is ever set, and memory follows the number of
 * keys with live state instead of every key ever seen. (With no calls at all nothing is swept, and nothing grows.)
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly entries = new Map<string, Entry>();
  private readonly sweepEvery: number;
  private readonly sweepBatch: number;
  private callsSinceSweep = 0;
  private cursor: Iterator<[string, Entry]> | undefined;

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    const p = parseOptions(options);
    this.sweepEvery = p.sweepEvery;
    this.sweepBatch = p.sweepBatch;
  }

  /** Synchronous: returns the decision itself. @throws RangeError when `cost` is invalid for `algorithm`. */
  consume(key: string, algorithm: RateLimitAlgorithm, cost: number, nowMs: number): RateLimitDecision {
    if (++this.callsSinceSweep >= this.sweepEvery) {
      this.callsSinceSweep = 0;
      this.sweep(nowMs, this.sweepBatch);
    }
    const entry = this.entries.get(key);
    const { state, decision } = algorithm.step(
      entry !== undefined && entry.expiresAtMs > nowMs ? entry.state : undefined,
      nowMs,
      cost,
    );
    if (decision.allowed) {
      // Update in place: the entry keeps its place in the Map, so the sweep cursor stays valid.
      if (entry === undefined) this.entries.set(key, { state, expiresAtMs: nowMs + decision.resetMs });
      else {
        entry.state = state;
        entry.expiresAtMs = nowMs + decision.resetMs;
      }
    }
    return decision;
  }

  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Forgets every key. */
  clear(): void {
    this.entries.clear();
    this.cursor = undefined;
  }

  /** Number of keys held, including expired ones not swept yet. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Removes expired entries and returns how many. With `maxEntries`, examines at most that many, resuming where
   * the last bounded sweep stopped (and starting over after the end); without it, examines every entry.
   */
  sweep(nowMs: number, maxEntries = Infinity): number {
    const full = maxEntries === Infinity;
    const cursor = (full ? undefined : this.cursor) ?? this.entries.entries();
    let removed = 0;
    for (let examined = 0; examined < maxEntries; examined++) {
      const next = cursor.next();
      if (next.done === true) {
        // A finished Map iterator stays finished: the next sweep starts from the beginning.
        this.cursor = undefined;
        return removed;
      }
      const [key, entry] = next.value;
      if (entry.expiresAtMs <= nowMs) {
        this.entries.delete(key);
        removed++;
      }
    }
    this.cursor = cursor;
    return removed;
  }
}
