import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError, isBreakwaterError } from '../core/index.js';
import type { JobStore } from '../store/index.js';
import {
  HEARTBEAT_MS,
  LEASE_MS,
  deferred,
  eventTypes,
  fixedBackoff,
  flush,
  harness,
  type Harness,
} from './test-support.js';

/** Resolves with the abort reason when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) =>
    signal.addEventListener('abort', () => resolve(signal.reason), { once: true }),
  );
}

describe('a run: cancel, timeout, lost lease, shutdown', () => {
  let h: Harness;

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
  });

  it('cancel of a running job aborts its signal within one heartbeat; it ends canceled, not retried', async () => {
    // A store whose notifications do not reach the worker: the cancel must come through the heartbeat.
    const base = await harness();
    await base.jobs.stop();
    const deaf: JobStore = Object.assign(Object.create(base.store) as JobStore, {
      subscribe: () => ({ dispose() {} }),
    });
    h = await harness({ clock: base.clock, pollMs: 1_000 }, deaf);
    let reason: unknown;
    let abortedAt = 0;
    let runs = 0;
    h.jobs.defineJob('long', async (ctx) => {
      runs++;
      reason = await aborted(ctx.signal);
      abortedAt = h.clock.now();
      throw reason;
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('long', {});
    await h.clock.tickAsync(1_000);
    const claimedAt = (await h.store.events(id))[0]!.timestamp;
    await h.clock.tickAsync(2_000);
    const cancelAt = h.clock.now();
    expect(await h.jobs.cancel(id)).toMatchObject({ status: 'in_progress', cancelRequestedAt: cancelAt });
    await h.clock.tickAsync(HEARTBEAT_MS);
    await flush(h.clock);
    expect(abortedAt).toBeLessThanOrEqual(cancelAt + HEARTBEAT_MS);
    expect(abortedAt).toBe(claimedAt + HEARTBEAT_MS);
    expect(isBreakwaterError(reason) && reason.code).toBe('canceled');
    expect(await h.jobs.get(id)).toMatchObject({ status: 'canceled', attempts: 1 });
    await h.clock.tickAsync(60_000);
    expect(runs).toBe(1);
    expect(await eventTypes(h.store, id)).toEqual([
      ['job.started', 1],
      ['job.canceled', 2],
    ]);
  });

  it('a cancel_requested notification aborts the running handler at once', async () => {
    h = await harness();
    let reason: unknown;
    h.jobs.defineJob('long', async (ctx) => {
      reason = await aborted(ctx.signal);
      return 'ignored';
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('long', {});
    await flush(h.clock);
    await h.jobs.cancel(id);
    await flush(h.clock);
    expect(reason).toMatchObject({ code: 'canceled' });
    expect(await h.jobs.get(id)).toMatchObject({ status: 'canceled', result: null });
  });

  it('a timeout aborts the signal with `timeout` and counts as a failed (transient) attempt', async () => {
    h = await harness();
    let reason: unknown;
    h.jobs.defineJob(
      'slow',
      async (ctx) => {
        if (ctx.attempt === 2) return 'fast enough';
        reason = await aborted(ctx.signal);
        throw new Error('gave up');
      },
      { timeoutMs: 2_000, backoff: fixedBackoff(500) },
    );
    h.jobs.start();
    const t0 = h.clock.now();
    const id = await h.jobs.enqueue('slow', {});
    await flush(h.clock);
    await h.clock.tickAsync(1_999);
    expect(reason).toBeUndefined();
    await h.clock.tickAsync(1);
    await flush(h.clock);
    expect(reason).toMatchObject({
      code: 'timeout',
      message: 'The job ran longer than its timeout of 2000 ms.',
    });
    const error = {
      code: 'timeout',
      message: 'The job ran longer than its timeout of 2000 ms.',
      kind: 'transient',
    };
    expect(await h.jobs.get(id)).toMatchObject({ status: 'pending', attempts: 1, runAt: t0 + 2_500, error });
    await h.clock.tickAsync(500);
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', attempts: 2, result: 'fast enough' });
  });

  it('a cancel after the timeout outranks it: the run ends canceled, its signal keeps the timeout', async () => {
    h = await harness();
    let reason: unknown;
    const release = deferred<void>();
    h.jobs.defineJob(
      'slow',
      async (ctx) => {
        reason = await aborted(ctx.signal);
        await release.promise;
        throw new Error('gave up');
      },
      { timeoutMs: 2_000, backoff: fixedBackoff(500) },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('slow', {});
    await flush(h.clock);
    await h.clock.tickAsync(2_000);
    await flush(h.clock);
    expect(reason).toMatchObject({ code: 'timeout' });
    await h.jobs.cancel(id);
    await flush(h.clock);
    release.resolve();
    await flush(h.clock);
    expect(reason).toMatchObject({ code: 'timeout' });
    expect(await h.jobs.get(id)).toMatchObject({ status: 'canceled', attempts: 1, error: null });
  });

  it('a cancel seen while the end is written changes nothing: its log line keeps the failure written', async () => {
    const base = await harness();
    await base.jobs.stop();
    const gate = deferred<void>();
    const failing = { started: false };
    const slow: JobStore = Object.assign(Object.create(base.store) as JobStore, {
      fail: async (...args: Parameters<JobStore['fail']>) => {
        failing.started = true;
        await gate.promise;
        return base.store.fail(...args);
      },
    });
    const lines: [string, Record<string, unknown>][] = [];
    const write = (fields: object, message: string) =>
      void lines.push([message, fields as Record<string, unknown>]);
    h = await harness({ clock: base.clock, logger: { info: write, warn: write, error: write } }, slow);
    h.jobs.defineJob(
      'flaky',
      () => {
        throw new BreakwaterError('upstream_unavailable', { message: 'The dependency is down.' });
      },
      { backoff: fixedBackoff(500) },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('flaky', {});
    await flush(h.clock);
    expect(failing.started).toBe(true);
    // The store's fail ends a job with a cancel request `canceled`; the run's line still names what it wrote.
    await h.jobs.cancel(id);
    await flush(h.clock);
    gate.resolve();
    await flush(h.clock);
    expect(lines.find(([message]) => message === 'job run ended')?.[1]).toMatchObject({
      job_id: id,
      outcome: 'canceled',
      code: 'upstream_unavailable',
    });
  });

  it('a signal first read after the timeout is already aborted, with the timeout as its reason', async () => {
    h = await harness();
    const gate = deferred();
    let seen: { aborted: boolean; reason: unknown } | undefined;
    h.jobs.defineJob(
      'late',
      async (ctx) => {
        await gate.promise;
        seen = { aborted: ctx.signal.aborted, reason: ctx.signal.reason };
      },
      { timeoutMs: 1_000, maxAttempts: 1 },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('late', {});
    await flush(h.clock);
    await h.clock.tickAsync(1_000);
    gate.resolve();
    await flush(h.clock);
    expect(seen).toMatchObject({
      aborted: true,
      reason: { code: 'timeout', message: 'The job ran longer than its timeout of 1000 ms.' },
    });
    expect(await h.jobs.get(id)).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
  });

  it("a job's own timeoutMs wins over its type's", async () => {
    h = await harness();
    let abortedAt: number | undefined;
    h.jobs.defineJob(
      'slow',
      async (ctx) => {
        await aborted(ctx.signal);
        abortedAt = h.clock.now();
      },
      { timeoutMs: 60_000, maxAttempts: 1 },
    );
    h.jobs.start();
    const t0 = h.clock.now();
    const id = await h.jobs.enqueue('slow', {}, { timeoutMs: 300 });
    await flush(h.clock);
    await h.clock.tickAsync(300);
    await flush(h.clock);
    expect(abortedAt).toBe(t0 + 300);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'failed', error: { code: 'timeout' } });
  });

  it('a handler ignoring its signal keeps the lease for leaseMs after the abort; no second run before', async () => {
    h = await harness();
    const gate = deferred<string>();
    let runs = 0;
    h.jobs.defineJob(
      'stubborn',
      async () => {
        runs++;
        return gate.promise; // ignores ctx.signal
      },
      { timeoutMs: 1_000 },
    );
    h.jobs.start();
    const t0 = h.clock.now();
    const id = await h.jobs.enqueue('stubborn', {});
    await flush(h.clock);
    // Aborted at t0 + 1 s; heartbeats at +10 s, +20 s, +30 s hold the lease up to exactly t0 + 1 s + leaseMs.
    await h.clock.tickAsync(LEASE_MS);
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'in_progress',
      leaseExpiresAt: t0 + 1_000 + LEASE_MS,
    });
    await h.clock.tickAsync(1_000 - 1);
    const other = { owner: 'w2', types: ['stubborn'], limit: 1, leaseMs: LEASE_MS };
    expect(await h.store.claim(other)).toEqual([]);
    await h.clock.tickAsync(1);
    const [reclaim] = await h.store.claim(other);
    expect(reclaim!.job).toMatchObject({ attempts: 2, leaseOwner: 'w2' });
    // The next heartbeat (t0 + 40 s) is not sent: the lease was given up.
    await h.clock.tickAsync(HEARTBEAT_MS);
    expect(runs).toBe(1);
    // The late result is fenced off: the reclaiming run owns the job.
    gate.resolve('late');
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'in_progress', leaseOwner: 'w2', leaseToken: 2 });
  });

  it('lease lost: after a reclaim the first run is aborted and its completion changes nothing', async () => {
    // Heartbeats that never reach the store (a partition): the lease lapses and another worker reclaims it.
    const base = await harness();
    await base.jobs.stop();
    const partitioned: JobStore = Object.assign(Object.create(base.store) as JobStore, {
      heartbeat: () => Promise.reject(new Error('connection lost')),
    });
    h = await harness({ clock: base.clock }, partitioned);
    const gate = deferred<string>();
    h.jobs.defineJob('work', () => gate.promise);
    h.jobs.start();
    const id = await h.jobs.enqueue('work', {});
    await flush(h.clock);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    await h.clock.tickAsync(LEASE_MS);
    const [second] = await base.store.claim({ owner: 'w2', types: ['work'], limit: 1, leaseMs: LEASE_MS });
    expect(second!.token).toBe(2);
    const before = await h.jobs.get(id);
    const eventsBefore = await h.store.events(id);
    gate.resolve('first run result');
    await flush(h.clock);
    process.off('warning', onWarning);
    expect(await h.jobs.get(id)).toEqual(before);
    expect(await h.store.events(id)).toEqual(eventsBefore);
    expect(warnings.some((m) => m.includes('connection lost'))).toBe(true);
    // The second run settles normally.
    await base.store.complete({ id, token: 2 }, 'second run result');
    expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', result: 'second run result' });
  });

  it('a heartbeat answering ok: false aborts the handler and nothing is settled', async () => {
    h = await harness();
    let reason: unknown;
    h.jobs.defineJob('work', async (ctx) => {
      reason = await aborted(ctx.signal);
      return 'too late';
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('work', {});
    await flush(h.clock);
    // Another worker reclaims after the lease lapsed on its clock: our token is now stale.
    const job = (await h.jobs.get(id))!;
    await h.store.release({ id, token: job.leaseToken });
    const [other] = await h.store.claim({ owner: 'w2', types: ['work'], limit: 1, leaseMs: LEASE_MS });
    await h.clock.tickAsync(HEARTBEAT_MS);
    await flush(h.clock);
    expect(reason).toMatchObject({ code: 'canceled' });
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'in_progress',
      leaseOwner: 'w2',
      leaseToken: other!.token,
    });
  });

  it('stop(): stops claiming, lets runs finish within graceMs, then aborts and releases the rest', async () => {
    h = await harness();
    const quick = deferred();
    let slowReason: unknown;
    h.jobs.defineJob<{ name: string }>(
      'work',
      async (ctx) => {
        if (ctx.payload.name === 'quick') return quick.promise;
        slowReason = await aborted(ctx.signal);
        throw slowReason;
      },
      { concurrency: 2 },
    );
    h.jobs.start();
    const quickId = await h.jobs.enqueue('work', { name: 'quick' });
    const slowId = await h.jobs.enqueue('work', { name: 'slow' });
    await flush(h.clock);
    let stopped = false;
    const stopping = h.jobs.stop({ graceMs: 5_000 }).then(() => (stopped = true));
    const laterId = await h.jobs.enqueue('work', { name: 'later' });
    await h.clock.tickAsync(1_000);
    quick.resolve();
    await flush(h.clock);
    expect(await h.jobs.get(quickId)).toMatchObject({ status: 'completed' });
    expect(stopped).toBe(false);
    await h.clock.tickAsync(3_999);
    expect(slowReason).toBeUndefined();
    await h.clock.tickAsync(1);
    await flush(h.clock);
    await stopping;
    expect(slowReason).toMatchObject({ code: 'canceled', message: 'The worker is shutting down.' });
    // Released: pending again, the run not counted, no event.
    expect(await h.jobs.get(slowId)).toMatchObject({ status: 'pending', attempts: 0, leaseOwner: null });
    expect(await eventTypes(h.store, slowId)).toEqual([['job.started', 1]]);
    expect(await h.jobs.get(laterId)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(() => h.jobs.start()).toThrow(/after stop/);
  });
});
