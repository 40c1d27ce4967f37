import { describe, expect, it } from 'vitest';
import { BreakwaterError } from './errors.js';
import { MAX_JSON_DEPTH, checkJsonDepth, jsonDepthExceeds, tooDeep } from './json-depth.js';

/** `levels` arrays one inside the other, `leaf` innermost. */
function nest(levels: number, leaf: unknown = 1): unknown {
  let value: unknown = leaf;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

describe('jsonDepthExceeds', () => {
  it('counts arrays and objects: a scalar is 0 levels, [] one, {"a":[1]} two', () => {
    expect(jsonDepthExceeds('text', 0)).toBe(false);
    expect(jsonDepthExceeds(null, 0)).toBe(false);
    expect(jsonDepthExceeds([], 0)).toBe(true);
    expect(jsonDepthExceeds([], 1)).toBe(false);
    expect(jsonDepthExceeds({ a: [1] }, 1)).toBe(true);
    expect(jsonDepthExceeds({ a: [1] }, 2)).toBe(false);
  });

  it('at the default limit: 64 levels pass, 65 do not, whichever branch is the deep one', () => {
    expect(MAX_JSON_DEPTH).toBe(64);
    expect(jsonDepthExceeds(nest(64))).toBe(false);
    expect(jsonDepthExceeds(nest(65))).toBe(true);
    const wide = { a: Array.from({ length: 1000 }, () => ({ b: [1, 2] })), z: { deep: nest(63) } };
    expect(jsonDepthExceeds(wide)).toBe(true); // { z: { deep: 63 levels } } = 65
    expect(jsonDepthExceeds({ z: nest(63) })).toBe(false);
  });

  it('walks a million levels (as JSON.parse builds them) without recursion', () => {
    const levels = 1_000_000;
    expect(jsonDepthExceeds(JSON.parse('['.repeat(levels) + ']'.repeat(levels)))).toBe(true);
  });

  it('a cycle counts as too deep', () => {
    const a: Record<string, unknown> = { n: 1 };
    a.self = a;
    expect(jsonDepthExceeds(a)).toBe(true);
  });
});

describe('checkJsonDepth and tooDeep', () => {
  it('throws the 400 naming the subject and the limit', () => {
    expect(() => checkJsonDepth(nest(64))).not.toThrow();
    let error: unknown;
    try {
      checkJsonDepth(nest(10), 'The shop webhook body', 8);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error).toMatchObject({
      code: 'invalid_payload',
      status: 400,
      message: 'The shop webhook body nests too deep: at most 8 levels of arrays and objects are accepted.',
      details: { reason: 'too_deep', max_depth: 8 },
    });
    expect(tooDeep().message).toBe(
      'The request body nests too deep: at most 64 levels of arrays and objects are accepted.',
    );
  });
});
