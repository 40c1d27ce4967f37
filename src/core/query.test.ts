import { describe, expect, it } from 'vitest';
import { BreakwaterError } from './errors.js';
import { refuseRepeated, repeatableParameters } from './query.js';

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

function refusal(query: unknown, repeatable?: ReadonlySet<string>): unknown {
  try {
    refuseRepeated(query, repeatable);
  } catch (caught) {
    return caught;
  }
  return undefined;
}

describe('repeatableParameters', () => {
  it('every property typed as an array (alone or among others) or untyped; cached per schema', () => {
    expect([...repeatableParameters(SCHEMA)]).toEqual(['status', 'either', 'untyped']);
    expect(repeatableParameters(SCHEMA)).toBe(repeatableParameters(SCHEMA));
    expect([...repeatableParameters(undefined)]).toEqual([]);
    expect([...repeatableParameters({ type: 'object' })]).toEqual([]);
  });
});

describe('refuseRepeated', () => {
  it('refuses an array where one value is expected, naming the parameter and the count', () => {
    const repeatable = repeatableParameters(SCHEMA);
    expect(
      refusal({ status: ['a', 'b'], type: 'x', either: ['1', '2'], untyped: ['1', '2'] }, repeatable),
    ).toBeUndefined();
    expect(refusal(undefined, repeatable)).toBeUndefined();
    const error = refusal({ type: 'x', limit: ['1', '2', '3'] }, repeatable);
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error).toMatchObject({
      code: 'invalid_payload',
      status: 400,
      message: 'The query parameter limit was given 3 times; it takes one value.',
      details: { reason: 'repeated_parameter', parameter: 'limit' },
    });
  });

  it('a parameter the schema does not declare takes one value, and so does every one without a schema', () => {
    expect(refusal({ owner: ['a', 'b'] }, repeatableParameters(SCHEMA))).toMatchObject({
      message: 'The query parameter owner was given 2 times; it takes one value.',
      details: { reason: 'repeated_parameter', parameter: 'owner' },
    });
    expect(refusal({ status: ['a', 'b'] })).toMatchObject({
      details: { reason: 'repeated_parameter', parameter: 'status' },
    });
    expect(refusal({ status: 'a', limit: '1' })).toBeUndefined();
  });
});
