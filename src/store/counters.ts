/**
 * The counter store contract: small JSON states by key (rate-limit windows, token buckets, spend budgets),
 * changed by an atomic read-modify-write. The store knows nothing of what a state means: the caller's
 * {@link CounterStep} (a pure function, e.g. a rate-limit algorithm's `step`) decides, and the store runs it
 * with the key's current state inside one transaction that holds the key's row, so concurrent updates of one
 * key from any number of processes are serialized and none is lost. Implemented by the SQLite and PostgreSQL
 * stores as `store.counters`; one contract suite (`counters-contract.ts`) runs on both. A Redis store
 * (`policy/rate-limit/redis-store.ts`) implements the same algorithms as scripts instead.
 *
 * Times are ms since the epoch, read from the store's injected clock and passed to the step.
 */

/** Longest key, in UTF-16 code units. */
export const MAX_COUNTER_KEY_LENGTH = 512;

/** What a step decides. */
export interface CounterOutcome<R> {
  /**
   * The new state (any JSON value) to store, `undefined` to delete the key, or {@link UNCHANGED} to write
   * nothing (e.g. a denied request that does not count).
   */
  state: unknown;
  /**
   * When the stored state may be dropped (it is then equivalent to no state), ms since the epoch; null to
   * keep it until changed. Ignored unless `state` is written.
   */
  expiresAt: number | null;
  /** What `update` resolves with. */
  result: R;
}

/** Returned as a step's `state` to leave the stored state (and its expiry) as it is. */
export const UNCHANGED: unique symbol = Symbol('counters.unchanged');

/**
 * The decision: called synchronously inside the transaction with the key's state (`undefined` when absent or
 * expired) and the store's `now`. Must be pure and fast (no I/O, no awaiting); a throw rolls back and
 * rejects `update` with it.
 */
export type CounterStep<R> = (state: unknown, now: number) => CounterOutcome<R>;

/** Storage of counters. Every method is one atomic step; after `close()` every method rejects with an Error. */
export interface CounterStore {
  /**
   * Runs `step` on `key`'s state and stores its outcome, atomically with respect to every other `update` of
   * the key (SQLite: the write lock; PostgreSQL: the row locked with `SELECT … FOR UPDATE`, or the insert's
   * conflict for a new key). Resolves the step's result once durable.
   * @throws RangeError for an empty, too long or NUL-holding key; TypeError for a state with no JSON form;
   *   whatever the step throws. Nothing is written then.
   */
  update<R>(key: string, step: CounterStep<R>): Promise<R>;

  /** The key's live state (not expired), or undefined. */
  get(key: string): Promise<unknown>;

  /** Deletes the key. */
  delete(key: string): Promise<void>;

  /** Deletes up to `limit` (default 1000) expired keys; resolves how many. */
  prune(limit?: number): Promise<number>;
}
