import { describe, expect, it } from 'vitest';
import type { Metadata } from '../types.js';
import { compileCondition, conditionSchema, type RouteCondition } from './conditions.js';

function holds(condition: RouteCondition, metadata: Metadata): boolean {
  expect(conditionSchema.safeParse(condition).success).toBe(true);
  return compileCondition(condition)(metadata);
}

describe('route conditions', () => {
  it('a bare value is $eq, strict: present with that exact value', () => {
    expect(holds({ tier: 'pro' }, { tier: 'pro' })).toBe(true);
    expect(holds({ tier: 'pro' }, { tier: 'Pro' })).toBe(false);
    expect(holds({ n: 1 }, { n: '1' })).toBe(false);
    expect(holds({ n: null }, { n: null })).toBe(true);
    expect(holds({ n: null }, {})).toBe(false);
    expect(holds({ a: 1, b: true }, { a: 1, b: true })).toBe(true);
    expect(holds({ a: 1, b: true }, { a: 1, b: false })).toBe(false);
  });

  it('$ne, $nin hold for an absent key; $eq, $in do not', () => {
    expect(holds({ tier: { $ne: 'free' } }, {})).toBe(true);
    expect(holds({ tier: { $ne: 'free' } }, { tier: 'free' })).toBe(false);
    expect(holds({ tier: { $nin: ['free', 'trial'] } }, {})).toBe(true);
    expect(holds({ tier: { $nin: ['free', 'trial'] } }, { tier: 'trial' })).toBe(false);
    expect(holds({ tier: { $in: ['pro', 'team'] } }, { tier: 'team' })).toBe(true);
    expect(holds({ tier: { $in: ['pro', 'team'] } }, {})).toBe(false);
    expect(holds({ tier: { $eq: 'pro' } }, {})).toBe(false);
  });

  it('$gt $gte $lt $lte compare numbers with numbers and strings with strings only', () => {
    expect(holds({ age: { $gte: 18, $lt: 65 } }, { age: 18 })).toBe(true);
    expect(holds({ age: { $gte: 18, $lt: 65 } }, { age: 65 })).toBe(false);
    expect(holds({ age: { $gt: 18 } }, { age: '30' })).toBe(false);
    expect(holds({ age: { $lte: 18 } }, {})).toBe(false);
    expect(holds({ day: { $gt: '2026-01-01' } }, { day: '2026-02-01' })).toBe(true);
    expect(holds({ day: { $lt: '2026-01-01' } }, { day: 20260201 })).toBe(false);
  });

  it('$exists: a null value is present', () => {
    expect(holds({ k: { $exists: true } }, { k: null })).toBe(true);
    expect(holds({ k: { $exists: true } }, {})).toBe(false);
    expect(holds({ k: { $exists: false } }, {})).toBe(true);
    expect(holds({ k: { $exists: false } }, { k: 0 })).toBe(false);
  });

  it('$and, $or nest; keys of one object all hold', () => {
    const c: RouteCondition = {
      region: 'eu',
      $or: [{ tier: 'pro' }, { $and: [{ spend: { $gt: 100 } }, { spend: { $lte: 1000 } }] }],
    };
    expect(holds(c, { region: 'eu', tier: 'pro' })).toBe(true);
    expect(holds(c, { region: 'eu', spend: 500 })).toBe(true);
    expect(holds(c, { region: 'eu', spend: 5000 })).toBe(false);
    expect(holds(c, { region: 'us', tier: 'pro' })).toBe(false);
  });

  it('metadata with a null prototype (as the header parser makes it) and keys like "constructor"', () => {
    const m = Object.assign(Object.create(null) as Record<string, string>, { tier: 'pro' });
    expect(holds({ tier: 'pro' }, m)).toBe(true);
    expect(holds({ constructor: { $exists: true } }, {})).toBe(false);
  });

  it('refuses bad conditions with the path of the bad part', () => {
    const paths = (c: unknown) => {
      const r = conditionSchema.safeParse(c);
      return r.success ? [] : r.error.issues.map((i) => [i.path.join('.'), i.message]);
    };
    expect(paths({})).toEqual([['', 'must test at least one metadata key']]);
    expect(paths({ tier: { $foo: 1 } })).toEqual([
      ['tier.$foo', 'unknown operator "$foo" (known: $eq $ne $in $nin $gt $gte $lt $lte $exists)'],
    ]);
    expect(paths({ $not: [{ a: 1 }] })[0]![1]).toMatch(/unknown combinator "\$not"/);
    expect(paths({ age: { $gt: true } })[0]).toEqual([
      'age.$gt',
      'must be a finite number or a string (at most 256 characters)',
    ]);
    expect(paths({ tier: { $in: [] } })[0]![0]).toBe('tier.$in');
    expect(paths({ tier: ['a'] })[0]![0]).toBe('tier');
    expect(paths({ $or: [{ a: 1 }, { b: { $exists: 'yes' } }] })[0]![0]).toBe('$or.1.b.$exists');
    expect(paths({ tier: {} })[0]).toEqual(['tier', 'must name at least one operator']);
  });
});
