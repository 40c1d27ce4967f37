import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BreakwaterError } from './errors.js';
import { canonicalJson, checkedJson, fingerprint } from './fingerprint.js';

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** The IEEE 754 double with the given 16 hex digit bit pattern (RFC 8785, appendix B lists them so). */
function double(hex: string): number {
  return Buffer.from(hex, 'hex').readDoubleBE(0);
}

describe('canonicalJson', () => {
  it('ignores key order, at every depth', () => {
    const a = { b: 1, a: { d: [1, 2], c: null } };
    const b = { a: { c: null, d: [1, 2] }, b: 1 };
    expect(canonicalJson(a)).toBe('{"a":{"c":null,"d":[1,2]},"b":1}');
    expect(canonicalJson(b)).toBe(canonicalJson(a));
    expect(fingerprint(b)).toBe(fingerprint(a));
    // Array order is data, not presentation.
    expect(fingerprint([1, 2])).not.toBe(fingerprint([2, 1]));
  });

  it('formats numbers as RFC 8785, appendix B', () => {
    const cases: [string, string][] = [
      ['0000000000000000', '0'],
      ['8000000000000000', '0'],
      ['0000000000000001', '5e-324'],
      ['8000000000000001', '-5e-324'],
      ['7fefffffffffffff', '1.7976931348623157e+308'],
      ['ffefffffffffffff', '-1.7976931348623157e+308'],
      ['4340000000000000', '9007199254740992'],
      ['c340000000000000', '-9007199254740992'],
      ['4430000000000000', '295147905179352830000'],
      ['44b52d02c7e14af5', '9.999999999999997e+22'],
      ['44b52d02c7e14af6', '1e+23'],
      ['44b52d02c7e14af7', '1.0000000000000001e+23'],
      ['444b1ae4d6e2ef4e', '999999999999999700000'],
      ['444b1ae4d6e2ef4f', '999999999999999900000'],
      ['444b1ae4d6e2ef50', '1e+21'],
      ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
      ['3eb0c6f7a0b5ed8d', '0.000001'],
      ['41b3de4355555553', '333333333.3333332'],
      ['41b3de4355555554', '333333333.33333325'],
      ['41b3de4355555555', '333333333.3333333'],
      ['41b3de4355555556', '333333333.3333334'],
      ['41b3de4355555557', '333333333.33333343'],
      ['becbf647612f3696', '-0.0000033333333333333333'],
      ['43143ff3c1cb0959', '1424953923781206.2'],
    ];
    for (const [bits, text] of cases) expect(canonicalJson(double(bits))).toBe(text);
    expect(canonicalJson([1e21, 0.1, -0, 1e-7, 4.5, 2e-3, 100])).toBe('[1e+21,0.1,0,1e-7,4.5,0.002,100]');
  });

  it('matches the RFC 8785, section 3.2.2 sample', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
        ' "literals": [null, true, false]}',
    ) as unknown;
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('sorts keys by UTF-16 code units (RFC 8785, section 3.2.3) and keeps unicode as is', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    expect(canonicalJson(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    expect(canonicalJson({ name: 'Grüße 😀 日本' })).toBe('{"name":"Grüße 😀 日本"}');
    expect(canonicalJson('\u2028\u0000')).toBe('"\u2028\\u0000"');
  });

  it('follows JSON.stringify for members and elements that have no JSON form', () => {
    const value = {
      keep: 1,
      undef: undefined,
      fn: () => 1,
      sym: Symbol('s'),
      list: [undefined, () => 1, Symbol('s'), 2],
      // eslint-disable-next-line no-sparse-arrays
      holes: [, 1, , 2],
      date: new Date(Date.UTC(2026, 0, 1)),
      custom: { toJSON: (key: string) => `custom:${key}` },
      boxed: [Object(1), Object('s'), Object(false)],
    };
    const text = canonicalJson(value);
    expect(text).toBe(
      '{"boxed":[1,"s",false],"custom":"custom:custom","date":"2026-01-01T00:00:00.000Z",' +
        '"holes":[null,1,null,2],"keep":1,"list":[null,null,null,2]}',
    );
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
    expect(canonicalJson({ a: { toJSON: () => undefined } })).toBe('{}');
    expect(canonicalJson([])).toBe('[]');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson(null)).toBe('null');
  });

  it('serializes values nested far deeper than the stack allows recursion (iterative), ignoring key order', () => {
    const levels = 100_000;
    let a: unknown = { z: 1, a: null };
    let b: unknown = { a: null, z: 1 };
    for (let i = 0; i < levels; i++) {
      a = { b: [a], a: i };
      b = { a: i, b: [b] };
    }
    const text = canonicalJson(a);
    expect(text.startsWith(`{"a":${levels - 1},"b":[{"a":${levels - 2},"b":[`)).toBe(true);
    expect(text.endsWith(`{"a":null,"z":1}]}`.concat(']}'.repeat(levels - 1)))).toBe(true);
    expect(text).toBe(canonicalJson(b));
    // The same text JSON.parse reads back (parsing is iterative): 200,000 levels of objects and arrays.
    let depth = 0;
    for (let v = JSON.parse(text) as { b?: unknown[] }; v.b !== undefined; v = v.b[0] as { b?: unknown[] })
      depth++;
    expect(depth).toBe(levels);
  });

  it('allows repeated (non-cyclic) references', () => {
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: [shared, shared] })).toBe('{"a":{"x":1},"b":[{"x":1},{"x":1}]}');
  });

  it.each([
    ['undefined', undefined],
    ['a function', () => 1],
    ['a symbol', Symbol('s')],
    ['a BigInt', 1n],
    ['a nested BigInt', { a: [1n] }],
    ['NaN', Number.NaN],
    ['Infinity', { n: Infinity }],
    ['-Infinity', [-Infinity]],
    [
      'a cycle',
      (() => {
        const o: Record<string, unknown> = {};
        o.self = { o };
        return o;
      })(),
    ],
    [
      'a throwing toJSON',
      {
        toJSON: () => {
          throw new Error('nope');
        },
      },
    ],
  ])('throws invalid_payload for %s', (_name, value) => {
    const error = caught(() => canonicalJson(value));
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error).toMatchObject({ code: 'invalid_payload', kind: 'permanent', status: 400 });
    expect(caught(() => fingerprint(value))).toMatchObject({ code: 'invalid_payload' });
  });
});

describe('fingerprint', () => {
  it('is the SHA-256 hex of the canonical text', () => {
    const canonical = '{"amount":1999,"currency":"EUR","items":[{"qty":2,"sku":"mug-01"}],"note":"für dich"}';
    const expected = createHash('sha256').update(canonical, 'utf8').digest('hex');
    const value = { note: 'für dich', items: [{ sku: 'mug-01', qty: 2 }], currency: 'EUR', amount: 1999 };
    expect(canonicalJson(value)).toBe(canonical);
    expect(fingerprint(value)).toBe(expected);
    expect(fingerprint(value)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('matches the well-known SHA-256 of "{}"', () => {
    expect(fingerprint({})).toBe('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  });
});

describe('checkedJson (deep values)', () => {
  it('a value nested past what JSON.stringify can recurse: invalid_payload saying it nests too deep', () => {
    let deep: unknown = [];
    for (let i = 0; i < 20_000; i++) deep = [deep];
    const error = caught(() => checkedJson({ payload: deep })) as BreakwaterError;
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error.code).toBe('invalid_payload');
    expect(error.message).toBe('The value nests too deep to serialize as JSON.');
  });
});

describe('checkedJson', () => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const values: [string, unknown][] = [
    ['a number', 1.5],
    ['a string', 'héllo "q"'],
    ['null', null],
    ['an object', { b: 2, a: [1, 'x', null, true] }],
    ['undefined members and elements', { a: undefined, f: () => 1, list: [undefined, () => 1] }],
    ['NaN', NaN],
    ['Infinity deep inside', { a: { b: [1, 2, { c: Infinity }] } }],
    ['-Infinity in an array', [-Infinity]],
    ['a boxed NaN', { n: new Number(NaN) }],
    ['a boxed number', new Number(3)],
    ['a BigInt', 10n],
    ['a BigInt member', { b: 10n }],
    ['a cycle', cyclic],
    ['undefined', undefined],
    ['a function', () => 1],
    ['a symbol', Symbol('s')],
    ['toJSON returning NaN', { toJSON: () => NaN }],
    ['toJSON returning a value', { when: { toJSON: () => '2020-01-01' } }],
    ['a Date', new Date(0)],
    ['boxed string and boolean', [new String('s'), new Boolean(false)]],
  ];

  it.each(values)('refuses and accepts exactly what canonicalJson does: %s', (_name, value) => {
    let canonical: string | Error;
    let checked: string | Error;
    try {
      canonical = canonicalJson(value);
    } catch (error) {
      canonical = error as Error;
    }
    try {
      checked = checkedJson(value);
    } catch (error) {
      checked = error as Error;
    }
    if (canonical instanceof Error) {
      expect(checked).toBeInstanceOf(BreakwaterError);
      expect((checked as BreakwaterError).code).toBe('invalid_payload');
      expect((checked as Error).message).toBe(canonical.message);
    } else {
      expect(typeof checked).toBe('string');
      expect(JSON.parse(checked as string)).toEqual(JSON.parse(canonical));
      expect(checked).toBe(JSON.stringify(value));
    }
  });
});
