import { counterUpdate, isStoreKey, pageLimit, prepareOutcome, type CounterUpdate } from '../checks.js';
import { MAX_COUNTER_KEY_LENGTH, type CounterStep, type CounterStore } from '../counters.js';
import type { SqliteContext } from './context.js';
import type { SqliteRunner } from './runner.js';

/** Default of `prune`'s limit. */
const PRUNE_DEFAULT_LIMIT = 1000;

/**
 * Prepares `CounterStore.update`, a step of the group commit (`batch.ts`), run inside the batch's `BEGIN
 * IMMEDIATE` transaction. The write lock is held from the read of the state to the write of the step's outcome, so
 * updates of one key from every connection and process on the file run one after the other, each seeing the
 * last one's state; inside a batch they run in call order. A step that throws, or returns an outcome that
 * cannot be stored, has written nothing (the step runs before the write) and rejects alone.
 */
export function prepareUpdate(ctx: SqliteContext): <R>(update: CounterUpdate<R>) => R {
  const select = ctx.db.prepare<[string], { state: string; expiresAt: number | null }>(
    'SELECT state, expires_at AS expiresAt FROM counters WHERE key = ?',
  );
  const upsert = ctx.db.prepare<[string, string, number | null, number]>(
    `INSERT INTO counters (key, state, expires_at, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET
       state = excluded.state, expires_at = excluded.expires_at, updated_at = excluded.updated_at`,
  );
  const remove = ctx.db.prepare<[string]>('DELETE FROM counters WHERE key = ?');
  return <R>({ key, step }: CounterUpdate<R>): R => {
    const now = ctx.clock.now();
    const row = select.get(key);
    // An expired state is no state: the step starts afresh, as after a prune.
    const live = row !== undefined && (row.expiresAt === null || row.expiresAt > now);
    const outcome = prepareOutcome(step(live ? JSON.parse(row.state) : undefined, now));
    if (outcome.write === 'state') upsert.run(key, outcome.state, outcome.expiresAt, now);
    else if (outcome.write === 'delete' && row !== undefined) remove.run(key);
    return outcome.result;
  };
}

/** Prepares `get`: one primary-key lookup; an expired state reads as absent. */
export function prepareGet(ctx: SqliteContext): (key: string) => unknown {
  const select = ctx.db.prepare<[string, number], string>(
    'SELECT state FROM counters WHERE key = ? AND (expires_at IS NULL OR expires_at > ?)',
  );
  const state = select.pluck();
  return (key) => {
    const text = state.get(key, ctx.clock.now());
    return text === undefined ? undefined : JSON.parse(text);
  };
}

/** Prepares `delete`: one primary-key DELETE. */
export function prepareDelete(ctx: SqliteContext): (key: string) => void {
  const remove = ctx.db.prepare<[string]>('DELETE FROM counters WHERE key = ?');
  return (key) => {
    remove.run(key);
  };
}

/** Prepares `prune`: deletes up to `limit` expired keys found through the `expires_at` index. */
export function preparePrune(ctx: SqliteContext): (limit: number) => number {
  const remove = ctx.db.prepare<[number, number]>(
    `DELETE FROM counters WHERE rowid IN (
       SELECT rowid FROM counters WHERE expires_at IS NOT NULL AND expires_at <= ? LIMIT ?)`,
  );
  return (limit) => remove.run(ctx.clock.now(), limit).changes;
}

/**
 * `store.counters` on SQLite. `update` is group-committed like `idempotency.begin`: the AI gateway updates
 * two or three counters per request (rate windows, spend budgets), so a burst shares one fsync; the key is
 * checked before it is queued, and the step (pure, synchronous) runs inside the batch. The others run alone,
 * after what is queued.
 */
export class SqliteCounterStore implements CounterStore {
  private readonly updateTx: <R>(update: CounterUpdate<R>) => R;
  private readonly getStmt: (key: string) => unknown;
  private readonly deleteStmt: (key: string) => void;
  private readonly pruneStmt: (limit: number) => number;

  constructor(private readonly runner: SqliteRunner) {
    const { ctx } = runner;
    this.updateTx = prepareUpdate(ctx);
    this.getStmt = prepareGet(ctx);
    this.deleteStmt = prepareDelete(ctx);
    this.pruneStmt = preparePrune(ctx);
  }

  update<R>(key: string, step: CounterStep<R>): Promise<R> {
    return this.runner.prepareThenBatch(
      () => counterUpdate(key, step),
      (update: CounterUpdate<R>) => this.updateTx(update),
    );
  }

  get(key: string): Promise<unknown> {
    if (!isStoreKey(key, MAX_COUNTER_KEY_LENGTH)) return this.runner.read(() => undefined);
    return this.runner.read(this.getStmt, key);
  }

  delete(key: string): Promise<void> {
    if (!isStoreKey(key, MAX_COUNTER_KEY_LENGTH)) return this.runner.write(() => undefined);
    return this.runner.write(this.deleteStmt, key);
  }

  prune(limit?: number): Promise<number> {
    const count = pageLimit(limit, PRUNE_DEFAULT_LIMIT, Number.MAX_SAFE_INTEGER);
    if (count === 0) return this.runner.read(() => 0);
    return this.runner.write(this.pruneStmt, count);
  }
}
