import { invalidOption, o, type Schema } from '../core/index.js';
import type { PruneKind } from './retention.js';

/**
 * Whether the space of pruned rows is made reusable by the store itself, after a prune
 * (`store.retention.vacuum`). SQLite needs nothing: the pages a delete frees go on the file's free list and
 * the next writes reuse them. PostgreSQL marks deleted rows dead, and only a `VACUUM` makes their space
 * reusable; its autovacuum daemon does that by itself, so by default (`auto`) the store vacuums only what
 * autovacuum does not look after: every table when `autovacuum` (or `track_counts`, which it needs) is off on
 * the server, else the tables whose `autovacuum_enabled` storage parameter is false. Otherwise a store with
 * retention would still grow without bound. `always` vacuums every table a prune removed rows from (space
 * reusable right after the prune, at the cost of a pass over the table's indexes each time), `never` none
 * (a DBA's own schedule).
 *
 * The store runs a plain `VACUUM (SKIP_LOCKED)`, never `VACUUM FULL`: it takes a lock that blocks neither
 * reads nor writes (only schema changes and other vacuums), and a table another vacuum holds (autovacuum, or
 * a second gateway) is skipped rather than waited for.
 */
export type VacuumMode = 'auto' | 'always' | 'never';

export const VACUUM_MODES: readonly VacuumMode[] = ['auto', 'always', 'never'];

/** The default {@link VacuumMode}. */
export const VACUUM_DEFAULT: VacuumMode = 'auto';

/**
 * The tables a prune removes rows of, per kind (as `SIZE_TABLES` names them; a stream's row goes with its last
 * event).
 */
const PRUNED_TABLES: Readonly<Record<PruneKind, readonly string[]>> = {
  jobs: ['jobs'],
  jobEvents: ['job_events'],
  webhookInbox: ['webhook_inbox'],
  streamEvents: ['stream_events', 'streams'],
  idempotency: ['idempotency_records'],
  operations: ['operations'],
};

/** The tables rows were removed from, per the counts of a prune, each once, in the order of the kinds. */
export function prunedTables(removed: Readonly<Record<PruneKind, number>>): string[] {
  const tables = new Set<string>();
  for (const [kind, names] of Object.entries(PRUNED_TABLES) as [PruneKind, readonly string[]][]) {
    if ((removed[kind] ?? 0) > 0) for (const name of names) tables.add(name);
  }
  return [...tables];
}

const isVacuumMode = (mode: unknown): mode is VacuumMode =>
  (VACUUM_MODES as readonly unknown[]).includes(mode);
const VACUUM_RULE = `one of ${VACUUM_MODES.join(', ')}`;

/** The `vacuum` option of a component: a {@link VacuumMode}, default {@link VACUUM_DEFAULT}. */
export const vacuumOption: Schema<VacuumMode, VacuumMode | undefined> = o
  .custom<VacuumMode>(isVacuumMode, VACUUM_RULE)
  .default(VACUUM_DEFAULT);

/**
 * `mode` checked, as an argument of a call (`retention.vacuum`): a {@link VacuumMode}, or
 * {@link VACUUM_DEFAULT} when undefined.
 * @throws OptionsError (`RangeError`, `invalid_options`) naming `owner` and the option otherwise.
 */
export function vacuumMode(owner: string, mode: unknown): VacuumMode {
  if (mode === undefined) return VACUUM_DEFAULT;
  if (isVacuumMode(mode)) return mode;
  throw invalidOption(owner, 'vacuum', VACUUM_RULE, mode);
}
