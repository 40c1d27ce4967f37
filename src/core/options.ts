/**
 * Option checks shared by the policies and their plug-ins (backoffs, breaker windows, rate-limit algorithms),
 * so a bad option fails at construction, not on the first call under load (Polly v8's validated options).
 * Every check throws a `RangeError` in one format, naming the owner (the factory or class as users call it)
 * and the option: `${owner}: ${option} must be ${rule}, got ${value}`, e.g.
 * `retry: maxAttempts must be an integer >= 1 or Infinity, got 0`.
 *
 * Plumbing for the other folders: exported from core's index, not from the package's public face.
 */

/** Bounds for {@link finite}. Without any, any finite number passes. */
export interface NumberRule {
  /** Smallest allowed value (inclusive unless `exclusiveMin`). */
  readonly min?: number;
  /** `min` itself is not allowed (`> min` rather than `>= min`). */
  readonly exclusiveMin?: boolean;
  /** Largest allowed value (inclusive). */
  readonly max?: number;
  /** Only whole numbers. */
  readonly integer?: boolean;
  /** `Infinity` is allowed too ("retry until something else stops it"). */
  readonly infinity?: boolean;
}

/** `> 0`: a duration or a size that cannot be zero. */
export const POSITIVE: NumberRule = { min: 0, exclusiveMin: true };
/** `>= 0`: a delay or a margin that may be zero. */
export const NON_NEGATIVE: NumberRule = { min: 0 };
/** An integer `>= 1`: a count of calls, slots, attempts. */
export const POSITIVE_INTEGER: NumberRule = { min: 1, integer: true };

/**
 * The error every check throws; use it directly for a rule the helpers do not express.
 * @param rule what the option must be, phrased to follow "must be" (e.g. `an integer >= 1`).
 */
export function invalidOption(owner: string, option: string, rule: string, value: unknown): RangeError {
  return new RangeError(`${owner}: ${option} must be ${rule}, got ${describeValue(value)}`);
}

/**
 * A number (not a numeric string) within `rule`, finite unless `rule.infinity` allows `Infinity`.
 * @returns `value`, typed.
 * @throws RangeError naming `owner` and `option`.
 */
export function finite(owner: string, option: string, value: unknown, rule: NumberRule = {}): number {
  const { min, max, exclusiveMin = false, integer = false, infinity = false } = rule;
  const ok =
    typeof value === 'number' &&
    ((infinity && value === Infinity) ||
      ((integer ? Number.isInteger(value) : Number.isFinite(value)) &&
        (min === undefined || (exclusiveMin ? value > min : value >= min)) &&
        (max === undefined || value <= max)));
  if (ok) return value;
  throw invalidOption(owner, option, numberRule(rule), value);
}

/** The words of a {@link NumberRule}: `a finite number > 0`, `an integer in [1, 10]`, … */
function numberRule({
  min,
  max,
  exclusiveMin = false,
  integer = false,
  infinity = false,
}: NumberRule): string {
  let text = integer ? 'an integer' : 'a finite number';
  if (min !== undefined && max !== undefined) text += ` in ${exclusiveMin ? '(' : '['}${min}, ${max}]`;
  else if (min !== undefined) text += exclusiveMin ? ` > ${min}` : ` >= ${min}`;
  else if (max !== undefined) text += ` <= ${max}`;
  return infinity ? `${text} or Infinity` : text;
}

/**
 * A fraction: in `(0, 1]` (a threshold, where 0 would mean "always"), or in `[0, 1]` with `allowZero` (a
 * share of calls, where 0 means "never").
 * @throws RangeError naming `owner` and `option`.
 */
export function fraction(owner: string, option: string, value: unknown, allowZero = false): number {
  if (typeof value === 'number' && (allowZero ? value >= 0 : value > 0) && value <= 1) return value;
  throw invalidOption(owner, option, `a fraction in ${allowZero ? '[0, 1]' : '(0, 1]'}`, value);
}

/**
 * An optional function (a predicate, a handler, a random source): `undefined` passes (the default applies).
 * @throws RangeError naming `owner` and `option` for anything else that is not a function.
 */
export function optionalFn<F>(owner: string, option: string, value: F | undefined): F | undefined {
  if (value === undefined || typeof value === 'function') return value;
  throw invalidOption(owner, option, 'a function', value);
}

/**
 * One of a fixed set of values (compared with `===`).
 * @throws RangeError naming `owner` and `option`, listing the allowed values.
 */
export function oneOf<T>(owner: string, option: string, value: unknown, allowed: readonly T[]): T {
  if (allowed.includes(value as T)) return value as T;
  const names = allowed.map(describeValue);
  const rule = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0];
  throw invalidOption(owner, option, rule ?? 'nothing', value);
}

/**
 * An optional nested options object (not `null`, not an array): `undefined` passes.
 * @param shape how the rule names the object, e.g. `an object { multiplier?, maxMs }`.
 * @throws RangeError naming `owner` and `option`.
 */
export function optionalObject<O extends object>(
  owner: string,
  option: string,
  value: O | undefined,
  shape = 'an object',
): O | undefined {
  if (value === undefined || (typeof value === 'object' && value !== null && !Array.isArray(value)))
    return value;
  throw invalidOption(owner, option, `${shape} or left out`, value);
}

/** @throws RangeError naming `owner` and `option` unless `value` is `true` or `false`. */
export function bool(owner: string, option: string, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  throw invalidOption(owner, option, 'a boolean', value);
}

/** @throws RangeError naming `owner` and `option` unless `value` is a string of at least one character. */
export function nonEmptyString(owner: string, option: string, value: unknown): string {
  if (typeof value === 'string' && value.length > 0) return value;
  throw invalidOption(owner, option, 'a non-empty string', value);
}

/**
 * `value` as a message shows it: numbers as they are, strings quoted (so `'10'` is told apart from `10`
 * and `''` is visible), functions and objects by kind, arrays of plain values in full.
 */
function describeValue(value: unknown): string {
  if (typeof value === 'string') return value.length > 60 ? `'${value.slice(0, 57)}...'` : `'${value}'`;
  if (Array.isArray(value)) {
    return value.length <= 8 && value.every((v) => typeof v !== 'object' || v === null)
      ? `[${value.map(describeValue).join(', ')}]`
      : `an array of ${value.length}`;
  }
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}
