import type { Policy } from './types.js';
import { describe, expect, it } from 'vitest';
import { BreakwaterError, Deadline, FakeClock } from '../core/index.js';
import { bulkhead, BulkheadPolicy } from './bulkhead.js';
import { pipeline } from './pipeline.js';
import { timeout } from './timeout.js';

/** A call the test settles by hand. */
function deferred<T = string>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves to the rejection reason (or fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<BreakwaterError> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${String(value)}`);
    },
    (error: unknown) => error as BreakwaterError,
  );
}

async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

describe('BulkheadPolicy', () => {
  it('runs at most maxConcurrent calls and starts queued ones in FIFO order', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 2, maxQueue: 3, clock, name: 'gift-service' });
    const started: number[] = [];
    const gates = [0, 1, 2, 3, 4].map(() => deferred());
    const results = gates.map((gate, i) =>
      policy.execute(() => {
        started.push(i);
        return gate.promise;
      }),
    );
    expect(started).toEqual([0, 1]);
    expect(policy.state()).toEqual({
      name: 'gift-service',
      inUse: 2,
      queued: 3,
      maxConcurrent: 2,
      maxQueue: 3,
    });

    gates[1]!.resolve('one');
    await expect(results[1]).resolves.toBe('one');
    await flush();
    expect(started).toEqual([0, 1, 2]);
    expect(policy.state()).toMatchObject({ inUse: 2, queued: 2 });

    gates[0]!.resolve('zero');
    gates[2]!.resolve('two');
    await flush();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    gates[3]!.resolve('three');
    gates[4]!.resolve('four');
    expect(await Promise.all(results)).toEqual(['zero', 'one', 'two', 'three', 'four']);
    expect(policy.state()).toMatchObject({ inUse: 0, queued: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('rejects with bulkhead_full when every slot and queue place is taken, without calling fn', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1, clock, name: 'commerce' });
    const events: unknown[] = [];
    policy.onRejected((e) => events.push(e));
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    const second = policy.execute(() => 'queued');
    let calls = 0;
    const error = await rejection(
      policy.execute(() => {
        calls++;
      }),
    );
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error.code).toBe('bulkhead_full');
    expect(error.status).toBe(503);
    expect(error.source).toBe('commerce');
    expect(error.retryAfterMs).toBeUndefined();
    expect(error.message).toBe('commerce: every slot (1) is busy and the queue (1) is full.');
    expect(error.details).toEqual({ max_concurrent: 1, max_queue: 1, reason: 'full' });
    expect(calls).toBe(0);
    expect(events).toEqual([{ name: 'commerce', reason: 'full', waitedMs: 0 }]);

    gate.resolve('done');
    await expect(first).resolves.toBe('done');
    await expect(second).resolves.toBe('queued');
    expect(clock.pendingTimers()).toBe(0);
  });

  it('with the default maxQueue of 0 rejects at once when all slots are busy', async () => {
    const clock = new FakeClock();
    const policy = new BulkheadPolicy({ maxConcurrent: 1, clock });
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    const error = await rejection(policy.execute(() => 'no'));
    expect(error.code).toBe('bulkhead_full');
    expect(error.message).toBe('bulkhead: every slot (1) is busy and no call may wait.');
    gate.resolve('ok');
    await first;
    await expect(policy.execute(() => 'again')).resolves.toBe('again');
  });

  it('rejects a queued call with bulkhead_full exactly at queueTimeoutMs and frees its place', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 500, clock, name: 'gifts' });
    const events: unknown[] = [];
    policy.onRejected((e) => events.push(e));
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    let calls = 0;
    let settled = false;
    const queued = policy
      .execute(() => {
        calls++;
      })
      .finally(() => {
        settled = true;
      });
    const caught = rejection(queued);
    await clock.tickAsync(499);
    expect(settled).toBe(false);
    expect(policy.state()).toMatchObject({ inUse: 1, queued: 1 });
    await clock.tickAsync(1);
    const error = await caught;
    expect(error.code).toBe('bulkhead_full');
    expect(error.message).toBe('gifts: no slot (of 1) freed up within the 500 ms queue timeout.');
    expect(error.details).toEqual({
      max_concurrent: 1,
      max_queue: 1,
      reason: 'queue_timeout',
      queue_timeout_ms: 500,
      waited_ms: 500,
    });
    expect(events).toEqual([{ name: 'gifts', reason: 'queue_timeout', waitedMs: 500 }]);
    expect(calls).toBe(0);
    expect(policy.state()).toMatchObject({ inUse: 1, queued: 0 });
    expect(clock.pendingTimers()).toBe(0);
    gate.resolve('ok');
    await first;
    expect(policy.state()).toMatchObject({ inUse: 0, queued: 0 });
  });

  it('clears the queue timer when a queued call gets a slot in time', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 500, clock });
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    const second = policy.execute(() => 'second');
    expect(clock.pendingTimers()).toBe(1);
    await clock.tickAsync(200);
    gate.resolve('first');
    await expect(first).resolves.toBe('first');
    await expect(second).resolves.toBe('second');
    expect(clock.pendingTimers()).toBe(0);
    expect(policy.state()).toMatchObject({ inUse: 0, queued: 0 });
  });

  it('a queued call whose signal aborts leaves the queue at once with the reason and frees its place', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1, queueTimeoutMs: 10_000, clock });
    const dequeued: unknown[] = [];
    policy.onDequeued((e) => dequeued.push(e));
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    const caller = new AbortController();
    let calls = 0;
    const queued = rejection(
      policy.execute(() => {
        calls++;
      }, caller.signal),
    );
    expect(policy.state()).toMatchObject({ inUse: 1, queued: 1 });
    await clock.tickAsync(30);
    const reason = new Error('caller left');
    caller.abort(reason);
    // Synchronously out of the queue: the place is free for the next caller before any await.
    expect(policy.state()).toMatchObject({ inUse: 1, queued: 0 });
    expect(clock.pendingTimers()).toBe(0);
    expect(await queued).toBe(reason);
    expect(dequeued).toEqual([{ name: 'bulkhead', outcome: 'aborted', waitedMs: 30 }]);

    const third = policy.execute(() => 'third');
    expect(policy.state()).toMatchObject({ inUse: 1, queued: 1 });
    gate.resolve('first');
    await first;
    await expect(third).resolves.toBe('third');
    expect(calls).toBe(0);
    expect(policy.state()).toMatchObject({ inUse: 0, queued: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('removes its abort listener from the caller signal once a queued call is admitted', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1, clock });
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    const caller = new AbortController();
    const second = policy.execute(() => 'second', caller.signal);
    gate.resolve('first');
    await first;
    await expect(second).resolves.toBe('second');
    // Aborting now must not touch the bulkhead any more.
    caller.abort(new Error('late'));
    expect(policy.state()).toMatchObject({ inUse: 0, queued: 0 });
    await expect(policy.execute(() => 'third')).resolves.toBe('third');
  });

  it('rejects a call whose signal already aborted instead of queueing it', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1, clock });
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    const caller = new AbortController();
    caller.abort(new Error('gone'));
    const error = await rejection(policy.execute(() => 'x', caller.signal));
    expect((error as Error).message).toBe('gone');
    expect(policy.state()).toMatchObject({ inUse: 1, queued: 0 });
    gate.resolve('ok');
    await first;
  });

  it('rejects a queued call with deadline_exceeded when its deadline passes before queueTimeoutMs', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 2, queueTimeoutMs: 5000, clock, name: 'gifts' });
    const events: unknown[] = [];
    policy.onRejected((e) => events.push(e));
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    let calls = 0;
    const queued = rejection(
      Deadline.run(
        800,
        () =>
          policy.execute(() => {
            calls++;
          }),
        clock,
      ),
    );
    expect(policy.state()).toMatchObject({ queued: 1 });
    await clock.tickAsync(799);
    expect(policy.state()).toMatchObject({ queued: 1 });
    await clock.tickAsync(1);
    const error = await queued;
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error.code).toBe('deadline_exceeded');
    expect(error.source).toBe('gifts');
    expect(error.message).toBe('gifts: the deadline ran out after 800 ms waiting for a slot.');
    expect(events).toEqual([{ name: 'gifts', reason: 'deadline_exceeded', waitedMs: 800 }]);
    expect(calls).toBe(0);
    expect(policy.state()).toMatchObject({ inUse: 1, queued: 0 });
    expect(clock.pendingTimers()).toBe(0);
    gate.resolve('ok');
    await first;
  });

  it('fails fast with deadline_exceeded when it would have to queue past an expired deadline', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1, clock });
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    const pending = Deadline.run(
      100,
      async () => {
        clock.tick(100);
        return policy.execute(() => 'late');
      },
      clock,
    );
    const error = await rejection(pending);
    expect(error.code).toBe('deadline_exceeded');
    expect(policy.state()).toMatchObject({ inUse: 1, queued: 0 });
    expect(clock.pendingTimers()).toBe(0);
    gate.resolve('ok');
    await first;
  });

  it("inside a pipeline, an outer timeout's limit ends the queue wait with the timeout's own error and the queue empties", async () => {
    const clock = new FakeClock();
    const inner = bulkhead({ maxConcurrent: 1, maxQueue: 1, clock });
    const composed = pipeline(timeout({ timeoutMs: 300, clock }), inner);
    const gate = deferred();
    const first = inner.execute(() => gate.promise);
    const queued = rejection(composed.execute(() => 'never'));
    expect(inner.state()).toMatchObject({ queued: 1 });
    await clock.tickAsync(300);
    const error = await queued;
    // The timeout arms its timer before the inner call, so its own timer fires first at the shared instant
    // and its abort takes the call out of the queue.
    expect(error.code).toBe('timeout');
    expect(error.source).toBe('timeout');
    expect(inner.state()).toMatchObject({ inUse: 1, queued: 0 });
    expect(clock.pendingTimers()).toBe(0);
    gate.resolve('ok');
    await first;
  });

  it('releases the slot when fn throws synchronously or rejects', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 2, clock });
    const boom = new Error('boom');
    const thrown = rejection(
      policy.execute(() => {
        throw boom;
      }),
    );
    const queued = policy.execute(() => Promise.reject(new Error('async boom')));
    const third = policy.execute(() => 'third');
    expect(await thrown).toBe(boom);
    await expect(queued).rejects.toThrow('async boom');
    await expect(third).resolves.toBe('third');
    expect(policy.state()).toMatchObject({ inUse: 0, queued: 0 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('releases the slot when an inner policy throws synchronously', async () => {
    const policy = bulkhead({ maxConcurrent: 1, clock: new FakeClock() });
    const bug = new TypeError('bug');
    const thrower: Policy = {
      execute: () => Promise.reject(bug),
      run: () => {
        throw bug;
      },
    };
    expect(await rejection(pipeline(policy, thrower).execute(() => 'never'))).toBe(bug);
    expect(policy.state()).toMatchObject({ inUse: 0, queued: 0 });
  });

  it('emits queued and admitted events only to listeners, and disposing stops them', async () => {
    const clock = new FakeClock();
    const policy = bulkhead({ maxConcurrent: 1, maxQueue: 1, clock, name: 'analytics' });
    const events: unknown[] = [];
    const queuedSub = policy.onQueued((e) => events.push(e));
    const dequeuedSub = policy.onDequeued((e) => events.push(e));
    const gate = deferred();
    const first = policy.execute(() => gate.promise);
    const second = policy.execute(() => 'second');
    await clock.tickAsync(40);
    gate.resolve('first');
    await first;
    await second;
    expect(events).toEqual([
      { name: 'analytics', queued: 1 },
      { name: 'analytics', outcome: 'admitted', waitedMs: 40 },
    ]);
    queuedSub.dispose();
    dequeuedSub.dispose();
    const gate2 = deferred();
    const third = policy.execute(() => gate2.promise);
    const fourth = policy.execute(() => 'fourth');
    gate2.resolve('third');
    await Promise.all([third, fourth]);
    expect(events).toHaveLength(2);
  });

  it('does not read ctx.signal on the uncontended path', async () => {
    const policy = bulkhead({ maxConcurrent: 1, clock: new FakeClock() });
    let reads = 0;
    const ctx = {
      attempt: 1,
      deadlineAt: Infinity,
      get signal(): AbortSignal {
        reads++;
        return new AbortController().signal;
      },
    };
    const result = await policy.run(ctx, { invoke: () => Promise.resolve('ok') }, 0);
    expect(result).toBe('ok');
    expect(reads).toBe(0);
  });

  it('validates options at construction and names the option', () => {
    expect(() => bulkhead({ maxConcurrent: 0 })).toThrow(RangeError);
    expect(() => bulkhead({ maxConcurrent: 0 })).toThrow(/maxConcurrent/);
    expect(() => bulkhead({ maxConcurrent: 1.5 })).toThrow(/maxConcurrent/);
    expect(() => bulkhead({ maxConcurrent: 1, maxQueue: -1 })).toThrow(/maxQueue/);
    expect(() => bulkhead({ maxConcurrent: 1, queueTimeoutMs: 0 })).toThrow(/queueTimeoutMs/);
    expect(() => bulkhead({ maxConcurrent: 1, queueTimeoutMs: Infinity })).toThrow(/queueTimeoutMs/);
    expect(bulkhead(3).state()).toEqual({
      name: 'bulkhead',
      inUse: 0,
      queued: 0,
      maxConcurrent: 3,
      maxQueue: 0,
    });
  });
});
