/**
 * Retention from the environment, read alike by `breakwater serve` (its background pruner) and `breakwater
 * prune`, so a prune by hand removes what the gateway would: one variable per retention, a duration
 * (`90s`, `30m`, `12h`, `7d`, or whole ms) or `forever`.
 */
import { VACUUM_MODES, type RetentionPolicy, type VacuumMode } from '../store/index.js';

/** The variable of each retention. */
export const RETENTION_ENV: Readonly<Record<keyof RetentionPolicy, string>> = {
  jobsMs: 'BREAKWATER_RETAIN_JOBS',
  deadLettersMs: 'BREAKWATER_RETAIN_DEAD_LETTERS',
  webhookInboxMs: 'BREAKWATER_RETAIN_WEBHOOKS',
  streamEventsMs: 'BREAKWATER_RETAIN_STREAM_EVENTS',
  operationsMs: 'BREAKWATER_RETAIN_OPERATIONS',
};

/** The variable of the gateway's time between two prunes (a duration as above; default 5 minutes). */
export const PRUNE_EVERY_ENV = 'BREAKWATER_PRUNE_EVERY';

/**
 * The variable of what a prune makes reusable on PostgreSQL: `auto` (default: the tables autovacuum does not
 * look after), `always` or `never` (`VacuumMode` in store/vacuum.ts).
 */
export const PRUNE_VACUUM_ENV = 'BREAKWATER_PRUNE_VACUUM';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+)(ms|s|m|h|d)?$/;

/**
 * A duration in whole ms: digits with an optional unit (`ms`, `s`, `m`, `h`, `d`; none: ms), or `forever`
 * (`Infinity`) when `forever` is allowed.
 * @throws RangeError naming `name` and the value when it is neither.
 */
export function parseDuration(name: string, value: string, forever = true): number {
  const text = value.trim().toLowerCase();
  if (forever && text === 'forever') return Infinity;
  const match = DURATION.exec(text);
  const ms = match === null ? NaN : Number(match[1]) * UNIT_MS[match[2] ?? 'ms']!;
  if (!Number.isSafeInteger(ms)) {
    throw new RangeError(
      `${name} must be a duration such as 90s, 30m, 12h or 7d${forever ? ', or forever' : ''}, got '${value}'`,
    );
  }
  return ms;
}

/**
 * The retentions set in `env` (unset or empty variables left out: the defaults apply).
 * @throws RangeError naming the variable when one is not a duration or `forever`.
 */
export function retentionFromEnv(env: NodeJS.ProcessEnv): Partial<RetentionPolicy> {
  const policy: Partial<RetentionPolicy> = {};
  for (const [key, name] of Object.entries(RETENTION_ENV) as [keyof RetentionPolicy, string][]) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') policy[key] = parseDuration(name, value);
  }
  return policy;
}

/**
 * The time between two prunes set in `env` (undefined when unset or empty).
 * @throws RangeError naming the variable when it is not a duration, or is 0.
 */
export function pruneEveryFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const value = env[PRUNE_EVERY_ENV];
  if (value === undefined || value.trim() === '') return undefined;
  const ms = parseDuration(PRUNE_EVERY_ENV, value, false);
  if (ms === 0) throw new RangeError(`${PRUNE_EVERY_ENV} must be a duration above 0, got '${value}'`);
  return ms;
}

/**
 * The vacuum mode set in `env` (undefined when unset or empty: the default, `auto`).
 * @throws RangeError naming the variable when it is not `auto`, `always` or `never`.
 */
export function vacuumFromEnv(env: NodeJS.ProcessEnv): VacuumMode | undefined {
  const value = env[PRUNE_VACUUM_ENV];
  if (value === undefined || value.trim() === '') return undefined;
  const mode = value.trim().toLowerCase();
  if (!(VACUUM_MODES as readonly string[]).includes(mode)) {
    throw new RangeError(`${PRUNE_VACUUM_ENV} must be one of ${VACUUM_MODES.join(', ')}, got '${value}'`);
  }
  return mode as VacuumMode;
}
