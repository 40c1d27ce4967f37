import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../../core/index.js';
import { jsonPath, modelSteps, parseRouteDefinition, type RouteNode } from './definition.js';

const model = (name: string, extra: object = {}) => ({
  type: 'model',
  name,
  provider: 'sim',
  model: name,
  ...extra,
});

/** The `details` of the invalid_route error `definition` gives. */
function refusal(
  definition: unknown,
  providers?: string[],
): { path: string; message: string; issues: unknown[] } {
  try {
    parseRouteDefinition(definition, { providers });
  } catch (error) {
    expect(error).toBeInstanceOf(BreakwaterError);
    const e = error as BreakwaterError;
    expect(e.code).toBe('invalid_payload');
    expect(e.status).toBe(400);
    expect(e.details?.reason).toBe('invalid_route');
    return { path: e.details!.path as string, message: e.message, issues: e.details!.issues as unknown[] };
  }
  throw new Error('expected the definition to be refused');
}

describe('route definitions', () => {
  it('accepts every node type, nested', () => {
    const definition = {
      type: 'limit',
      rule: { kind: 'spend', name: 'daily', budgetUsd: 5, windowMs: 86_400_000, scope: { by: 'provider' } },
      then: {
        type: 'conditional',
        branches: [
          {
            when: { tier: 'pro' },
            then: model('pro', { timeoutMs: 2000, maxAttempts: 2, backoff: 'linear' }),
          },
        ],
        default: {
          type: 'split',
          key: 'user',
          splits: [
            { weight: 90, then: { type: 'fallback', chain: [model('a'), model('b')] } },
            { weight: 10, then: model('c', { retryDelayMs: 0 }) },
          ],
        },
      },
      else: model('cheap'),
    };
    const parsed = parseRouteDefinition(definition, { providers: ['sim'] });
    expect(parsed).toEqual(definition);
    expect(modelSteps(parsed).map((s) => [s.step.name, s.path])).toEqual([
      ['pro', '$.then.branches[0].then'],
      ['a', '$.then.default.splits[0].then.chain[0]'],
      ['b', '$.then.default.splits[0].then.chain[1]'],
      ['c', '$.then.default.splits[1].then'],
      ['cheap', '$.else'],
    ]);
  });

  it('names the JSON path of the first bad field in the message and details', () => {
    const bad = refusal({ type: 'fallback', chain: [model('a'), { ...model('b'), timeoutMs: 0 }] });
    expect(bad.path).toBe('$.chain[1].timeoutMs');
    expect(bad.message).toBe(
      'The route definition is invalid at $.chain[1].timeoutMs: Too small: expected number to be >=1.',
    );
    expect(refusal({ type: 'fallback', chain: [{ type: 'modle' }] })).toMatchObject({
      path: '$.chain[0].type',
      message: expect.stringContaining('must be one of "model", "fallback", "conditional", "split", "limit"'),
    });
    expect(refusal(model('a', { extra: 1 })).message).toContain('Unrecognized key: "extra"');
    expect(refusal(model('a', { backoff: 'random' })).path).toBe('$.backoff');
    expect(refusal(model('a', { maxAttempts: 6 })).path).toBe('$.maxAttempts');
    expect(refusal(model('a', { retryDelayMs: 5001 })).path).toBe('$.retryDelayMs');
    expect(refusal(model('bad name')).path).toBe('$.name');
    expect(refusal({ type: 'fallback', chain: [] }).path).toBe('$.chain');
    expect(refusal([model('a')]).path).toBe('$');
    expect(refusal(null).path).toBe('$');
  });

  it('conditions: the path leads into the condition', () => {
    const bad = refusal({
      type: 'conditional',
      branches: [{ when: { $or: [{ tier: 'pro' }, { age: { $gte: '18', $bogus: 1 } }] }, then: model('a') }],
    });
    expect(bad.path).toBe('$.branches[0].when.$or[1].age.$bogus');
  });

  it('splits: weights add up to 100, each 0..100', () => {
    const split = (...weights: number[]) => ({
      type: 'split',
      splits: weights.map((weight, i) => ({ weight, then: model(`s${i}`) })),
    });
    expect(() => parseRouteDefinition(split(90, 10))).not.toThrow();
    expect(() => parseRouteDefinition(split(33.3, 33.3, 33.4))).not.toThrow();
    expect(() => parseRouteDefinition(split(100, 0))).not.toThrow();
    expect(refusal(split(90, 20))).toMatchObject({
      path: '$.splits',
      message: expect.stringContaining('add up to 100'),
    });
    expect(refusal(split(-10, 110)).path).toBe('$.splits[0].weight');
    expect(refusal({ ...split(100), key: '' }).path).toBe('$.key');
  });

  it('limit rules: the gateway rule shapes, with kind', () => {
    const limit = (rule: object) => ({ type: 'limit', rule, then: model('a') });
    expect(() =>
      parseRouteDefinition(
        limit({
          kind: 'rate',
          name: 'r',
          limit: 5,
          windowMs: 1000,
          technique: 'sliding',
          scope: { by: 'metadata', key: 'user' },
        }),
      ),
    ).not.toThrow();
    expect(
      refusal(limit({ kind: 'spend', name: 'b', budgetUsd: 0, windowMs: 1, scope: { by: 'model' } })).path,
    ).toBe('$.rule.budgetUsd');
    expect(
      refusal(
        limit({
          kind: 'rate',
          name: 'r',
          limit: 5,
          windowMs: 1000,
          technique: 'leaky',
          scope: { by: 'model' },
        }),
      ).path,
    ).toBe('$.rule.technique');
    expect(
      refusal(
        limit({ kind: 'spend', name: 'b', budgetUsd: 1, windowMs: 1, scope: { by: 'provider', key: 'x' } }),
      ).path,
    ).toBe('$.rule.scope');
    expect(refusal(limit({ kind: 'quota' })).path).toBe('$.rule.kind');
  });

  it('step names are unique unless they describe the same step; rule names are unique', () => {
    expect(() => parseRouteDefinition({ type: 'fallback', chain: [model('a'), model('a')] })).not.toThrow();
    expect(refusal({ type: 'fallback', chain: [model('a'), model('a', { model: 'other' })] })).toMatchObject({
      path: '$.chain[1].name',
      message: expect.stringContaining('another step is named "a" with other settings'),
    });
    const rule = {
      kind: 'rate',
      name: 'r',
      limit: 1,
      windowMs: 1000,
      technique: 'fixed',
      scope: { by: 'provider' },
    };
    expect(refusal({ type: 'limit', rule, then: { type: 'limit', rule, then: model('a') } }).path).toBe(
      '$.then.rule.name',
    );
  });

  it('checks providers when given', () => {
    expect(refusal(model('a', { provider: 'nope' }), ['sim', 'openai'])).toMatchObject({
      path: '$.provider',
      message: expect.stringContaining('there is no provider named "nope" (known: sim, openai)'),
    });
  });

  it('bounds depth and size, also for hostile nesting', () => {
    let deep: RouteNode = model('a') as RouteNode;
    for (let i = 0; i < 16; i++) deep = { type: 'fallback', chain: [deep] };
    expect(refusal(deep).message).toContain('nest at most 16 deep');
    let hostile: unknown = 1;
    for (let i = 0; i < 100_000; i++) hostile = [hostile];
    expect(refusal({ type: 'fallback', chain: hostile }).message).toContain('nested too deep');
    const wide = { type: 'fallback', chain: Array.from({ length: 33 }, (_, i) => model(`m${i}`)) };
    expect(refusal(wide).path).toBe('$.chain');
    const many = {
      type: 'fallback',
      chain: Array.from({ length: 32 }, (_, i) => ({
        type: 'fallback',
        chain: Array.from({ length: 8 }, (_, j) => model(`m${i}-${j}`)),
      })),
    };
    expect(refusal(many)).toMatchObject({ path: '$', message: expect.stringContaining('at most 256 nodes') });
  });

  it('jsonPath quotes keys that are not identifiers', () => {
    expect(jsonPath(['branches', 0, 'when', 'user id', '$in', 2])).toBe(
      '$.branches[0].when["user id"].$in[2]',
    );
  });
});
