import { describe, expect, it } from 'vitest';
import {
  NON_NEGATIVE,
  POSITIVE,
  POSITIVE_INTEGER,
  bool,
  finite,
  fraction,
  invalidOption,
  nonEmptyString,
  oneOf,
  optionalFn,
  optionalObject,
  OptionsError,
  Redacted,
  Schema,
  defineOptions,
  o,
} from './options.js';
import { systemClock, type Clock } from './clock.js';

function messageOf(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(RangeError);
    return (error as Error).message;
  }
  throw new Error('expected a RangeError');
}

describe('option checks', () => {
  it('share one message format: owner, option, rule and the value', () => {
    expect(invalidOption('retry', 'backoff', 'a Backoff', 3).message).toBe(
      'retry: backoff must be a Backoff, got 3',
    );
  });

  it('finite: returns the number; the rule names its bounds', () => {
    expect(finite('t', 'x', 5)).toBe(5);
    expect(finite('t', 'x', 0, NON_NEGATIVE)).toBe(0);
    expect(messageOf(() => finite('timeout', 'timeoutMs', 0, POSITIVE))).toBe(
      'timeout: timeoutMs must be a finite number > 0, got 0',
    );
    expect(messageOf(() => finite('t', 'x', -1, NON_NEGATIVE))).toBe(
      't: x must be a finite number >= 0, got -1',
    );
    expect(messageOf(() => finite('t', 'x', 1.5, POSITIVE_INTEGER))).toBe(
      't: x must be an integer >= 1, got 1.5',
    );
    expect(messageOf(() => finite('t', 'x', 11, { ...POSITIVE_INTEGER, max: 10 }))).toBe(
      't: x must be an integer in [1, 10], got 11',
    );
    expect(messageOf(() => finite('t', 'x', 2, { max: 1 }))).toBe('t: x must be a finite number <= 1, got 2');
  });

  it('finite: refuses NaN, Infinity (unless allowed) and numeric strings', () => {
    expect(messageOf(() => finite('t', 'x', Number.NaN))).toMatch(/got NaN$/);
    expect(messageOf(() => finite('t', 'x', Infinity))).toMatch(/got Infinity$/);
    expect(messageOf(() => finite('t', 'x', '10'))).toBe("t: x must be a finite number, got '10'");
    const attempts = { ...POSITIVE_INTEGER, infinity: true };
    expect(finite('retry', 'maxAttempts', Infinity, attempts)).toBe(Infinity);
    expect(messageOf(() => finite('retry', 'maxAttempts', 0, attempts))).toBe(
      'retry: maxAttempts must be an integer >= 1 or Infinity, got 0',
    );
    expect(() => finite('t', 'x', -Infinity, attempts)).toThrow(RangeError);
  });

  it('fraction: (0, 1] by default, [0, 1] with allowZero', () => {
    expect(fraction('t', 'x', 1)).toBe(1);
    expect(fraction('t', 'x', 0, true)).toBe(0);
    expect(messageOf(() => fraction('t', 'x', 0))).toBe('t: x must be a fraction in (0, 1], got 0');
    expect(messageOf(() => fraction('t', 'x', 1.5, true))).toBe('t: x must be a fraction in [0, 1], got 1.5');
    expect(() => fraction('t', 'x', '0.5')).toThrow(RangeError);
  });

  it('optionalFn and optionalObject let undefined through', () => {
    const f = (): number => 1;
    expect(optionalFn('t', 'f', f)).toBe(f);
    expect(optionalFn('t', 'f', undefined)).toBeUndefined();
    expect(messageOf(() => optionalFn('retry', 'shouldRetry', 'yes'))).toBe(
      "retry: shouldRetry must be a function, got 'yes'",
    );
    expect(optionalObject('t', 'o', undefined)).toBeUndefined();
    expect(messageOf(() => optionalObject('t', 'o', null as never))).toBe(
      't: o must be an object or left out, got null',
    );
    expect(() => optionalObject('t', 'o', [] as never)).toThrow(/an object or left out, got \[\]/);
  });

  it('oneOf lists the allowed values; bool and nonEmptyString', () => {
    expect(oneOf('t', 's', 'a', ['a', 'b'])).toBe('a');
    expect(messageOf(() => oneOf('timeout', 'strategy', 'eager', ['aggressive', 'cooperative']))).toBe(
      "timeout: strategy must be 'aggressive' or 'cooperative', got 'eager'",
    );
    expect(messageOf(() => oneOf('t', 'j', 1, ['none', 'full', 'equal']))).toBe(
      "t: j must be 'none', 'full' or 'equal', got 1",
    );
    expect(bool('t', 'b', false)).toBe(false);
    expect(messageOf(() => bool('t', 'b', 'yes'))).toBe("t: b must be a boolean, got 'yes'");
    expect(nonEmptyString('t', 'name', 'x')).toBe('x');
    expect(messageOf(() => nonEmptyString('t', 'name', ''))).toBe(
      "t: name must be a non-empty string, got ''",
    );
  });

  it('shows values by kind, without dumping objects', () => {
    expect(messageOf(() => finite('t', 'x', {}))).toMatch(/got an object$/);
    expect(messageOf(() => finite('t', 'x', () => 1))).toMatch(/got a function$/);
    expect(messageOf(() => finite('t', 'x', [5, 1]))).toMatch(/got \[5, 1\]$/);
    expect(messageOf(() => finite('t', 'x', undefined))).toMatch(/got undefined$/);
    expect(messageOf(() => finite('t', 'x', 'y'.repeat(100)))).toMatch(/got 'y{57}\.\.\.'$/);
  });
});

describe('defineOptions', () => {
  interface Opts {
    name?: string;
    limit: number;
    share?: number;
    mode?: 'a' | 'b';
    onEvent?: (n: number) => void;
    nested?: { factor?: number; maxMs: number };
    clock?: Clock;
  }
  const parse = defineOptions<Opts>()(
    'widget',
    {
      name: o.string().min(1).default('widget'),
      limit: o.number().int().min(1).orInfinity(),
      share: o.fraction(true).default(0.5),
      mode: o.enum(['a', 'b'] as const).default('a'),
      onEvent: o.fn<(n: number) => void>().optional(),
      nested: o
        .object(
          { factor: o.number().min(1).default(2), maxMs: o.number().positive() },
          'an object { factor?, maxMs }',
        )
        .optional(),
      clock: o.clock(),
    },
    (p, report) => {
      if (p.nested !== undefined && p.limit !== Infinity && p.nested.maxMs < p.limit) {
        report('nested.maxMs', `a number >= limit (${p.limit})`, p.nested.maxMs);
      }
    },
  );

  it('applies the defaults and returns the options typed', () => {
    const p = parse({ limit: 3 });
    expect(p).toEqual({
      name: 'widget',
      limit: 3,
      share: 0.5,
      mode: 'a',
      onEvent: undefined,
      nested: undefined,
      clock: systemClock,
    });
    expect(parse({ limit: Infinity, nested: { maxMs: 5 } }).nested).toEqual({ factor: 2, maxMs: 5 });
  });

  it('reports every bad option at once, in one OptionsError naming the owner', () => {
    let error: unknown;
    try {
      parse({
        name: '',
        limit: 0,
        share: 2,
        mode: 'c' as never,
        onEvent: 1 as never,
        nested: { factor: 0, maxMs: -1 },
        clock: {} as never,
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OptionsError);
    expect(error).toBeInstanceOf(RangeError);
    const e = error as OptionsError;
    expect(e.code).toBe('invalid_options');
    expect(e.owner).toBe('widget');
    expect(e.problems.map((p) => p.option)).toEqual([
      'name',
      'limit',
      'share',
      'mode',
      'onEvent',
      'nested.factor',
      'nested.maxMs',
      'clock',
    ]);
    expect(e.message).toBe(
      "widget: name must be a non-empty string, got ''; limit must be an integer >= 1 or Infinity, got 0; " +
        "share must be a fraction in [0, 1], got 2; mode must be 'a' or 'b', got 'c'; onEvent must be a function, got 1; " +
        'nested.factor must be a finite number >= 1, got 0; nested.maxMs must be a finite number > 0, got -1; ' +
        'clock must be a Clock with now(), setTimeout() and clearTimeout(), got an object',
    );
  });

  it('runs the cross-option check and names a non-object', () => {
    expect(() => parse({ limit: 10, nested: { maxMs: 5 } })).toThrow(
      'widget: nested.maxMs must be a number >= limit (10), got 5',
    );
    expect(() => parse({ limit: 1, nested: 3 as never })).toThrow(
      'widget: nested must be an object { factor?, maxMs }, got 3',
    );
    expect(() => parse(7 as never)).toThrow('widget: options must be an object, got 7');
  });

  it('refine adds a rule to a value that passed', () => {
    const even = o
      .number()
      .int()
      .refine((n) => n % 2 === 0, 'an even integer');
    const problems: { option: string }[] = [];
    even.check(3, 'n', problems as never);
    expect(problems).toEqual([{ option: 'n', rule: 'an even integer', value: 3 }]);
  });

  it('shows a Redacted value as its text, never the secret', () => {
    const secret = o.custom<string>(
      (v) => typeof v === 'string' && v.startsWith('whsec_'),
      "a 'whsec_' secret",
    );
    const parse = defineOptions<{ key: string }>()('signer', {
      key: new Schema<string, string>((value, option, problems) => {
        const before = problems.length;
        secret.check(value, option, problems);
        if (problems.length > before)
          problems[before] = { ...problems[before]!, value: new Redacted("'sk_l…'") };
        return value as string;
      }),
    });
    let caught: unknown;
    try {
      parse({ key: 'sk_live_123' });
    } catch (error) {
      caught = error;
    }
    expect((caught as OptionsError).message).toBe("signer: key must be a 'whsec_' secret, got 'sk_l…'");
    expect(JSON.stringify((caught as OptionsError).problems)).not.toContain('sk_live_123');
  });
});
