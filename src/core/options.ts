/**
 * Options: one way to declare them, check them and report what is wrong.
 *
 * A component declares its options as a schema (a zod-like subset: `o.number().int().min(1)`,
 * `o.string().min(1).default('retry')`, `o.fn<F>().optional()`, …) with {@link defineOptions}, and parses
 * what the user passed once, at construction, so hot paths never pay for validation:
 *
 * ```ts
 * const parse = defineOptions<TimeoutOptions>()('timeout', {
 *   timeoutMs: o.number().positive(),
 *   name: o.string().min(1).default(TIMEOUT_DEFAULTS.name),
 *   clock: o.clock(),
 * });
 * const { timeoutMs, name, clock } = parse(options); // typed, defaults applied
 * ```
 *
 * Every bad option is reported at once, in one {@link OptionsError} (a `RangeError`, `code`
 * `invalid_options`) whose message names the owner (the factory or class as users call it) and each
 * option: `${owner}: ${option} must be ${rule}, got ${value}`, problems joined by `; `, e.g.
 * `retry: maxAttempts must be an integer >= 1 or Infinity, got 0; jitter must be 'none' or 'full', got 1`.
 *
 * Not zod itself: zod costs more to import than the whole policy layer (measured in
 * `bench/options-import.md`), and the package root must stay light. The schema mirrors zod's authoring
 * shape so a component that does use zod (ai/) reads the same.
 *
 * The schema builders are plumbing for the other folders (core's index only); `OptionsError` and
 * `OptionProblem` are public (the package root), so callers can read every problem of a refused option set.
 */
import { systemClock, type Clock } from './clock.js';

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
export function invalidOption(owner: string, option: string, rule: string, value: unknown): OptionsError {
  return new OptionsError(owner, [{ option, rule, value }]);
}

/** One bad option: its path (`openBackoff.maxMs`), what it must be (follows "must be"), what it was. */
export interface OptionProblem {
  readonly option: string;
  readonly rule: string;
  readonly value: unknown;
}

/**
 * Bad options, all of them: thrown at construction by a component's options parser (and by the single
 * checks below). A `RangeError` so `catch (e) { e instanceof RangeError }` keeps working.
 * - `code`: `invalid_options` (stable);
 * - `owner`: the factory or class as users call it (`retry`, `createJobs`);
 * - `problems`: every bad option, in declaration order.
 */
export class OptionsError extends RangeError {
  declare readonly code: 'invalid_options';
  declare readonly owner: string;
  declare readonly problems: readonly OptionProblem[];

  constructor(owner: string, problems: readonly OptionProblem[]) {
    super(
      `${owner}: ${problems.map((p) => `${p.option} must be ${p.rule}, got ${describeValue(p.value)}`).join('; ')}`,
    );
    // Not enumerable: the error still equals `new RangeError(sameMessage)` in a deep comparison.
    Object.defineProperties(this, {
      code: { value: 'invalid_options' },
      owner: { value: owner },
      problems: { value: problems },
    });
  }
}

/**
 * A number (not a numeric string) within `rule`, finite unless `rule.infinity` allows `Infinity`.
 * @returns `value`, typed.
 * @throws RangeError naming `owner` and `option`.
 */
export function finite(owner: string, option: string, value: unknown, rule: NumberRule = {}): number {
  if (numberFits(value, rule)) return value;
  throw invalidOption(owner, option, numberRule(rule), value);
}

function numberFits(value: unknown, rule: NumberRule): value is number {
  const { min, max, exclusiveMin = false, integer = false, infinity = false } = rule;
  return (
    typeof value === 'number' &&
    ((infinity && value === Infinity) ||
      ((integer ? Number.isInteger(value) : Number.isFinite(value)) &&
        (min === undefined || (exclusiveMin ? value > min : value >= min)) &&
        (max === undefined || value <= max)))
  );
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
  throw invalidOption(owner, option, listRule(allowed), value);
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

/** Collects the problems of one parse. */
type Problems = OptionProblem[];

/**
 * A schema for one option: checks a value, records a problem when it is bad, returns it (defaults
 * applied). `Out` is what the component gets, `In` what a user may pass. Immutable: every method returns a
 * new schema.
 */
export class Schema<Out, In = Out> {
  /** Type-only: what a user may pass (contravariant, so a schema accepts its option's declared type). */
  declare readonly input: (value: In) => void;

  /** @param check records a problem for a bad value, returns the value to use. */
  constructor(readonly check: (value: unknown, option: string, problems: Problems) => Out) {}

  /** `undefined` passes (and stays `undefined`). */
  optional(): Schema<Out | undefined, In | undefined> {
    return new Schema((v, option, problems) =>
      v === undefined ? undefined : this.check(v, option, problems),
    );
  }

  /** `undefined` becomes `value` (itself checked, like anything passed). */
  default(value: Exclude<Out, undefined>): Schema<Exclude<Out, undefined>, In | undefined> {
    return new Schema(
      (v, option, problems) =>
        this.check(v === undefined ? value : v, option, problems) as Exclude<Out, undefined>,
    );
  }

  /** A further rule on a value that passed this schema (`rule` follows "must be"). */
  refine(test: (value: Out) => boolean, rule: string): Schema<Out, In> {
    return new Schema((v, option, problems) => {
      const before = problems.length;
      const value = this.check(v, option, problems);
      if (problems.length === before && !test(value)) problems.push({ option, rule, value: v });
      return value;
    });
  }
}

/** A schema for values that pass `test`; `rule` names them ("a function", "an integer >= 1"). */
function leaf<T>(test: (value: unknown) => boolean, rule: string | ((value: unknown) => string)): Schema<T> {
  return new Schema((value, option, problems) => {
    if (!test(value)) problems.push({ option, rule: typeof rule === 'string' ? rule : rule(value), value });
    return value as T;
  });
}

/** A number option; bounds are added with `int()`, `min()`, `gt()`, `max()`, `orInfinity()`. */
export class NumberSchema extends Schema<number> {
  constructor(readonly rule: NumberRule = {}) {
    super((value, option, problems) => {
      if (!numberFits(value, rule)) problems.push({ option, rule: numberRule(rule), value });
      return value as number;
    });
  }
  /** Whole numbers only. */
  int(): NumberSchema {
    return new NumberSchema({ ...this.rule, integer: true });
  }
  /** `>= min`. */
  min(min: number): NumberSchema {
    return new NumberSchema({ ...this.rule, min, exclusiveMin: false });
  }
  /** `> min`. */
  gt(min: number): NumberSchema {
    return new NumberSchema({ ...this.rule, min, exclusiveMin: true });
  }
  /** `<= max`. */
  max(max: number): NumberSchema {
    return new NumberSchema({ ...this.rule, max });
  }
  /** `> 0`: a duration or a size that cannot be zero. */
  positive(): NumberSchema {
    return this.gt(0);
  }
  /** `>= 0`: a delay or a margin that may be zero. */
  nonnegative(): NumberSchema {
    return this.min(0);
  }
  /** `Infinity` passes too ("until something else stops it"). */
  orInfinity(): NumberSchema {
    return new NumberSchema({ ...this.rule, infinity: true });
  }
}

/** A string option; `min(1)` refuses the empty string. */
export class StringSchema extends Schema<string> {
  constructor(readonly minLength = 0) {
    super((value, option, problems) => {
      if (!(typeof value === 'string' && value.length >= minLength)) {
        const rule =
          minLength === 0
            ? 'a string'
            : minLength === 1
              ? 'a non-empty string'
              : `a string of at least ${minLength} characters`;
        problems.push({ option, rule, value });
      }
      return value as string;
    });
  }
  /** At least `length` characters. */
  min(length: number): StringSchema {
    return new StringSchema(length);
  }
}

type Shape = Readonly<Record<string, Schema<unknown, never>>>;
type OutOf<S> = S extends Schema<infer O, never> ? O : never;
/** What a shape's parser returns: each option as its schema gives it, defaults applied. */
export type Parsed<S extends Shape> = { readonly [K in keyof S]: OutOf<S[K]> };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function parseShape(shape: Shape, value: Record<string, unknown>, prefix: string, problems: Problems) {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(shape)) out[key] = shape[key]!.check(value[key], prefix + key, problems);
  return out;
}

/**
 * The schema builders, named like zod's: `o.number()`, `o.string()`, `o.boolean()`, `o.enum([...])`,
 * `o.fn<F>()`, `o.fraction()`, `o.object({...})`, `o.record<T>()`, `o.methods<T>(rule, ...names)`,
 * `o.custom<T>(test, rule)`, `o.any<T>()`, `o.clock()`.
 */
export const o = {
  number: (): NumberSchema => new NumberSchema(),
  string: (): StringSchema => new StringSchema(),
  boolean: (): Schema<boolean> => leaf((v) => typeof v === 'boolean', 'a boolean'),
  /** One of `values` (compared with `===`); the rule lists them. */
  enum: <const T extends readonly unknown[]>(values: T): Schema<T[number]> =>
    leaf((v) => values.includes(v), listRule(values)),
  fn: <F extends (...args: never[]) => unknown>(): Schema<F> =>
    leaf((v) => typeof v === 'function', 'a function'),
  /** In `(0, 1]` (a threshold), or `[0, 1]` with `allowZero` (a share, where 0 means "never"). */
  fraction: (allowZero = false): Schema<number> =>
    leaf(
      (v) => typeof v === 'number' && (allowZero ? v >= 0 : v > 0) && v <= 1,
      `a fraction in ${allowZero ? '[0, 1]' : '(0, 1]'}`,
    ),
  /** A nested options object; its options are named `<option>.<key>`. `rule` names a non-object. */
  object: <S extends Shape>(shape: S, rule = 'an object'): Schema<Parsed<S>, InputOf<S>> =>
    new Schema((value, option, problems) => {
      if (!isObject(value)) {
        problems.push({ option, rule, value });
        return value as Parsed<S>;
      }
      return parseShape(shape, value, `${option}.`, problems) as Parsed<S>;
    }),
  /** Values that pass `test`; `rule` says what they must be (may depend on the bad value). */
  custom: <T>(test: (value: unknown) => boolean, rule: string | ((value: unknown) => string)): Schema<T> =>
    leaf(test, rule),
  /** A plain object (not `null`, not an array) passed on as it is; `rule` names it. */
  record: <T extends object>(rule = 'an object'): Schema<T> => leaf(isObject, rule),
  /** An object with these methods (a port: a store, a backoff); `rule` names it. */
  methods: <T extends object>(rule: string, ...names: readonly string[]): Schema<T> =>
    leaf((v) => isObject(v) && names.every((m) => typeof v[m] === 'function'), rule),
  /** Anything (checked elsewhere, or any value is meaningful: a fallback's value). */
  any: <T>(): Schema<T> => new Schema((value) => value as T),
  /** A `Clock` (`now`, `setTimeout`, `clearTimeout`); default the system clock. */
  clock: (): Schema<Clock, Clock | undefined> =>
    leaf<Clock>(
      (c) =>
        isObject(c) &&
        typeof c.now === 'function' &&
        typeof c.setTimeout === 'function' &&
        typeof c.clearTimeout === 'function',
      'a Clock with now(), setTimeout() and clearTimeout()',
    ).default(systemClock),
};

type InputOf<S extends Shape> = {
  [K in keyof S]?: S[K] extends Schema<unknown, infer I> ? I : never;
};

/** A shape whose keys are exactly the options of `I`, each schema accepting that option's declared type. */
export type ShapeOf<I> = { readonly [K in keyof Required<I>]-?: Schema<unknown, I[K]> };

/** Records a cross-option problem from a `check` step of {@link defineOptions}. */
export type Report = (option: string, rule: string, value: unknown) => void;

/**
 * Declares the options of a component `I` (its public interface): `defineOptions<I>()(owner, shape,
 * check?)`. The shape must cover every option of `I`. `check` runs after the per-option schemas, for rules
 * across options (`maxDelayMs >= baseMs`), given the input too; it sees the parsed values (which may be bad: check what you use); an option
 * already reported is not reported twice.
 * @returns a parser: `parse(input)` gives the parsed options, typed, defaults applied.
 * @throws OptionsError (`RangeError`, `invalid_options`) from the parser, listing every bad option with
 *   `owner`; `options must be an object` when `input` is not one (`undefined` is `{}`).
 */
export function defineOptions<I>() {
  return <S extends ShapeOf<I>>(
    owner: string,
    shape: S,
    check?: (parsed: Parsed<S>, report: Report, input: Readonly<Record<string, unknown>>) => void,
  ): ((input: I | undefined) => Parsed<S>) => {
    return (input) => {
      const value: unknown = input ?? {};
      if (!isObject(value)) throw new OptionsError(owner, [{ option: 'options', rule: 'an object', value }]);
      const problems: Problems = [];
      const parsed = parseShape(shape, value, '', problems) as Parsed<S>;
      check?.(
        parsed,
        (option, rule, bad) => {
          // One problem per option: a value its own schema refused is not judged again.
          if (!problems.some((p) => p.option === option)) problems.push({ option, rule, value: bad });
        },
        value,
      );
      if (problems.length > 0) throw new OptionsError(owner, problems);
      return parsed;
    };
  };
}

/** `'a', 'b' or 'c'`: the allowed values as a rule. */
function listRule(allowed: readonly unknown[]): string {
  const names = allowed.map(describeValue);
  return (
    (names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0]) ??
    'nothing'
  );
}

/**
 * A problem's value that must not be shown or kept (a secret): the message shows `shown` instead (its
 * redacted form, `'whse…'`, or its kind), and `problems` holds this, never the secret.
 */
export class Redacted {
  constructor(readonly shown: string) {}
}

/**
 * `value` as a message shows it: numbers as they are, strings quoted (so `'10'` is told apart from `10`
 * and `''` is visible), functions and objects by kind, arrays of plain values in full, a {@link Redacted}
 * value as its `shown` text.
 */
function describeValue(value: unknown): string {
  if (value instanceof Redacted) return value.shown;
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
