import { describe, expect, it } from 'vitest';
import { BreakwaterError } from './errors.js';
import { checkSingleValued, singleValuedParameters } from './query.js';

const SCHEMA = {
  type: 'object',
  properties: {
    status: { type: 'array', items: { type: 'string' } },
    type: { type: 'string' },
    limit: { type: 'integer' },
    either: { type: ['string', 'array'] },
    nullable: { type: ['string', 'null'] },
    untyped: {},
  },
};

describe('singleValuedParameters', () => {
  it('every property typed, and not as an array; cached per schema', () => {
    expect(singleValuedParameters(SCHEMA)).toEqual(['type', 'limit', 'nullable']);
    expect(singleValuedParameters(SCHEMA)).toBe(singleValuedParameters(SCHEMA));
    expect(singleValuedParameters(undefined)).toEqual([]);
    expect(singleValuedParameters({ type: 'object' })).toEqual([]);
  });
});

describe('checkSingleValued', () => {
  it('refuses an array where one value is expected, naming the parameter and the count', () => {
    const names = singleValuedParameters(SCHEMA);
    expect(() =>
      checkSingleValued({ status: ['a', 'b'], type: 'x', either: ['1', '2'] }, names),
    ).not.toThrow();
    expect(() => checkSingleValued(undefined, names)).not.toThrow();
    let error: unknown;
    try {
      checkSingleValued({ type: 'x', limit: ['1', '2', '3'] }, names);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error).toMatchObject({
      code: 'invalid_payload',
      status: 400,
      message: 'The query parameter limit was given 3 times; it takes one value.',
      details: { reason: 'repeated_parameter', parameter: 'limit' },
    });
  });
});
