/**
 * `breakwater/sqlite`: the embedded store on one SQLite file (better-sqlite3, loaded by this
 * entry).
 */
export { openSqliteStore, type SqliteStoreOptions, SQLITE_STORE_DEFAULTS } from '../store/sqlite/index.js';
