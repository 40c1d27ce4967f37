import { describe, expect, it } from 'vitest';
import { readUsage } from '../stream/sse.js';
import { scanUsage } from './usage-scan.js';
import { seeded } from '../../../test/support/random.js';

const scan = (text: string) => scanUsage(Buffer.from(text, 'utf8'));
/** What the gateway read before the scan: the whole body parsed. */
const parsed = (text: string) => readUsage((JSON.parse(text) as { usage?: unknown }).usage);

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1764633600,
  model: 'gift-ranker',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'A "usage": {"prompt_tokens": 9} {[ \\ ] } – café 🎁' },
      finish_reason: 'stop',
    },
  ],
  usage: { prompt_tokens: 57, completion_tokens: 120, total_tokens: 177 },
});

describe('scanUsage', () => {
  it('reads the usage of a completion whose text looks like JSON', () => {
    expect(scan(COMPLETION)).toEqual({ promptTokens: 57, completionTokens: 120, cachedTokens: 0 });
  });

  it('reads cached tokens, in any member order and with whitespace everywhere', () => {
    const text =
      ' \n{ "usage" :\t{ "prompt_tokens_details": { "cached_tokens": 40 }, "completion_tokens": 3,' +
      ' "prompt_tokens": 50 } ,\r\n "choices" : [ ] }\n';
    expect(scan(text)).toEqual({ promptTokens: 50, completionTokens: 3, cachedTokens: 40 });
  });

  it('takes the last top-level usage, as JSON.parse does, and never a nested one', () => {
    const text =
      '{"usage":{"prompt_tokens":1,"completion_tokens":1},"choices":[{"usage":{"prompt_tokens":7,' +
      '"completion_tokens":7}}],"usage":{"prompt_tokens":2,"completion_tokens":3}}';
    expect(scan(text)).toEqual({ promptTokens: 2, completionTokens: 3, cachedTokens: 0 });
    expect(scan(text)).toEqual(parsed(text));
    const nestedOnly = '{"choices":[{"message":{"usage":{"prompt_tokens":7,"completion_tokens":7}}}]}';
    expect(scan(nestedOnly)).toBeUndefined();
  });

  it('knows a key spelled with escapes, and a string that ends in escaped backslashes', () => {
    const text = '{"a":"\\\\","b":"x\\\\\\"y","\\u0075sage":{"prompt_tokens":4,"completion_tokens":5}}';
    expect(JSON.parse(text)).toHaveProperty('usage');
    expect(scan(text)).toEqual({ promptTokens: 4, completionTokens: 5, cachedTokens: 0 });
  });

  it('is undefined for every truncation of a body, trailing bytes, a BOM and what is not an object', () => {
    for (let n = 0; n < COMPLETION.length; n++) expect(scan(COMPLETION.slice(0, n))).toBeUndefined();
    expect(scan(`${COMPLETION}x`)).toBeUndefined();
    expect(scan(`${COMPLETION}{}`)).toBeUndefined();
    expect(scan(`\uFEFF${COMPLETION}`)).toBeUndefined();
    expect(scan('[{"usage":{"prompt_tokens":1,"completion_tokens":1}}]')).toBeUndefined();
    expect(scan('"usage"')).toBeUndefined();
    expect(scan('{}')).toBeUndefined();
    expect(scan('')).toBeUndefined();
  });

  it('is undefined for brackets that do not match and members without a value', () => {
    const usage = '"usage":{"prompt_tokens":1,"completion_tokens":1}';
    for (const broken of [
      `{"a":[1,2},${usage}}`,
      `{"a":{"b":1]},${usage}}`,
      `{"a":]},${usage}}`,
      `{"a":,${usage}}`,
      `{"a"${usage}}`,
      `{"a":1 ${usage}}`,
      `{${usage},}`,
      `{"usage":{"prompt_tokens":1,"completion_tokens":1}`,
    ]) {
      expect(scan(broken), broken).toBeUndefined();
    }
  });

  it('is undefined when the usage itself is not usable', () => {
    expect(scan('{"usage":null}')).toBeUndefined();
    expect(scan('{"usage":{"prompt_tokens":1.5,"completion_tokens":1}}')).toBeUndefined();
    expect(scan('{"usage":{"prompt_tokens":1,"completion_tokens":1,}}')).toBeUndefined();
    expect(scan('{"usage":[1,2]}')).toBeUndefined();
  });

  it('follows nesting deeper than the bits of one number', () => {
    const deep = (n: number) => '[{"a":'.repeat(n) + '1' + '}]'.repeat(n);
    const usage = '"usage":{"prompt_tokens":8,"completion_tokens":9}';
    expect(scan(`{"x":${deep(80)},${usage}}`)).toEqual({
      promptTokens: 8,
      completionTokens: 9,
      cachedTokens: 0,
    });
    const mismatched = '[{"a":'.repeat(80) + '1' + '}]'.repeat(20) + ']}' + '}]'.repeat(59);
    expect(() => JSON.parse(`{"x":${mismatched},${usage}}`)).toThrow();
    expect(scan(`{"x":${mismatched},${usage}}`)).toBeUndefined();
  });

  it('agrees with parsing the whole body on 3,000 generated documents', () => {
    const random = seeded(20261202);
    let withUsage = 0;
    for (let n = 0; n < 3_000; n++) {
      const text = documentText(random);
      const expected = parsed(text);
      if (expected !== undefined) withUsage++;
      expect(scan(text), text).toEqual(expected);
    }
    // The generator makes both kinds, so the comparison covers both.
    expect(withUsage).toBeGreaterThan(500);
    expect(withUsage).toBeLessThan(2_500);
  });
});

const TRICKY_STRINGS = ['', 'usage', '"usage":{', '\\', '\\"', '}]{[', 'café 🎁', '\n\t', '\u0000', 'a,b:c'];

function documentText(random: () => number): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const space = () => pick(['', '', ' ', '\n', '\t ', '\r\n  ']);
  const usageValue = (): unknown =>
    pick([
      { prompt_tokens: 11, completion_tokens: 22 },
      { completion_tokens: 3, prompt_tokens: 4, prompt_tokens_details: { cached_tokens: 2 } },
      { prompt_tokens: 1 },
      null,
      'usage',
      [1, 2],
    ]);
  const value = (depth: number): unknown => {
    const r = random();
    if (depth > 4 || r < 0.35)
      return pick([0, -1.5e-3, 12345678901234, true, false, null, pick(TRICKY_STRINGS)]);
    if (r < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    const object: Record<string, unknown> = {};
    for (let k = Math.floor(random() * 4); k > 0; k--) {
      object[random() < 0.2 ? 'usage' : pick(TRICKY_STRINGS)] =
        random() < 0.3 ? usageValue() : value(depth + 1);
    }
    return object;
  };
  // Serialize by hand, so the whitespace between tokens varies and a top-level key may repeat.
  const text = (v: unknown): string => {
    if (Array.isArray(v))
      return `[${space()}${v.map((x) => text(x)).join(`${space()},${space()}`)}${space()}]`;
    if (typeof v === 'object' && v !== null) {
      const members = Object.entries(v).map(
        ([k, x]) => `${JSON.stringify(k)}${space()}:${space()}${text(x)}`,
      );
      return `{${space()}${members.join(`${space()},${space()}`)}${space()}}`;
    }
    return JSON.stringify(v);
  };
  const members: string[] = [];
  for (let k = Math.floor(random() * 5); k >= 0; k--) {
    const key = random() < 0.4 ? pick(['usage', 'usage', '\\u0075sage']) : pick(TRICKY_STRINGS);
    const encoded = key === '\\u0075sage' ? `"${key}"` : JSON.stringify(key);
    const v = key.endsWith('sage') && random() < 0.8 ? usageValue() : value(0);
    members.push(`${encoded}${space()}:${space()}${text(v)}`);
  }
  return `${space()}{${space()}${members.join(`${space()},${space()}`)}${space()}}${space()}`;
}
