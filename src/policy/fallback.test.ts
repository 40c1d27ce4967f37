import { describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../core/index.js';
import { constantBackoff } from './backoff.js';
import { defaultShouldFallback, fallback, type FallbackEvent } from './fallback.js';
import { pipeline } from './pipeline.js';
import { retry } from './retry.js';
import type { PolicyContext } from './types.js';

function httpError(status: number): Error {
  return Object.assign(new Error(`HTTP ${status}`), { status });
}

describe('FallbackPolicy', () => {
  it('returns the value on a transient failure and emits onFallback', async () => {
    const policy = fallback({ value: ['default gift'], name: 'gifts' });
    const events: FallbackEvent[] = [];
    policy.onFallback((e) => events.push(e));
    const error = httpError(503);
    await expect(policy.execute<string[]>(() => Promise.reject(error))).resolves.toEqual(['default gift']);
    expect(events).toEqual([{ name: 'gifts', error }]);
  });

  it('returns the result untouched on success, without an event', async () => {
    const policy = fallback({ value: 0 });
    const events: FallbackEvent[] = [];
    policy.onFallback((e) => events.push(e));
    await expect(policy.execute(() => 42)).resolves.toBe(42);
    expect(events).toEqual([]);
  });

  it('calls the handler with the failure and the context; it may be async', async () => {
    const seen: [unknown, PolicyContext][] = [];
    const policy = fallback({
      fallback: async (error, ctx) => {
        seen.push([error, ctx]);
        return 'cached';
      },
    });
    const error = new BreakwaterError('circuit_open');
    const controller = new AbortController();
    await expect(policy.execute(() => Promise.reject(error), controller.signal)).resolves.toBe('cached');
    expect(seen).toHaveLength(1);
    expect(seen[0]![0]).toBe(error);
    expect(seen[0]![1].signal).toBe(controller.signal);
    expect(seen[0]![1].attempt).toBe(1);
  });

  it.each([
    ['a TypeError (a bug)', new TypeError('undefined is not a function')],
    ['a RangeError (a bug)', new RangeError('bad')],
    ['a 404', httpError(404)],
    ['a permanent BreakwaterError', new BreakwaterError('invalid_payload')],
    ['an unknown outcome', new BreakwaterError('outcome_unknown')],
  ])('does not swallow %s by default: rethrows it unchanged', async (_label, error) => {
    const policy = fallback({ value: 'stand-in' });
    await expect(policy.execute(() => Promise.reject(error))).rejects.toBe(error);
  });

  it.each([
    ['timeout', new BreakwaterError('timeout')],
    ['circuit_open', new BreakwaterError('circuit_open')],
    ['bulkhead_full', new BreakwaterError('bulkhead_full')],
    ['deadline_exceeded', new BreakwaterError('deadline_exceeded')],
    ['HTTP 429', httpError(429)],
    ['ECONNREFUSED', Object.assign(new Error('connect'), { code: 'ECONNREFUSED' })],
  ])('replaces %s by default', async (_label, error) => {
    await expect(fallback({ value: 'stand-in' }).execute(() => Promise.reject(error))).resolves.toBe(
      'stand-in',
    );
  });

  it('defaultShouldFallback is exported for composing custom predicates', () => {
    expect(defaultShouldFallback(httpError(503))).toBe(true);
    expect(defaultShouldFallback(httpError(404))).toBe(false);
    expect(defaultShouldFallback(new TypeError('x'))).toBe(false);
  });

  it('reads failures with classifyOptions: a connection reset after a POST is not replaced', async () => {
    const reset = (): Error => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const post = fallback({ value: 'stand-in', classifyOptions: { method: 'POST' } });
    const error = reset();
    // The write may have happened: hiding it behind a stand-in would tell the caller it did not.
    await expect(post.execute(() => Promise.reject(error))).rejects.toBe(error);
    for (const maybeWritten of [httpError(502), new BreakwaterError('timeout')]) {
      await expect(post.execute(() => Promise.reject(maybeWritten))).rejects.toBe(maybeWritten);
    }
    // Refused before anything was written: the outcome is known, so it is replaced even after a POST.
    const refused = Object.assign(new Error('connect'), { code: 'ECONNREFUSED' });
    await expect(post.execute(() => Promise.reject(refused))).resolves.toBe('stand-in');
    // With an idempotent method, or with none known, the reset counts as a plain failure.
    const get = fallback({ value: 'stand-in', classifyOptions: { method: 'GET' } });
    await expect(get.execute(() => Promise.reject(reset()))).resolves.toBe('stand-in');
    await expect(fallback({ value: 'stand-in' }).execute(() => Promise.reject(reset()))).resolves.toBe(
      'stand-in',
    );
  });

  it('defaultShouldFallback takes the same classify options, for custom predicates', async () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    expect(defaultShouldFallback(reset)).toBe(true);
    expect(defaultShouldFallback(reset, { method: 'POST' })).toBe(false);
    expect(defaultShouldFallback(reset, { method: 'PATCH', idempotencyKey: true })).toBe(false);
    const notFound = httpError(404);
    const policy = fallback({
      value: 'stand-in',
      shouldFallback: (e) => e === notFound || defaultShouldFallback(e, { method: 'POST' }),
    });
    await expect(policy.execute(() => Promise.reject(notFound))).resolves.toBe('stand-in');
    await expect(policy.execute(() => Promise.reject(reset))).rejects.toBe(reset);
  });

  it('rethrows when the caller aborted: a caller that left gets its abort, not a stand-in', async () => {
    const controller = new AbortController();
    const reason = new BreakwaterError('timeout');
    const policy = fallback({ value: 'stand-in' });
    const result = policy.execute(() => {
      controller.abort(reason);
      return Promise.reject(reason);
    }, controller.signal);
    await expect(result).rejects.toBe(reason);
  });

  it('a custom shouldFallback decides which failures are replaced', async () => {
    const policy = fallback({
      value: 'empty',
      shouldFallback: (e) => (e as { status?: number }).status === 404,
    });
    await expect(policy.execute(() => Promise.reject(httpError(404)))).resolves.toBe('empty');
    const unavailable = httpError(503);
    await expect(policy.execute(() => Promise.reject(unavailable))).rejects.toBe(unavailable);
  });

  it('a failing handler rejects with its own error', async () => {
    const own = new BreakwaterError('upstream_unavailable', { source: 'cache' });
    const policy = fallback({
      fallback: () => {
        throw own;
      },
    });
    await expect(policy.execute(() => Promise.reject(httpError(503)))).rejects.toBe(own);
  });

  it('allows undefined and null as the stand-in value', async () => {
    await expect(fallback({ value: undefined }).execute(() => Promise.reject(httpError(503)))).resolves.toBe(
      undefined,
    );
    await expect(fallback({ value: null }).execute(() => Promise.reject(httpError(503)))).resolves.toBe(null);
  });

  it('sits outside retry in a pipeline: the stand-in comes after the retries ran out', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const policy = pipeline(
      fallback({ value: 'stand-in' }),
      retry({ maxAttempts: 3, backoff: constantBackoff(100), clock }),
    );
    const result = policy.execute<string>(() => {
      calls++;
      return Promise.reject(httpError(503));
    });
    await clock.tickAsync(200);
    await expect(result).resolves.toBe('stand-in');
    expect(calls).toBe(3);
  });

  it('validates options at construction and names them', () => {
    expect(() => fallback({} as never)).toThrow(/value and fallback/);
    expect(() => fallback({ value: 1, fallback: () => 2 } as never)).toThrow(/value and fallback/);
    expect(() => fallback({ fallback: 'x' as never })).toThrow(/fallback must be a function/);
    expect(() => fallback({ value: 1, shouldFallback: 1 as never })).toThrow(/shouldFallback/);
    expect(fallback({ value: undefined, fallback: () => 1 } as never)).toBeDefined();
  });
});
