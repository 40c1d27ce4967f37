/**
 * `breakwater/postgres`: the distributed store on PostgreSQL (pg, loaded by this entry).
 */
export {
  openPostgresStore,
  type PostgresStoreOptions,
  POSTGRES_STORE_DEFAULTS,
} from '../store/postgres/index.js';
