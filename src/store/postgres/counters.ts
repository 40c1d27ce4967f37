import type pg from 'pg';
import { counterUpdate, isStoreKey, pageLimit, prepareOutcome, type CounterUpdate } from '../checks.js';
import { MAX_COUNTER_KEY_LENGTH, type CounterStep, type CounterStore } from '../counters.js';
import { ms, withTransaction } from './db.js';
import type { PgRunner } from './runner.js';

/** Default of `prune`'s limit. */
const PRUNE_DEFAULT_LIMIT = 1000;

/**
 * How many times one `update` runs its step at most. A new key's insert that meets a concurrent first insert
 * runs the step once more on the winner's row, now locked; only a key deleted again in between (a `delete`
 * or `prune` racing) can need a third.
 */
const MAX_STEP_RUNS = 3;

/**
 * `update`: one transaction. The key's row is read `FOR UPDATE`, so updates of an existing key from every
 * pool and process queue on its row lock and each runs its step on the state the previous one committed.
 * A new key has no row to lock: the step runs on `undefined` and its state is inserted with
 * `ON CONFLICT (key) DO NOTHING`. When a concurrent update inserted the key first, that insert waits for it
 * to commit, then inserts nothing; the row is then read `FOR UPDATE` again (a new statement, so in READ
 * COMMITTED it sees the winner's row) and the step runs again on it. The step is pure, so running it again is
 * safe; only the last run's outcome is written.
 */
async function update<R>(runner: PgRunner, table: string, { key, step }: CounterUpdate<R>): Promise<R> {
  return withTransaction(runner.pool, async (client) => {
    const now = ms(runner.clock.now());
    for (let run = 1; ; run++) {
      const found = await client.query<{ state: unknown; expires_at: number | null }>(
        `SELECT state, expires_at FROM ${table} WHERE key = $1 FOR UPDATE`,
        [key],
      );
      const row = found.rows[0];
      // An expired state is no state: the step starts afresh, as after a prune.
      const live = row !== undefined && (row.expires_at === null || row.expires_at > now);
      const outcome = prepareOutcome(step(live ? row.state : undefined, now));
      if (outcome.write === 'none') return outcome.result;
      if (outcome.write === 'delete') {
        if (row !== undefined) await client.query(`DELETE FROM ${table} WHERE key = $1`, [key]);
        return outcome.result;
      }
      const params = [key, outcome.state, outcome.expiresAt, now];
      if (row !== undefined) {
        await client.query(
          `UPDATE ${table} SET state = $2::json, expires_at = $3, updated_at = $4 WHERE key = $1`,
          params,
        );
        return outcome.result;
      }
      const inserted = await insertNew(client, table, params);
      if (inserted) return outcome.result;
      if (run === MAX_STEP_RUNS) {
        throw new Error(`counters.update: key '${key}' was created and deleted concurrently; try again`);
      }
    }
  });
}

/** Inserts a new key's row; false when a concurrent update inserted it first (nothing written). */
async function insertNew(client: pg.PoolClient, table: string, params: unknown[]): Promise<boolean> {
  const result = await client.query(
    `INSERT INTO ${table} (key, state, expires_at, updated_at) VALUES ($1, $2::json, $3, $4)
     ON CONFLICT (key) DO NOTHING`,
    params,
  );
  return result.rowCount === 1;
}

/**
 * `store.counters` on PostgreSQL: `update` as above; `get`, `delete` and `prune` are one statement each.
 */
export class PostgresCounterStore implements CounterStore {
  private readonly counters: string;

  constructor(private readonly runner: PgRunner) {
    this.counters = runner.table('counters');
  }

  update<R>(key: string, step: CounterStep<R>): Promise<R> {
    return this.runner.run(() => update(this.runner, this.counters, counterUpdate(key, step)));
  }

  get(key: string): Promise<unknown> {
    return this.runner.run(async () => {
      if (!isStoreKey(key, MAX_COUNTER_KEY_LENGTH)) return undefined;
      const result = await this.runner.pool.query<{ state: unknown }>(
        `SELECT state FROM ${this.counters} WHERE key = $1 AND (expires_at IS NULL OR expires_at > $2)`,
        [key, ms(this.runner.clock.now())],
      );
      return result.rows[0]?.state;
    });
  }

  delete(key: string): Promise<void> {
    return this.runner.run(async () => {
      if (!isStoreKey(key, MAX_COUNTER_KEY_LENGTH)) return;
      await this.runner.pool.query(`DELETE FROM ${this.counters} WHERE key = $1`, [key]);
    });
  }

  /**
   * Picks up to `limit` expired keys (skipping rows an update holds), then deletes them; the outer
   * `expires_at` test is re-checked against a row updated meanwhile, so a key an update has just renewed is
   * never deleted.
   */
  prune(limit?: number): Promise<number> {
    return this.runner.run(async () => {
      const count = pageLimit(limit, PRUNE_DEFAULT_LIMIT, Number.MAX_SAFE_INTEGER);
      if (count === 0) return 0;
      const result = await this.runner.pool.query(
        `DELETE FROM ${this.counters}
          WHERE key IN (
                  SELECT key FROM ${this.counters} WHERE expires_at <= $1
                   LIMIT $2
                     FOR UPDATE SKIP LOCKED)
            AND expires_at <= $1`,
        [ms(this.runner.clock.now()), count],
      );
      return result.rowCount ?? 0;
    });
  }
}
