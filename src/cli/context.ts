/**
 * What every command shares: where the store is (`--db`, `DATABASE_URL`, `BREAKWATER_DB`; on PostgreSQL the
 * schema `BREAKWATER_DB_SCHEMA`), how it is opened with a message a person can act on, and the exit codes.
 */
import { existsSync } from 'node:fs';
import { openStore, storeTarget, type Store } from '../store/index.js';

/** Exit codes of the `breakwater` command. */
export const EXIT = {
  ok: 0,
  /** The command ran and failed: database unreachable, job not found, port in use. */
  failed: 1,
  /** The command line was wrong: unknown command or option, missing argument. */
  usage: 2,
} as const;

/** An error whose message is for the person at the terminal, printed without a stack. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * The store URL a command uses: `--db`, else `DATABASE_URL`, else `BREAKWATER_DB`, else SQLite at
 * `./data/breakwater.db` (docs/architecture.md#storage).
 */
export function storeUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const value of [flag, env.DATABASE_URL, env.BREAKWATER_DB]) {
    if (value !== undefined && value.trim() !== '') return value;
  }
  return undefined;
}

/**
 * The PostgreSQL schema a command uses: `BREAKWATER_DB_SCHEMA`, else undefined (the store's default,
 * `breakwater`). Several deployments (or test runs) can share one database, each in its own schema; every
 * process of one deployment must use the same value. Ignored for SQLite.
 */
export function storeSchema(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env.BREAKWATER_DB_SCHEMA?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/**
 * Opens the store at `url` (on PostgreSQL in the schema {@link storeSchema} names), turning a failure into a
 * {@link CliError} that says which database could not be opened and why (the password of a PostgreSQL URL
 * masked).
 */
export async function openStoreForCli(
  url: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Store> {
  let target;
  try {
    target = storeTarget(url);
  } catch (error) {
    throw new CliError((error as Error).message, EXIT.usage);
  }
  try {
    return await openStore({ url, schema: storeSchema(env) });
  } catch (error) {
    const reason = describe(error);
    throw new CliError(
      target.backend === 'postgres'
        ? `cannot use the PostgreSQL database at ${target.display}: ${reason}`
        : `cannot open the SQLite database at ${target.display}: ${reason}`,
    );
  }
}

function describe(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return describe(error.errors[0]);
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && !error.message.includes(code)
      ? `${error.message} (${code})`
      : error.message;
  }
  return String(error);
}

/**
 * Opens the store of a command that only reads or changes what exists (`jobs`, `webhooks`): `--db` may not be
 * empty, and a SQLite file that does not exist is an error instead of a new empty database (a mistyped path
 * would otherwise answer "no jobs").
 */
export async function openExistingStoreForCli(flag: string | undefined): Promise<Store> {
  if (flag !== undefined && flag.trim() === '') {
    throw new CliError('--db must name a database, got an empty value', EXIT.usage);
  }
  const url = storeUrl(flag);
  let target;
  try {
    target = storeTarget(url);
  } catch (error) {
    throw new CliError((error as Error).message, EXIT.usage);
  }
  if (target.backend === 'sqlite' && target.location !== ':memory:' && !existsSync(target.location)) {
    throw new CliError(
      `there is no database at ${target.location} (nothing has run with it yet; check --db or $DATABASE_URL)`,
    );
  }
  return openStoreForCli(url);
}
