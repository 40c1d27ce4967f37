import { describe, expect, it } from 'vitest';
import {
  BreakwaterError,
  Deadline,
  FakeClock,
  classify,
  deadlineExceeded,
  type Classification,
} from '../core/index.js';
import { timeout } from './timeout.js';

// How core's classify reads the errors the real timeout policy builds (a POST cut off mid-flight may have
// been applied); it lives here because core must not import policy.

function expected(overrides: Partial<Classification>): Classification {
  return {
    kind: 'transient',
    code: 'upstream_unavailable',
    outcome: 'failed',
    retryable: true,
    status: undefined,
    retryAfterMs: undefined,
    written: undefined,
    reason: '',
    ...overrides,
  };
}

describe('classify: our own timeouts', () => {
  function never<T>(): Promise<T> {
    return new Promise<T>(() => {});
  }

  async function timedOut(timeoutMs: number, deadlineMs?: number): Promise<BreakwaterError> {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs, clock });
    const run = (): Promise<void> => policy.execute(() => never<void>());
    const settled = (deadlineMs === undefined ? run() : Deadline.run(deadlineMs, run, clock)).catch(
      (e: unknown) => e,
    );
    await clock.tickAsync(timeoutMs);
    const error = await settled;
    expect(error).toBeInstanceOf(BreakwaterError);
    return error as BreakwaterError;
  }

  const cutOff = { code: 'timeout', status: 504, written: undefined, reason: 'timeout' } as const;

  it('a POST cut off by the timeout policy is unknown and not retryable', async () => {
    const error = await timedOut(1000);
    expect([error.code, error.outcome, error.details]).toEqual(['timeout', 'failed', { timeout_ms: 1000 }]);
    expect(classify(error, { method: 'POST' })).toEqual(
      expected({ ...cutOff, outcome: 'unknown', retryable: false }),
    );
    expect(classify(error, { method: 'patch' })).toEqual(
      expected({ ...cutOff, outcome: 'unknown', retryable: false }),
    );
  });

  it('with an idempotency key the cut-off POST stays unknown but is retryable', async () => {
    const error = await timedOut(1000);
    expect(classify(error, { method: 'POST', idempotencyKey: true })).toEqual(
      expected({ ...cutOff, outcome: 'unknown', retryable: true }),
    );
  });

  it('a cut-off GET (or a call of unknown method) is failed and retryable', async () => {
    const error = await timedOut(1000);
    expect(classify(error, { method: 'GET' })).toEqual(expected({ ...cutOff }));
    expect(classify(error, { method: 'PUT' })).toEqual(expected({ ...cutOff }));
    expect(classify(error)).toEqual(expected({ ...cutOff }));
  });

  it('a deadline that fires while a POST is in flight is unknown', async () => {
    const error = await timedOut(4000, 1000);
    expect([error.code, error.details]).toEqual(['deadline_exceeded', { timeout_ms: 950 }]);
    const deadline = { ...cutOff, code: 'deadline_exceeded', reason: 'deadline_exceeded' } as const;
    expect(classify(error, { method: 'POST' })).toEqual(
      expected({ ...deadline, outcome: 'unknown', retryable: false }),
    );
    expect(classify(error, { method: 'GET' })).toEqual(expected({ ...deadline }));
  });

  it('a deadline that failed fast without calling anything stays failed for POST', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 4000, deadlineMarginMs: 50, clock });
    let calls = 0;
    const error = await Deadline.run(
      40,
      () =>
        policy.execute(() => {
          calls++;
        }),
      clock,
    ).catch((e: unknown) => e);
    expect(calls).toBe(0);
    expect(error).toMatchObject({ code: 'deadline_exceeded', details: { timeout_ms: 0 } });
    expect(classify(error, { method: 'POST' })).toEqual(
      expected({ ...cutOff, code: 'deadline_exceeded', reason: 'deadline_exceeded' }),
    );
    // Core's own deadline check carries no timeout_ms: it never called anything either.
    expect(classify(deadlineExceeded(), { method: 'POST' })).toEqual(
      expected({ ...cutOff, code: 'deadline_exceeded', reason: 'deadline_exceeded' }),
    );
  });

  it('a cooperative timeout (the work stopped after the abort) is unknown for POST too', async () => {
    const clock = new FakeClock();
    const policy = timeout({ timeoutMs: 500, strategy: 'cooperative', clock });
    const settled = policy
      .execute(
        (ctx) =>
          new Promise<void>((_, reject) => {
            ctx.signal.addEventListener('abort', () => reject(new Error('stopped')));
          }),
      )
      .catch((e: unknown) => e);
    await clock.tickAsync(500);
    const error = await settled;
    expect(error).toMatchObject({ code: 'timeout', details: { timeout_ms: 500 } });
    expect(classify(error, { method: 'POST' })).toEqual(
      expected({ ...cutOff, outcome: 'unknown', retryable: false }),
    );
  });

  it('other BreakwaterErrors keep their own outcome for POST', () => {
    expect(classify(new BreakwaterError('upstream_unavailable'), { method: 'POST' })).toEqual(
      expected({ status: 503, reason: 'upstream_unavailable' }),
    );
    expect(classify(new BreakwaterError('timeout', { outcome: 'unknown' }), { method: 'GET' })).toEqual(
      expected({ ...cutOff, outcome: 'unknown' }),
    );
  });
});
