import { nonEmptyString, type Clock } from '../core/index.js';
import { SQLITE_STORE_DEFAULTS } from './sqlite/defaults.js';
import type { Store } from './store.js';

export type { Store, StoreFacets } from './store.js';

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /**
   * Where the state lives (docs/architecture.md#storage):
   * - `postgres://…` or `postgresql://…`: PostgreSQL (the distributed mode; `DATABASE_URL`);
   * - `sqlite:<path>`, `file:<path>` or a plain file path: SQLite at that path (`:memory:` for a private one);
   * - omitted or empty: SQLite at `./data/breakwater.db`.
   */
  url?: string;
  /** Source of time (default the system clock). */
  clock?: Clock;
  /** PostgreSQL schema (default `breakwater`); ignored for SQLite. */
  schema?: string;
}

/** Which backend a store URL selects, and its address for messages (a PostgreSQL password is masked). */
export interface StoreTarget {
  backend: 'sqlite' | 'postgres';
  /** The SQLite path, or the PostgreSQL URL. */
  location: string;
  /** Safe to print: the URL's password replaced by `***`. */
  display: string;
}

/**
 * Reads a store URL (see {@link OpenStoreOptions.url}) without opening anything.
 * @throws RangeError for a URL of another scheme (`mysql://…`), naming the schemes understood.
 */
export function storeTarget(url: string | undefined): StoreTarget {
  const value = url === undefined || url.trim() === '' ? SQLITE_STORE_DEFAULTS.path : url.trim();
  if (/^postgres(ql)?:\/\//i.test(value)) {
    return { backend: 'postgres', location: value, display: maskPassword(value) };
  }
  const path = value.replace(/^(sqlite|file):(\/\/)?/i, '');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path)) {
    throw new RangeError(
      `openStore: url must be postgres://…, postgresql://…, sqlite:<path> or a file path, got '${maskPassword(value)}'`,
    );
  }
  nonEmptyString('openStore', 'url', path);
  return { backend: 'sqlite', location: path, display: path };
}

/**
 * Opens the store a URL names (PostgreSQL or SQLite), applying migrations. The backend's module (and its
 * driver, pg or better-sqlite3) is loaded on first use, so importing this function loads neither.
 * @throws RangeError for a bad URL; the driver's error when the database cannot be reached, opened or migrated.
 */
export async function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  const target = storeTarget(options.url);
  if (target.backend === 'postgres') {
    const { openPostgresStore } = await import('./postgres/index.js');
    return openPostgresStore({ url: target.location, clock: options.clock, schema: options.schema });
  }
  const { openSqliteStore } = await import('./sqlite/index.js');
  return openSqliteStore({ path: target.location, clock: options.clock });
}

function maskPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
}
