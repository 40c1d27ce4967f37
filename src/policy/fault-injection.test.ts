import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../core/index.js';
import type { RandomSource } from './backoff.js';
import { faultInjection, type FaultEvent } from './fault-injection.js';

const START = Date.UTC(2026, 0, 1);

/** Returns the given numbers in turn and counts the draws. */
function draws(...values: number[]): RandomSource & { count: number } {
  const random = Object.assign(() => values[random.count++ % values.length]!, { count: 0 });
  return random;
}

describe('FaultInjectionPolicy', () => {
  it('adds fixed latency on the clock, then makes the call', async () => {
    const clock = new FakeClock();
    const policy = faultInjection({ latency: { rate: 1, ms: 200 }, clock, random: draws(0.5) });
    const events: FaultEvent[] = [];
    policy.onFault((e) => events.push(e));
    let calledAt = -1;
    const result = policy.execute(() => {
      calledAt = clock.now() - START;
      return 'ok';
    });
    await clock.tickAsync(199);
    expect(calledAt).toBe(-1);
    await clock.tickAsync(1);
    await expect(result).resolves.toBe('ok');
    expect(calledAt).toBe(200);
    expect(events).toEqual([{ name: 'fault-injection', fault: 'latency', delayMs: 200 }]);
  });

  it('draws a latency range uniformly in whole ms: [min, max]', async () => {
    const clock = new FakeClock();
    const at = async (r: number): Promise<number> => {
      const policy = faultInjection({ latency: { rate: 1, ms: [100, 300] }, clock, random: draws(0, r) });
      const events: FaultEvent[] = [];
      policy.onFault((e) => events.push(e));
      const result = policy.execute(() => 'ok');
      await clock.runAllAsync();
      await result;
      return events[0]!.delayMs!;
    };
    expect(await at(0)).toBe(100);
    expect(await at(0.5)).toBe(200);
    expect(await at(0.999_999)).toBe(300);
  });

  it('latency is aborted by the signal: rejects with its reason, no timer left', async () => {
    const clock = new FakeClock();
    const policy = faultInjection({ latency: { rate: 1, ms: 1000 }, clock });
    const controller = new AbortController();
    const reason = new Error('caller left');
    let calls = 0;
    const result = policy.execute(() => ++calls, controller.signal).catch((e: unknown) => e);
    await clock.tickAsync(50);
    controller.abort(reason);
    expect(await result).toBe(reason);
    expect(calls).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('injects a BreakwaterError by code without making the call', async () => {
    const policy = faultInjection({ error: { rate: 1, code: 'circuit_open' }, name: 'commerce' });
    let calls = 0;
    const error = (await policy.execute(() => ++calls).catch((e: unknown) => e)) as BreakwaterError;
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error.code).toBe('circuit_open');
    expect(error.source).toBe('commerce');
    expect(error.details).toEqual({ injected: true });
    expect(calls).toBe(0);
    const byDefault = await faultInjection({ error: { rate: 1 } })
      .execute(() => 1)
      .catch((e: unknown) => e);
    expect((byDefault as BreakwaterError).code).toBe('upstream_unavailable');
  });

  it('injects a given error as it is, or one made per call', async () => {
    const given = Object.assign(new Error('HTTP 503'), { status: 503 });
    await expect(faultInjection({ error: { rate: 1, error: given } }).execute(() => 1)).rejects.toBe(given);
    const made = faultInjection({ error: { rate: 1, error: () => new Error('fresh') } });
    const a = await made.execute(() => 1).catch((e: unknown) => e);
    const b = await made.execute(() => 1).catch((e: unknown) => e);
    expect(a).toBeInstanceOf(Error);
    expect(a).not.toBe(b);
  });

  it('latency then error: the error comes after the delay', async () => {
    const clock = new FakeClock();
    const policy = faultInjection({
      latency: { rate: 1, ms: 300 },
      error: { rate: 1, code: 'timeout' },
      clock,
    });
    let rejectedAt = -1;
    const result = policy
      .execute(() => 1)
      .catch((e: unknown) => {
        rejectedAt = clock.now() - START;
        return e;
      });
    await clock.tickAsync(300);
    expect(((await result) as BreakwaterError).code).toBe('timeout');
    expect(rejectedAt).toBe(300);
  });

  it('hang never settles until the signal aborts, then rejects with its reason', async () => {
    const clock = new FakeClock();
    const policy = faultInjection({ hang: { rate: 1 }, clock });
    const controller = new AbortController();
    let calls = 0;
    let settled = false;
    const result = policy.execute(() => ++calls, controller.signal).finally(() => (settled = true));
    const caught = result.catch((e: unknown) => e);
    await clock.tickAsync(3_600_000);
    expect(settled).toBe(false);
    const reason = new BreakwaterError('timeout');
    controller.abort(reason);
    expect(await caught).toBe(reason);
    expect(calls).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });

  it('fires a fault when its draw is below the rate, drawing in the order hang, latency, error', async () => {
    const clock = new FakeClock();
    const random = draws(0.3, 0.3, 0.3);
    const policy = faultInjection({
      hang: { rate: 0.25 },
      latency: { rate: 0.25, ms: 100 },
      error: { rate: 0.5, code: 'overloaded' },
      clock,
      random,
    });
    const events: string[] = [];
    policy.onFault((e) => events.push(e.fault));
    await expect(policy.execute(() => 1)).rejects.toMatchObject({ code: 'overloaded' });
    expect(random.count).toBe(3);
    expect(events).toEqual(['error']);

    const passes = faultInjection({ error: { rate: 0.3, code: 'overloaded' }, random: draws(0.3) });
    await expect(passes.execute(() => 'ok')).resolves.toBe('ok');
    const never = faultInjection({ error: { rate: 0, code: 'overloaded' }, random: draws(0) });
    await expect(never.execute(() => 'ok')).resolves.toBe('ok');
  });

  it('disabled, it draws nothing and calls straight through; enable/disable/configure toggle it', async () => {
    const random = draws(0);
    const policy = faultInjection({ enabled: false, error: { rate: 1, code: 'overloaded' }, random });
    await expect(policy.execute(() => 'ok')).resolves.toBe('ok');
    expect(random.count).toBe(0);
    expect(policy.enabled).toBe(false);
    policy.enable();
    await expect(policy.execute(() => 'ok')).rejects.toMatchObject({ code: 'overloaded' });
    policy.disable();
    await expect(policy.execute(() => 'ok')).resolves.toBe('ok');
    policy.configure({ latency: { rate: 0.5, ms: [10, 20] } });
    expect(policy.state()).toEqual({
      name: 'fault-injection',
      enabled: true,
      latency: { rate: 0.5, ms: [10, 20] },
      error: null,
      hang: null,
    });
  });

  it('copies its settings: mutating the options object later changes nothing', async () => {
    const options = { error: { rate: 1, code: 'overloaded' as const } };
    const policy = faultInjection(options);
    options.error.rate = 0;
    await expect(policy.execute(() => 'ok')).rejects.toMatchObject({ code: 'overloaded' });
    expect(policy.state().error).toEqual({ rate: 1, code: 'overloaded' });
  });

  it('validates options at construction and in configure, naming the option', () => {
    expect(() => faultInjection({ latency: { rate: 1.5, ms: 1 } })).toThrow(/latency\.rate/);
    expect(() => faultInjection({ latency: { rate: 1, ms: -1 } })).toThrow(/latency\.ms/);
    expect(() => faultInjection({ latency: { rate: 1, ms: [20, 10] } })).toThrow(/latency\.ms/);
    expect(() => faultInjection({ error: { rate: -0.1 } })).toThrow(/error\.rate/);
    expect(() => faultInjection({ error: { rate: 1, code: 'nope' as never } })).toThrow(/error\.code/);
    expect(() => faultInjection({ error: { rate: 1, error: 'boom' as never } })).toThrow(/error\.error/);
    expect(() => faultInjection({ error: { rate: 1, error: new Error(), code: 'timeout' } })).toThrow(
      /error\.error and error\.code/,
    );
    expect(() => faultInjection({ hang: { rate: Number.NaN } })).toThrow(/hang\.rate/);
    expect(() => faultInjection({ enabled: 'yes' as never })).toThrow(/enabled/);
    const policy = faultInjection({ hang: { rate: 0.1 } });
    expect(() => policy.configure({ hang: { rate: 2 } })).toThrow(/hang\.rate/);
    expect(policy.state().hang).toEqual({ rate: 0.1 });
  });
});
