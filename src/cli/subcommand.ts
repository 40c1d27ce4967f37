/**
 * The command line of the store-backed admin commands (`jobs`, `webhooks`, `ops`, `audit`): a subcommand,
 * its positional arguments, and options, with `--db`, `--json` and `-h/--help` common to all. Every mistake
 * is a {@link CliError} with exit code 2 and the usage text.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CliError, EXIT } from './context.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** What a command accepts. */
export interface SubcommandSpec<O extends Options> {
  /** The command's name, for messages (`jobs`). */
  command: string;
  usage: string;
  /** Each subcommand and the names of its positional arguments (`{ list: [], show: ['job id'] }`). */
  subcommands: Readonly<Record<string, readonly string[]>>;
  /** Options besides `--db`, `--json` and `--help`. */
  options: O;
}

/** A parsed command line, or the exit code after the usage was printed (help, or nothing given). */
export type ParsedSubcommand<V> =
  { sub: string; args: string[]; values: V & { db?: string; json?: boolean } } | { exit: number };

/**
 * Parses `argv` per `spec`. `--help` prints the usage (exit 0); no subcommand prints it too (exit 2).
 * @throws CliError (exit 2) for an unknown option or subcommand, a missing or extra positional argument.
 */
export function parseSubcommand<O extends Options>(
  argv: string[],
  spec: SubcommandSpec<O>,
  out: (line: string) => void,
): ParsedSubcommand<ReturnType<typeof parseArgs<{ options: O }>>['values']> {
  const usageError = (message: string) => new CliError(`${message}\n\n${spec.usage}`, EXIT.usage);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        ...spec.options,
        db: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw usageError((error as Error).message);
  }
  const { positionals } = parsed;
  const values = parsed.values as { help?: boolean };
  const [sub, ...args] = positionals;
  if (values.help === true || sub === undefined) {
    out(spec.usage);
    return { exit: sub === undefined && values.help !== true ? EXIT.usage : EXIT.ok };
  }
  const wanted = spec.subcommands[sub];
  if (wanted === undefined) throw usageError(`unknown ${spec.command} subcommand '${sub}'`);
  if (args.length < wanted.length) {
    throw usageError(`${spec.command} ${sub} needs ${wanted.slice(args.length).join(' and ')}`);
  }
  if (args.length > wanted.length) throw usageError(`unexpected argument '${args[wanted.length]}'`);
  return { sub, args, values: values as never };
}

/**
 * An integer option in `[min, max]`, or `fallback` when absent.
 * @throws CliError (exit 2) naming the option and the value.
 */
export function integerOption(
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new CliError(`${name} must be an integer from ${min} to ${max}, got '${raw}'`, EXIT.usage);
  }
  return value;
}

/**
 * Values of a repeatable option, each one of `allowed`.
 * @throws CliError (exit 2) naming the option, the allowed values and the bad one.
 */
export function choiceOptions<T extends string>(
  name: string,
  raw: readonly string[] | undefined,
  allowed: readonly T[],
): T[] {
  return (raw ?? []).map((value) => {
    if (!allowed.includes(value as T)) {
      throw new CliError(`${name} must be one of ${allowed.join(', ')}, got '${value}'`, EXIT.usage);
    }
    return value as T;
  });
}
