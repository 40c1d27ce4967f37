/**
 * Defaults of `SqliteStoreOptions`, in a file of their own so that `openStore` can name the default path
 * without loading better-sqlite3.
 */
export const SQLITE_STORE_DEFAULTS = {
  path: './data/breakwater.db',
  busyTimeoutMs: 5000,
  watchMs: 100,
  checkpointWorker: true,
} as const;
