import type pg from 'pg';
import type { Clock } from '../../core/index.js';
import { quoteIdent } from './db.js';

/**
 * What every operation of one PostgreSQL store shares, whichever aggregate it belongs to (the job store and
 * its facets): the pool, the clock, the schema, and the store's lifetime. Every call goes through
 * {@link run}, so after {@link close} all of them reject with an Error and none reaches the pool.
 */
export class PgRunner {
  private closing: Promise<void> | undefined;
  /** The schema, quoted for SQL (`"breakwater"`). */
  readonly s: string;

  constructor(
    readonly pool: pg.Pool,
    readonly clock: Clock,
    /** The schema name as configured (unquoted): advisory lock keys are derived from it. */
    readonly schema: string,
  ) {
    this.s = quoteIdent(schema);
  }

  /** `"schema".name`, quoted and qualified. */
  table(name: string): string {
    return `${this.s}.${name}`;
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  /**
   * Runs `fn` while the store is open; a synchronous throw (a bad argument) becomes a rejection too.
   * @returns `fn`'s promise, or a rejection once the store is closing.
   */
  run<R>(fn: () => Promise<R> | R): Promise<R> {
    if (this.closing !== undefined) return Promise.reject(closedError());
    return Promise.resolve().then(fn);
  }

  /**
   * Marks the store closed and runs `stop` (stop listening, end the pool) once: every call returns the same
   * promise, and later operations reject.
   */
  close(stop: () => Promise<void>): Promise<void> {
    this.closing ??= stop();
    return this.closing;
  }
}

/** The rejection of every call on a closed store. */
export function closedError(): Error {
  return new Error('PostgresJobStore: the store is closed');
}
