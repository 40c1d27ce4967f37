import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError, Deadline, FakeClock, sleep } from '../core/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import type { JobContext } from './types.js';
import {
  HEARTBEAT_MS,
  deferred,
  eventTypes,
  fixedBackoff,
  flush,
  harness,
  type Harness,
} from './test-support.js';

describe('jobs worker', () => {
  let h: Harness;

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
  });

  it('a job runs and completes with started → progress → partial → completed, seq 1..n', async () => {
    h = await harness();
    const seen: Omit<JobContext, 'signal' | 'progress' | 'partial' | 'requestInput' | 'requestInputs'>[] = [];
    h.jobs.defineJob<{ n: number }>('sum', async (ctx) => {
      seen.push({ payload: ctx.payload, jobId: ctx.jobId, attempt: ctx.attempt });
      await ctx.progress(1, 2, 'halfway');
      await ctx.partial({ first: 1 });
      await ctx.progress(2, 2);
      return { total: ctx.payload.n * 2 };
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('sum', { n: 21 });
    await flush(h.clock);
    expect(seen).toEqual([{ payload: { n: 21 }, jobId: id, attempt: 1 }]);
    const job = await h.jobs.get(id);
    expect(job).toMatchObject({ status: 'completed', result: { total: 42 }, attempts: 1, error: null });
    const events = await h.store.events(id);
    expect(events.map((e) => [e.seq, e.type, e.payload])).toEqual([
      [1, 'job.started', { attempt: 1 }],
      [2, 'job.progress', { step: 1, total: 2, message: 'halfway' }],
      [3, 'job.partial', { data: { first: 1 } }],
      [4, 'job.progress', { step: 2, total: 2 }],
      [5, 'job.completed', { result: { total: 42 } }],
    ]);
  });

  it("a job enqueued under a caller's deadline does not inherit it (its run has no deadline)", async () => {
    h = await harness();
    const remaining: number[] = [];
    h.jobs.defineJob('report', async () => {
      remaining.push(Deadline.remaining());
      // Past the caller's 10 s budget: a run that inherited it would see 0 here.
      await sleep(h.clock, 15_000);
      remaining.push(Deadline.remaining());
    });
    h.jobs.start();
    await flush(h.clock); // the worker is idle: the enqueue's own notification wakes it
    const id = await Deadline.run(10_000, () => h.jobs.enqueue('report', null), h.clock);
    await flush(h.clock);
    await h.clock.tickAsync(15_000);
    await flush(h.clock);
    expect(remaining).toEqual([Infinity, Infinity]);
    expect((await h.jobs.get(id))?.status).toBe('completed');
  });

  it('progress is throttled: written on a new step, a >= 10 % move, the final step once', async () => {
    h = await harness();
    h.jobs.defineJob('p', async (ctx) => {
      await ctx.progress(0, 100); // first: written
      await ctx.progress(0, 100, 'again'); // same step: skipped
      await ctx.progress(1, 100); // new step: written
      await ctx.progress(1, 100); // skipped
      await ctx.progress(1, 20); // same step, 0.01 → 0.05: skipped
      await ctx.progress(1, 5); // same step, 0.01 → 0.2: written
      await ctx.progress(5, 5); // final: written
      await ctx.progress(5, 5); // final again: skipped
      await expect(ctx.progress(-1, 5)).rejects.toMatchObject({ code: 'invalid_payload' });
      await expect(ctx.progress(1, 0)).rejects.toMatchObject({ code: 'invalid_payload' });
      await expect(ctx.partial(10n)).rejects.toMatchObject({ code: 'invalid_payload' });
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('p', null);
    await flush(h.clock);
    const progress = (await h.store.events(id))
      .filter((e) => e.type === 'job.progress')
      .map((e) => e.payload);
    expect(progress).toEqual([
      { step: 0, total: 100 },
      { step: 1, total: 100 },
      { step: 1, total: 5 },
      { step: 5, total: 5 },
    ]);
    expect((await h.jobs.get(id))!.status).toBe('completed');
  });

  it('a transient failure is retried at exactly now + the backoff delay', async () => {
    h = await harness();
    const backoff = fixedBackoff(1_000, 4_000);
    const attempts: number[] = [];
    h.jobs.defineJob(
      'flaky',
      (ctx) => {
        attempts.push(ctx.attempt);
        if (ctx.attempt < 3) throw new BreakwaterError('upstream_unavailable', { message: 'down' });
        return 'ok';
      },
      { backoff },
    );
    h.jobs.start();
    const t0 = h.clock.now();
    const id = await h.jobs.enqueue('flaky', {});
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'pending',
      attempts: 1,
      runAt: t0 + 1_000,
      error: { code: 'upstream_unavailable', message: 'down', kind: 'transient' },
    });
    await h.clock.tickAsync(999);
    expect(attempts).toEqual([1]);
    await h.clock.tickAsync(1);
    await flush(h.clock);
    expect(attempts).toEqual([1, 2]);
    expect((await h.jobs.get(id))!.runAt).toBe(t0 + 1_000 + 4_000);
    await h.clock.tickAsync(3_999);
    expect(attempts).toEqual([1, 2]);
    await h.clock.tickAsync(1);
    await flush(h.clock);
    expect(attempts).toEqual([1, 2, 3]);
    expect(backoff.calls).toEqual([1, 2]);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', result: 'ok', attempts: 3 });
    const retrying = (await h.store.events(id))
      .filter((e) => e.type === 'job.retrying')
      .map((e) => e.payload);
    expect(retrying).toEqual([
      {
        error: { code: 'upstream_unavailable', message: 'down', kind: 'transient', userFacing: true },
        nextAttempt: 2,
        runAt: t0 + 1_000,
      },
      {
        error: { code: 'upstream_unavailable', message: 'down', kind: 'transient', userFacing: true },
        nextAttempt: 3,
        runAt: t0 + 5_000,
      },
    ]);
  });

  it('a permanent failure is dead-lettered at once; retry(id) runs it again', async () => {
    h = await harness();
    let calls = 0;
    h.jobs.defineJob('strict', (ctx) => {
      calls++;
      if (ctx.attempt === 1 && calls === 1)
        throw new BreakwaterError('upstream_error', { message: 'bad address' });
      return { sent: true };
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('strict', {});
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: 'upstream_error', message: 'bad address', kind: 'permanent' },
    });
    expect(await eventTypes(h.store, id)).toEqual([
      ['job.started', 1],
      ['job.failed', 2],
    ]);
    expect(await h.jobs.retry(id)).toMatchObject({ status: 'pending', attempts: 0 });
    await flush(h.clock);
    expect(calls).toBe(2);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', result: { sent: true }, attempts: 1 });
    expect(await eventTypes(h.store, id)).toEqual([
      ['job.started', 1],
      ['job.failed', 2],
      ['job.started', 3],
      ['job.completed', 4],
    ]);
  });

  it('onSettled hears each terminal event its worker wrote, once; not retries, not a pending cancel', async () => {
    h = await harness();
    const ends: [string, string][] = [];
    h.jobs.onSettled((event) => ends.push([event.type, event.jobId]));
    let calls = 0;
    h.jobs.defineJob(
      'flaky',
      () => {
        calls++;
        if (calls === 1) throw new BreakwaterError('upstream_unavailable');
        return 'ok';
      },
      { maxAttempts: 2, backoff: fixedBackoff(0) },
    );
    h.jobs.defineJob('strict', () => {
      throw new BreakwaterError('upstream_error');
    });
    const waiting = await h.jobs.enqueue('strict', {}, { delayMs: 60_000 });
    await h.jobs.cancel(waiting);
    h.jobs.start();
    const flaky = await h.jobs.enqueue('flaky', {});
    await flush(h.clock);
    const strict = await h.jobs.enqueue('strict', {});
    await flush(h.clock);
    expect(ends).toEqual([
      ['job.completed', flaky],
      ['job.failed', strict],
    ]);
  });

  it('onStarted and onRunEnded hear every run: attempt, due time, start, handler time and outcome', async () => {
    h = await harness();
    const t0 = h.clock.now();
    const starts: unknown[] = [];
    const ends: unknown[] = [];
    h.jobs.onStarted((event) => starts.push(event));
    h.jobs.onRunEnded((event) => ends.push(event));
    let calls = 0;
    h.jobs.defineJob(
      'flaky',
      async () => {
        calls++;
        await sleep(h.clock, 250);
        if (calls === 1) throw new BreakwaterError('upstream_unavailable');
        return 'ok';
      },
      { maxAttempts: 2, backoff: fixedBackoff(1_000) },
    );
    h.jobs.defineJob('strict', () => {
      throw new BreakwaterError('upstream_error');
    });
    h.jobs.start();
    const flaky = await h.jobs.enqueue('flaky', {}, { delayMs: 500 });
    for (const step of [500, 250, 1_000, 250]) {
      await h.clock.tickAsync(step);
      await flush(h.clock);
    }
    const strict = await h.jobs.enqueue('strict', {});
    await flush(h.clock);
    const flakyJob = (await h.jobs.get(flaky))!;
    const strictJob = (await h.jobs.get(strict))!;
    expect(starts).toEqual([
      {
        jobId: flaky,
        type: 'flaky',
        attempt: 1,
        runAt: t0 + 500,
        createdAt: flakyJob.createdAt,
        startedAt: t0 + 500,
      },
      {
        jobId: flaky,
        type: 'flaky',
        attempt: 2,
        runAt: t0 + 1_750,
        createdAt: flakyJob.createdAt,
        startedAt: t0 + 1_750,
      },
      {
        jobId: strict,
        type: 'strict',
        attempt: 1,
        runAt: t0 + 2_000,
        createdAt: strictJob.createdAt,
        startedAt: t0 + 2_000,
      },
    ]);
    expect(ends).toEqual([
      { jobId: flaky, type: 'flaky', attempt: 1, outcome: 'retrying', startedAt: t0 + 500, durationMs: 250 },
      {
        jobId: flaky,
        type: 'flaky',
        attempt: 2,
        outcome: 'completed',
        startedAt: t0 + 1_750,
        durationMs: 250,
      },
      { jobId: strict, type: 'strict', attempt: 1, outcome: 'failed', startedAt: t0 + 2_000, durationMs: 0 },
    ]);
  });

  it('onRunEnded says released when a shutdown gives the lease back (the run is not counted)', async () => {
    h = await harness();
    const outcomes: string[] = [];
    h.jobs.onRunEnded((event) => outcomes.push(event.outcome));
    const gate = deferred();
    h.jobs.defineJob('stubborn', async ({ signal }) => {
      await gate.promise;
      throw signal.reason;
    });
    h.jobs.start();
    await h.jobs.enqueue('stubborn', {});
    await flush(h.clock);
    const stopping = h.jobs.stop({ graceMs: 0 });
    await flush(h.clock);
    gate.resolve();
    await stopping;
    expect(outcomes).toEqual(['released']);
  });

  it('onRunEnded says lost when a heartbeat finds the lease taken: nothing of the run is written', async () => {
    h = await harness();
    const outcomes: string[] = [];
    h.jobs.onRunEnded((event) => outcomes.push(event.outcome));
    h.jobs.defineJob(
      'long',
      ({ signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
        }),
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('long', {});
    await flush(h.clock);
    // Another run took the lease (as a reclaim would): this worker's next heartbeat is refused.
    h.store.heartbeat = async () => ({ ok: false, cancelRequested: false });
    await h.clock.tickAsync(HEARTBEAT_MS);
    await flush(h.clock);
    expect(outcomes).toEqual(['lost']);
    expect((await h.jobs.get(id))?.status).toBe('in_progress');
  });

  it('a stored failure message drops its time-relative hint (read later, the count would be wrong)', async () => {
    h = await harness();
    h.jobs.defineJob('lookup', () => {
      throw new BreakwaterError('bulkhead_full', {
        message: 'The gift service is busy right now; try again in about 30 seconds.',
      });
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('lookup', {});
    await flush(h.clock);
    expect((await h.jobs.get(id))?.error?.message).toBe(
      'The gift service is busy right now; try again shortly.',
    );
  });

  it('a TypeError is classified fatal and not retried', async () => {
    h = await harness();
    h.jobs.defineJob('bug', () => {
      throw new TypeError('x is not a function');
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('bug', {});
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'failed',
      error: { code: 'internal_error', message: 'x is not a function', kind: 'fatal' },
    });
  });

  it('an unknown outcome of a write and our own rate limit are not retried, whatever attempts are left', async () => {
    h = await harness();
    const failures = [
      new BreakwaterError('outcome_unknown', { message: 'the charge may have gone through' }),
      new BreakwaterError('rate_limited', { retryAfterMs: 1000 }),
    ];
    h.jobs.defineJob('charge', (ctx: JobContext) => {
      throw failures[(ctx.payload as { n: number }).n]!;
    });
    h.jobs.start();
    const unknown = await h.jobs.enqueue('charge', { n: 0 }, { maxAttempts: 5 });
    const limited = await h.jobs.enqueue('charge', { n: 1 }, { maxAttempts: 5 });
    await flush(h.clock);
    expect(await h.jobs.get(unknown)).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: 'outcome_unknown', kind: 'transient' },
    });
    expect(await h.jobs.get(limited)).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: 'rate_limited', kind: 'transient' },
    });
  });

  it('exhausted attempts → failed with the last error and job.failed', async () => {
    h = await harness();
    h.jobs.defineJob(
      'down',
      () => {
        throw new Error('still down');
      },
      { backoff: fixedBackoff(100), maxAttempts: 2 },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('down', {});
    await flush(h.clock);
    await h.clock.tickAsync(100);
    await flush(h.clock);
    const error = { code: 'handler_failed', message: 'still down', kind: 'transient' };
    expect(await h.jobs.get(id)).toMatchObject({ status: 'failed', attempts: 2, error });
    const events = await h.store.events(id);
    expect(events.map((e) => e.type)).toEqual(['job.started', 'job.retrying', 'job.started', 'job.failed']);
    expect(events[3]!.payload).toEqual({ error, attempts: 2 });
  });

  it('a result that is not JSON fails the run permanently with invalid_payload', async () => {
    h = await harness();
    h.jobs.defineJob('weird', () => ({ n: 1n }));
    h.jobs.start();
    const id = await h.jobs.enqueue('weird', {});
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: 'invalid_payload', kind: 'permanent' },
    });
  });

  it('slots freed by handlers that settle together are claimed in one round', async () => {
    const clock = new FakeClock();
    const store = await openSqliteStore({ path: ':memory:', clock });
    const limits: number[] = [];
    const claim = store.claim.bind(store);
    store.claim = (options) => {
      limits.push(options.limit);
      return claim(options);
    };
    h = await harness({ clock }, store);
    const gate = deferred();
    h.jobs.defineJob(
      'batch',
      async () => {
        await gate.promise;
      },
      { concurrency: 4 },
    );
    for (let i = 0; i < 8; i++) await h.jobs.enqueue('batch', { i });
    h.jobs.start();
    await flush(h.clock);
    expect(limits).toEqual([4]);
    gate.resolve();
    await flush(h.clock);
    // One round for the four freed slots (not 1, then 3), then the hungry round after the last four settle.
    expect(limits).toEqual([4, 4, 4]);
    expect((await h.jobs.stats()).counts).toMatchObject({ completed: 8 });
  });

  it('at most `concurrency` runs of a type at once; a freed slot claims the next job', async () => {
    h = await harness();
    const gates = [deferred(), deferred(), deferred()];
    let active = 0;
    let most = 0;
    const started: number[] = [];
    h.jobs.defineJob<{ i: number }>(
      'slow',
      async (ctx) => {
        started.push(ctx.payload.i);
        active++;
        most = Math.max(most, active);
        await gates[ctx.payload.i]!.promise;
        active--;
      },
      { concurrency: 2 },
    );
    h.jobs.start();
    for (let i = 0; i < 3; i++) await h.jobs.enqueue('slow', { i });
    await flush(h.clock);
    expect(started).toEqual([0, 1]);
    expect((await h.jobs.stats()).counts).toMatchObject({ in_progress: 2, pending: 1 });
    gates[1]!.resolve();
    await flush(h.clock);
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.resolve();
    gates[2]!.resolve();
    await flush(h.clock);
    expect(most).toBe(2);
    expect((await h.jobs.stats()).counts.completed).toBe(3);
  });

  it('a delayed job wakes the worker at its runAt, not at a poll', async () => {
    h = await harness({ pollMs: 3_600_000 });
    const ran: number[] = [];
    h.jobs.defineJob('later', () => void ran.push(h.clock.now()));
    h.jobs.start();
    const t0 = h.clock.now();
    await h.jobs.enqueue('later', {}, { delayMs: 1_234 });
    await h.clock.tickAsync(1_233);
    expect(ran).toEqual([]);
    await h.clock.tickAsync(1);
    await flush(h.clock);
    expect(ran).toEqual([t0 + 1_234]);
  });

  it("a lost worker's job is reclaimed when its lease expires, not at a poll", async () => {
    h = await harness({ pollMs: 3_600_000 });
    const ran: [number, number][] = [];
    h.jobs.defineJob('email', (ctx) => void ran.push([h.clock.now(), ctx.attempt]));
    const t0 = h.clock.now();
    const id = await h.jobs.enqueue('email', {});
    // Another worker claims it and is never heard from again.
    await h.store.claim({ owner: 'lost', types: ['email'], limit: 1, leaseMs: 7_000 });
    h.jobs.start();
    await flush(h.clock);
    await h.clock.tickAsync(6_999);
    expect(ran).toEqual([]);
    await h.clock.tickAsync(1);
    await flush(h.clock);
    expect(ran).toEqual([[t0 + 7_000, 2]]);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', attempts: 2 });
  });

  it('a job this worker runs and heartbeats is not reclaimed by it when the first lease term ends', async () => {
    h = await harness({ pollMs: 3_600_000 });
    const gate = deferred();
    let runs = 0;
    h.jobs.defineJob(
      'slow',
      async () => {
        runs++;
        await gate.promise;
      },
      { concurrency: 2 },
    );
    const id = await h.jobs.enqueue('slow', {});
    h.jobs.start();
    await flush(h.clock);
    // Several lease terms pass; the type has a free slot, so the worker keeps re-reading nextRunAt.
    for (let i = 0; i < 10; i++) await h.clock.tickAsync(10_000);
    expect(runs).toBe(1);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'in_progress', attempts: 1, leaseToken: 1 });
    gate.resolve();
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', attempts: 1 });
  });

  it('jobs enqueued before start() run when it starts; a type defined after start() is picked up', async () => {
    h = await harness();
    const ran: string[] = [];
    h.jobs.defineJob('a', () => void ran.push('a'));
    await h.jobs.enqueue('a', {});
    h.jobs.start();
    await flush(h.clock);
    h.jobs.defineJob('b', () => void ran.push('b'));
    await h.jobs.enqueue('b', {});
    await flush(h.clock);
    expect(ran).toEqual(['a', 'b']);
  });
});
