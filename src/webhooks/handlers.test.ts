import { describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, classify } from '../core/index.js';
import { CircuitBreakerPolicy, ConsecutiveWindow } from '../policy/index.js';
import { onWebhook, type WebhookContext } from './handlers.js';
import { expectOptionsError } from '../../test/support/options.js';

function context(signal = new AbortController().signal): WebhookContext<{ n: number }> {
  return {
    event: { n: 1 },
    eventId: 'evt_1',
    eventType: 'thing.happened',
    occurredAt: null,
    receivedAt: 0,
    source: 'src',
    signal,
    attempt: 1,
    jobId: 'job_1',
  };
}

describe('onWebhook', () => {
  it('declares a handler with the defaults', async () => {
    const seen: string[] = [];
    const def = onWebhook<{ n: number }>('src', '*', ({ eventId }) => {
      seen.push(eventId);
      return 'done';
    });
    expect(def).toMatchObject({
      source: 'src',
      eventType: '*',
      maxAttempts: 5,
      timeoutMs: undefined,
      breaker: undefined,
    });
    await expect(def.run(context())).resolves.toBe('done');
    expect(seen).toEqual(['evt_1']);
  });

  it('names the bad option', () => {
    expect(() => onWebhook('', 'a', () => undefined)).toThrow('onWebhook: source must be a non-empty string');
    expect(() => onWebhook('src', '', () => undefined)).toThrow(
      'onWebhook(src): eventType must be a non-empty string',
    );
    expect(() => onWebhook('src', 'a', 'nope' as never)).toThrow(
      'onWebhook(src): handler must be a function',
    );
    expect(() => onWebhook('src', 'a', () => undefined, { maxAttempts: 0 })).toThrow(
      /onWebhook\(src\): maxAttempts must be an integer in \[1, 2147483647\], got 0/,
    );
    expect(() => onWebhook('src', 'a', () => undefined, { timeoutMs: 1.5 })).toThrow(
      /timeoutMs must be an integer >= 1/,
    );
  });

  it('reports every bad argument and option at once, in one OptionsError', () => {
    expectOptionsError(
      () => onWebhook('src', '', () => undefined, { maxAttempts: 0, timeoutMs: 1.5, breaker: 3 as never }),
      {
        owner: 'onWebhook(src)',
        options: ['eventType', 'maxAttempts', 'timeoutMs', 'breaker'],
        message:
          "onWebhook(src): eventType must be a non-empty string, got ''; " +
          'maxAttempts must be an integer in [1, 2147483647], got 0; ' +
          'timeoutMs must be an integer >= 1, got 1.5; ' +
          'breaker must be a CircuitBreakerPolicy or its options, got 3',
      },
    );
  });

  it('runs the handler inside its breaker: once open, runs fail fast with a retry hint until half-open', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const def = onWebhook(
      'orders',
      'order.paid',
      async () => {
        calls++;
        throw new BreakwaterError('upstream_unavailable', { message: 'orders db is down' });
      },
      { breaker: { window: new ConsecutiveWindow(3), openDurationMs: 20_000, clock } },
    );
    expect(def.breaker).toBeInstanceOf(CircuitBreakerPolicy);
    expect(def.breaker!.name).toBe('webhook:orders:order.paid');
    for (let i = 0; i < 3; i++)
      await expect(def.run(context())).rejects.toMatchObject({ code: 'upstream_unavailable' });
    expect(def.breaker!.state().state).toBe('open');

    await clock.tickAsync(5_000);
    const rejected = await def.run(context()).catch((e: unknown) => e);
    expect(rejected).toMatchObject({ code: 'circuit_open', retryAfterMs: 15_000 });
    // The jobs runtime retries it (transient), no sooner than the hint.
    expect(classify(rejected)).toMatchObject({ kind: 'transient', retryable: true, retryAfterMs: 15_000 });
    expect(calls).toBe(3);

    // Half-open: one trial reaches the dependency; it has recovered, so the breaker closes.
    await clock.tickAsync(15_000);
    const ok = onWebhook('orders', 'x', () => 'ok', { breaker: def.breaker });
    await expect(ok.run(context())).resolves.toBe('ok');
    expect(def.breaker!.state().state).toBe('closed');
  });

  it('passes the job’s signal through the breaker', async () => {
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const def = onWebhook(
      'src',
      'a',
      ({ signal }) => {
        seen = signal;
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
      { breaker: {} },
    );
    const run = def.run(context(controller.signal));
    controller.abort(new BreakwaterError('timeout'));
    await expect(run).rejects.toMatchObject({ code: 'timeout' });
    expect(seen!.aborted).toBe(true);
    // An aborted run says nothing about the dependency: not recorded.
    expect(def.breaker!.state().state).toBe('closed');
  });
});
