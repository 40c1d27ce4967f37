/**
 * The option values of `breakwater keys create` read into a key's input: durations (`30d`, `12h`, `90m`,
 * `45s`, `500ms`, or ms), `key=value` lists, and limits per window (`5/day`, `100/min`, `2.5/3600000`). Every
 * mistake is a {@link CliError} with exit code 2 naming the option.
 */
import type { PrincipalBudget, PrincipalRateRule } from '../core/index.js';
import { CliError, EXIT } from './context.js';

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  second: 1000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  w: 604_800_000,
  week: 604_800_000,
};

function usage(message: string): CliError {
  return new CliError(message, EXIT.usage);
}

/**
 * A duration in ms: a whole number with a unit (`ms`, `s`, `m`/`min`, `h`, `d`, `w`), or a bare whole number
 * of ms. A bare unit word (`day`, `hour`, `min`) is one of it when `bareUnit` is set (windows: `5/day`).
 * @throws CliError (exit 2) naming `option`.
 */
export function durationMs(option: string, raw: string, bareUnit = false): number {
  const text = raw.trim();
  const match = /^(\d+)?\s*([a-z]+)?$/.exec(text);
  const count = match?.[1];
  const unit = match?.[2];
  const perUnit = unit === undefined ? 1 : UNIT_MS[unit];
  const ok =
    match !== null && perUnit !== undefined && (count !== undefined || (bareUnit && unit !== undefined));
  const ms = ok ? Number(count ?? 1) * perUnit : NaN;
  if (!Number.isSafeInteger(ms) || ms < 1) {
    const words = bareUnit ? 'day, hour, min, ' : '';
    throw usage(
      `${option} must be ${words}a duration such as 30d, 12h, 90m, 45s, 500ms or a number of ms, got '${raw}'`,
    );
  }
  return ms;
}

/** Comma-separated values of a repeatable option, trimmed, empty ones dropped. */
export function listOption(raw: readonly string[] | undefined): string[] {
  return (raw ?? [])
    .flatMap((value) => value.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/**
 * `key=value` pairs of `--metadata` (comma-separated, repeatable; a value ends at the next comma).
 * @throws CliError (exit 2) for a pair without `=` or a key given twice.
 */
export function metadataOption(raw: readonly string[] | undefined): Record<string, string> {
  const metadata: Record<string, string> = {};
  for (const pair of listOption(raw)) {
    const at = pair.indexOf('=');
    if (at <= 0) throw usage(`--metadata takes key=value pairs (user=alice,team=red), got '${pair}'`);
    const key = pair.slice(0, at).trim();
    if (Object.hasOwn(metadata, key)) throw usage(`--metadata gives ${key} twice`);
    metadata[key] = pair.slice(at + 1).trim();
  }
  return metadata;
}

/** `<amount>/<window>`: the amount's text and the window in ms. */
function perWindow(option: string, raw: string, example: string): { amount: string; windowMs: number } {
  const slash = raw.indexOf('/');
  if (slash <= 0) throw usage(`${option} takes <amount>/<window> (${example}), got '${raw}'`);
  return {
    amount: raw.slice(0, slash).trim(),
    windowMs: durationMs(`${option} window`, raw.slice(slash + 1), true),
  };
}

/** `--budget 5/day` (USD per window; a leading `$` is allowed), repeatable. @throws CliError (exit 2). */
export function budgetOptions(raw: readonly string[] | undefined): PrincipalBudget[] {
  return (raw ?? []).map((value) => {
    const { amount, windowMs } = perWindow('--budget', value, '5/day, 0.5/hour');
    const limitUsd = Number(amount.replace(/^\$/, ''));
    if (!/^\$?\d+(\.\d+)?$/.test(amount) || !(limitUsd > 0)) {
      throw usage(`--budget must spend a positive number of USD per window (5/day), got '${value}'`);
    }
    return { limitUsd, windowMs };
  });
}

/** `--rate 100/min` (requests per window), repeatable. @throws CliError (exit 2). */
export function rateOptions(raw: readonly string[] | undefined): PrincipalRateRule[] {
  return (raw ?? []).map((value) => {
    const { amount, windowMs } = perWindow('--rate', value, '100/min, 5000/day');
    const limit = Number(amount);
    if (!/^\d+$/.test(amount) || !(limit >= 1)) {
      throw usage(`--rate must allow a whole number >= 1 of requests per window (100/min), got '${value}'`);
    }
    return { limit, windowMs };
  });
}
