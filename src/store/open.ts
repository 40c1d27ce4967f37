import { OptionsError, defineOptions, o, type Clock, type OptionProblem } from '../core/index.js';
import { SQLITE_STORE_DEFAULTS } from './sqlite/defaults.js';
import type { Store } from './store.js';

export type { Store, StoreFacets } from './store.js';

/** Options of {@link openStore}; validated before anything is opened. */
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
  /** PostgreSQL schema (default `breakwater`; checked by `openPostgresStore`); ignored for SQLite. */
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
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `openStore`) for a URL of another scheme
 *   (`mysql://…`), naming the schemes understood (a password masked), or an empty `sqlite:` path.
 */
export function storeTarget(url: string | undefined): StoreTarget {
  const target = readTarget(url);
  if ('rule' in target) throw new OptionsError(OWNER, [target]);
  return target;
}

/** The target `url` names, or what is wrong with it. */
function readTarget(url: string | undefined): StoreTarget | OptionProblem {
  const value = url === undefined || url.trim() === '' ? SQLITE_STORE_DEFAULTS.path : url.trim();
  if (/^postgres(ql)?:\/\//i.test(value)) {
    return { backend: 'postgres', location: value, display: maskPassword(value) };
  }
  const path = value.replace(/^(sqlite|file):(\/\/)?/i, '');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path)) {
    return {
      option: 'url',
      rule: 'postgres://…, postgresql://…, sqlite:<path> or a file path',
      value: maskPassword(value),
    };
  }
  if (path === '') return { option: 'url', rule: 'a non-empty string', value: path };
  return { backend: 'sqlite', location: path, display: path };
}

const OWNER = 'openStore';

/**
 * Checks {@link OpenStoreOptions}: `url` and `clock` here; `schema` is the PostgreSQL store's to check, and
 * SQLite ignores it.
 */
const parseOptions = defineOptions<OpenStoreOptions>()(
  OWNER,
  { url: o.string().optional(), clock: o.clock(), schema: o.any<string | undefined>() },
  (p, report) => {
    if (p.url !== undefined && typeof p.url !== 'string') return;
    const target = readTarget(p.url);
    if ('rule' in target) report(target.option, target.rule, target.value);
  },
);

/**
 * Opens the store a URL names (PostgreSQL or SQLite), applying migrations. The backend's module (and its
 * driver, pg or better-sqlite3) is loaded on first use, so importing this function loads neither.
 * @throws OptionsError (`RangeError`, `invalid_options`) naming every bad option: owner `openStore` for a bad
 *   URL or clock, `openPostgresStore` for a bad schema; the driver's error when the database cannot be
 *   reached, opened or migrated.
 */
export async function openStore(options: OpenStoreOptions = {}): Promise<Store> {
  const { url, clock, schema } = parseOptions(options);
  const target = storeTarget(url);
  if (target.backend === 'postgres') {
    const { openPostgresStore } = await import('./postgres/index.js');
    return openPostgresStore({ url: target.location, clock, schema });
  }
  const { openSqliteStore } = await import('./sqlite/index.js');
  return openSqliteStore({ path: target.location, clock });
}

function maskPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
}
