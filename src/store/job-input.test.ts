import { describe, expect, it } from 'vitest';
import { NO_INPUT, answeredInput, firstToExpire, inputOf, type InputRequest } from './job-input.js';

const ask = (key: string, expiresAt: number | null): InputRequest => ({
  key,
  message: `Question ${key}?`,
  schema: null,
  askedAt: 1_000,
  expiresAt,
});

describe('job input state', () => {
  it('reads a state stored with one question only as that one open question', () => {
    const request = ask('0', null);
    expect(inputOf({ request, answers: { a: 1 }, rounds: 2 })).toEqual({
      request,
      requests: [request],
      answers: { a: 1 },
      rounds: 2,
    });
    expect(inputOf({ request: null, answers: {}, rounds: 1 })).toEqual({
      request: null,
      requests: [],
      answers: {},
      rounds: 1,
    });
    expect(inputOf(null)).toBe(NO_INPUT);
  });

  it('the deadline is the earliest expiry; answering one keeps the others open in order', () => {
    const a = ask('a', 9_000);
    const b = ask('b', null);
    const c = ask('c', 4_000);
    expect(firstToExpire([a, b, c])).toBe(c);
    expect(firstToExpire([b])).toBeUndefined();
    const state = answeredInput({ request: a, requests: [a, b, c], answers: {}, rounds: 1 }, 'a', 'yes');
    expect(state).toEqual({ request: b, requests: [b, c], answers: { a: 'yes' }, rounds: 1 });
  });
});
