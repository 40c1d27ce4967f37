import { describe, expect, it } from 'vitest';
import {
  BreakwaterError,
  ConsecutiveWindow,
  Pipeline,
  bulkhead,
  circuitBreaker,
  constantBackoff,
  pipeline,
  retry,
  sleep,
  timeout,
  type Next,
  type Policy,
  type PolicyContext,
  type PolicyFn,
} from '../../src/entries/index.js';
import { FakeClock } from '../../src/entries/testing.js';

/** A policy that records the order it was entered in; not a Pipeline, so nested pipelines are not flattened. */
class Tag implements Policy {
  constructor(
    readonly label: string,
    readonly log: string[],
  ) {}
  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return pipeline(this).execute(fn, signal);
  }
  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    this.log.push(`${this.label}:${ctx.attempt}`);
    return next.invoke(ctx, index);
  }
}

/** Wraps a policy so that a Pipeline inside it is run through Pipeline.run (NestedInvocation), not flattened. */
class Opaque implements Policy {
  constructor(readonly inner: Policy) {}
  execute<T>(fn: PolicyFn<T>, signal?: AbortSignal): Promise<T> {
    return pipeline(this).execute(fn, signal);
  }
  run<T>(ctx: PolicyContext, next: Next<T>, index: number): Promise<T> {
    return this.inner.run(ctx, next, index);
  }
}

describe('nested pipelines', () => {
  it('a pipeline as a layer runs outer → nested → inner → fn, and again on each retry', async () => {
    const log: string[] = [];
    const clock = new FakeClock();
    const nested = pipeline(new Tag('b', log), new Tag('c', log));
    const outer = pipeline(
      new Tag('a', log),
      retry({ maxAttempts: 2, backoff: constantBackoff(0), clock }),
      new Opaque(nested),
      new Tag('d', log),
    );
    let calls = 0;
    const value = await outer.execute((ctx) => {
      log.push(`fn:${ctx.attempt}`);
      if (++calls === 1) throw new BreakwaterError('upstream_unavailable');
      return 'done';
    });
    expect(value).toBe('done');
    expect(log).toEqual(['a:1', 'b:1', 'c:1', 'd:1', 'fn:1', 'b:2', 'c:2', 'd:2', 'fn:2']);
  });

  it('a pipeline nested three deep (flattened and opaque) still calls fn once and returns its value', async () => {
    const log: string[] = [];
    const p1 = pipeline(new Tag('x', log));
    const p2 = pipeline(p1, new Opaque(pipeline(new Tag('y', log), new Opaque(pipeline(new Tag('z', log))))));
    const p3 = new Pipeline([p2, new Tag('w', log)]);
    await expect(p3.execute(() => 42)).resolves.toBe(42);
    expect(log).toEqual(['x:1', 'y:1', 'z:1', 'w:1']);
  });
});

describe('one policy instance shared by two pipelines', () => {
  it('a shared bulkhead counts calls from both pipelines against one limit', async () => {
    const clock = new FakeClock();
    const shared = bulkhead({ maxConcurrent: 2, maxQueue: 1, clock });
    const a = pipeline(shared, timeout({ timeoutMs: 1000, clock }));
    const b = pipeline(retry({ maxAttempts: 1, clock }), shared);
    const slow = (ctx: PolicyContext): Promise<string> => sleep(clock, 100, ctx.signal).then(() => 'ok');
    const r1 = a.execute(slow);
    const r2 = b.execute(slow);
    const r3 = a.execute(slow); // queued
    const r4 = b.execute(slow).catch((e: BreakwaterError) => e.code); // full
    expect(shared.state()).toMatchObject({ inUse: 2, queued: 1 });
    expect(await r4).toBe('bulkhead_full');
    await clock.tickAsync(250);
    await expect(Promise.all([r1, r2, r3])).resolves.toEqual(['ok', 'ok', 'ok']);
    expect(shared.state()).toMatchObject({ inUse: 0, queued: 0 });
  });

  it('a shared breaker opened by one pipeline rejects calls of the other', async () => {
    const clock = new FakeClock();
    const shared = circuitBreaker({ window: new ConsecutiveWindow(2), openDurationMs: 1000, clock });
    const a = pipeline(retry({ maxAttempts: 2, backoff: constantBackoff(0), clock }), shared);
    const b = pipeline(shared, timeout({ timeoutMs: 50, clock }));
    await expect(
      a.execute(() => {
        throw new BreakwaterError('upstream_unavailable');
      }),
    ).rejects.toMatchObject({ code: 'upstream_unavailable' });
    expect(shared.state().state).toBe('open');
    let called = false;
    await expect(
      b.execute(() => {
        called = true;
        return 1;
      }),
    ).rejects.toMatchObject({ code: 'circuit_open', retryAfterMs: 1000 });
    expect(called).toBe(false);
    clock.tick(1000);
    await expect(b.execute(() => 'trial')).resolves.toBe('trial');
    expect(shared.state().state).toBe('closed');
  });

  it('the same bulkhead twice in one pipeline takes two slots per call (documented composition, not dedup)', async () => {
    const clock = new FakeClock();
    const shared = bulkhead({ maxConcurrent: 2, clock });
    const twice = pipeline(shared, shared);
    let inside = -1;
    await twice.execute(() => {
      inside = shared.state().inUse;
    });
    expect(inside).toBe(2);
    expect(shared.state().inUse).toBe(0);
  });
});

describe('timeout outside a bulkhead', () => {
  it("the caller sees `timeout`, not the bulkhead's deadline_exceeded, even when another call armed the timer queue first", async () => {
    const clock = new FakeClock();
    const limit = timeout({ timeoutMs: 100, clock });
    const guard = bulkhead({ maxConcurrent: 1, maxQueue: 5, clock });
    const policy = pipeline(limit, guard);
    const hang = (ctx: PolicyContext): Promise<never> =>
      new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
    // Call A takes the slot (and keeps it: it ignores its signal) and arms the timeout's shared timer for t=100.
    const a = policy.execute(() => new Promise<never>(() => {})).catch((e: BreakwaterError) => e.code);
    await clock.tickAsync(50);
    // Call B queues behind A at t=50; its timeout is due at t=150, as is its bulkhead wait (deadlineAt).
    const b = policy.execute(hang).catch((e: BreakwaterError) => `${e.code}:${e.source ?? ''}`);
    await clock.tickAsync(200);
    expect(await a).toBe('timeout');
    expect(await b).toBe('timeout:timeout');
  });

  it('the same with a single call: the bulkhead docstring promise holds', async () => {
    const clock = new FakeClock();
    const guard = bulkhead({ maxConcurrent: 1, maxQueue: 5, clock });
    const policy = pipeline(timeout({ timeoutMs: 100, clock }), guard);
    // Occupy the slot outside the timeout.
    let release!: () => void;
    const holder = guard.execute(() => new Promise<void>((r) => (release = r)));
    const b = policy.execute(() => 'x').catch((e: BreakwaterError) => e.code);
    await clock.tickAsync(150);
    expect(await b).toBe('timeout');
    release();
    await holder;
  });
});
