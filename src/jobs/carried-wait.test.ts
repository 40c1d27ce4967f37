import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError } from '../core/index.js';
import { withRetryHint } from '../core/index.js';
import { jobErrorMessage, retryAfterMsOf } from './error-view.js';
import { fixedBackoff, flush, harness, type Harness } from './test-support.js';

/**
 * The wait a failure carries (`retryAfterMs`: an open breaker's remaining time, a dependency's `Retry-After`,
 * a limit's reset) travels with the job: kept in its error as `retryAt`, never run inside by a retry, and
 * kept in the dead letter. Every time here is on the FakeClock.
 */

/** An open breaker's rejection as an upstream gives it (its dependency code, and the sentence with the wait). */
function breakerOpen(retryAfterMs: number): BreakwaterError {
  return new BreakwaterError('circuit_open', {
    retryAfterMs,
    source: 'gift',
    details: { dependency_code: 'gift_service_unavailable' },
  });
}

/** What a job keeps of `breakerOpen(…)` failing at `at`: the sentence made general, the wait as a time. */
function storedBreakerOpen(retryAt: number) {
  return {
    code: 'circuit_open',
    message: 'The service is temporarily unavailable after repeated failures; try again shortly.',
    kind: 'transient',
    userFacing: true,
    dependencyCode: 'gift_service_unavailable',
    retryAt,
  };
}

/** Moves the FakeClock by `ms` and lets the worker's runs settle. */
async function advance(h: Harness, ms: number): Promise<void> {
  await h.clock.tickAsync(ms);
  await flush(h.clock);
}

describe('a wait carried by a failure', () => {
  let h: Harness;

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
  });

  it('circuit_open with retryAfterMs 20 000 and a 1 s backoff: the next attempt runs at +20 s, not +1 s', async () => {
    h = await harness();
    const t0 = h.clock.now();
    const runs: number[] = [];
    const backoff = fixedBackoff(1_000);
    h.jobs.defineJob(
      'analysis',
      () => {
        runs.push(h.clock.now());
        if (runs.length === 1) throw breakerOpen(20_000);
        return 'ok';
      },
      { maxAttempts: 3, backoff },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('analysis', {});
    await flush(h.clock);
    const error = storedBreakerOpen(t0 + 20_000);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'pending', attempts: 1, runAt: t0 + 20_000, error });
    const retrying = (await h.store.events(id)).find((e) => e.type === 'job.retrying');
    expect(retrying?.payload).toEqual({ error, nextAttempt: 2, runAt: t0 + 20_000 });
    expect(backoff.calls).toEqual([1]);

    await advance(h, 1_000); // where the backoff alone would have run it
    await advance(h, 18_999);
    expect(runs).toEqual([t0]);
    await advance(h, 1);
    expect(runs).toEqual([t0, t0 + 20_000]);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', attempts: 2, result: 'ok' });
  });

  it('the backoff wins when it ends later than the wait; the error still keeps the wait', async () => {
    h = await harness();
    const t0 = h.clock.now();
    let runs = 0;
    h.jobs.defineJob(
      'analysis',
      () => {
        if (++runs === 1) throw breakerOpen(2_000);
        return 'ok';
      },
      { backoff: fixedBackoff(5_000) },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('analysis', {});
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'pending',
      runAt: t0 + 5_000,
      error: storedBreakerOpen(t0 + 2_000),
    });
    await advance(h, 4_999);
    expect(runs).toBe(1);
    await advance(h, 1);
    expect(runs).toBe(2);
  });

  it("a dependency's 503 with Retry-After (seconds, or an HTTP date on the runtime's clock) sets the rerun", async () => {
    h = await harness();
    const t0 = h.clock.now();
    const answers = [
      { status: 503, headers: { 'retry-after': '7' } },
      { status: 503, headers: { 'retry-after': new Date(t0 + 7_000 + 90_000).toUTCString() } },
    ];
    const runs: number[] = [];
    h.jobs.defineJob(
      'sync',
      () => {
        runs.push(h.clock.now());
        const answer = answers[runs.length - 1];
        if (answer === undefined) return 'synced';
        throw Object.assign(new Error(`the catalog answered HTTP ${answer.status}`), answer);
      },
      { maxAttempts: 3, backoff: fixedBackoff(1_000) },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('sync', {});
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'pending',
      runAt: t0 + 7_000,
      error: {
        code: 'upstream_unavailable',
        message: 'the catalog answered HTTP 503',
        kind: 'transient',
        retryAt: t0 + 7_000,
      },
    });
    await advance(h, 6_999);
    expect(runs).toEqual([t0]);
    await advance(h, 1);
    expect(runs).toEqual([t0, t0 + 7_000]);
    // The date is read against the FakeClock, not the machine's: exactly 90 s after the second run.
    expect((await h.jobs.get(id))?.runAt).toBe(t0 + 97_000);
    await advance(h, 90_000);
    expect(runs).toEqual([t0, t0 + 7_000, t0 + 97_000]);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', result: 'synced' });
  });

  it('the dead letter keeps the wait in its final error and its job.failed event', async () => {
    h = await harness();
    const t0 = h.clock.now();
    h.jobs.defineJob(
      'analysis',
      () => {
        throw breakerOpen(20_000);
      },
      { maxAttempts: 2, backoff: fixedBackoff(1_000) },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('analysis', {});
    await flush(h.clock);
    await advance(h, 20_000);
    const error = storedBreakerOpen(t0 + 40_000);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'failed',
      attempts: 2,
      finishedAt: t0 + 20_000,
      error,
    });
    const events = await h.store.events(id);
    expect(events.map((e) => e.type)).toEqual(['job.started', 'job.retrying', 'job.started', 'job.failed']);
    expect(events[3]!.payload).toEqual({ error, attempts: 2 });
    // A retry by hand is an operator's decision: it runs at once, whatever is left of the wait.
    expect(await h.jobs.retry(id)).toMatchObject({ status: 'pending', runAt: t0 + 20_000, error });
  });

  it('a wait past maxRetryWaitMs ends the job at once with the wait reported; one at the bound is waited out', async () => {
    h = await harness();
    const t0 = h.clock.now();
    const runs: Record<string, number[]> = { long: [], bound: [] };
    for (const [type, waitMs] of [
      ['long', 60_001],
      ['bound', 60_000],
    ] as const) {
      h.jobs.defineJob(
        type,
        () => {
          runs[type]!.push(h.clock.now());
          throw new BreakwaterError('upstream_unavailable', { retryAfterMs: waitMs });
        },
        { maxAttempts: 5, backoff: fixedBackoff(1_000), maxRetryWaitMs: 60_000 },
      );
    }
    h.jobs.start();
    const long = await h.jobs.enqueue('long', {});
    const bound = await h.jobs.enqueue('bound', {});
    await flush(h.clock);
    expect(await h.jobs.get(long)).toMatchObject({
      status: 'failed',
      attempts: 1,
      finishedAt: t0,
      error: { code: 'upstream_unavailable', kind: 'transient', retryAt: t0 + 60_001 },
    });
    expect(await h.jobs.get(bound)).toMatchObject({
      status: 'pending',
      runAt: t0 + 60_000,
      error: { retryAt: t0 + 60_000 },
    });
    await advance(h, 60_000);
    expect(runs).toEqual({ long: [t0], bound: [t0, t0 + 60_000] });
  });

  it('a failure that is never retried keeps its wait too (our own rate limit says when it resets)', async () => {
    h = await harness();
    const t0 = h.clock.now();
    h.jobs.defineJob('charge', () => {
      throw new BreakwaterError('rate_limited', { retryAfterMs: 4_200.4 });
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('charge', {}, { maxAttempts: 5 });
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: {
        code: 'rate_limited',
        message: 'Too many requests were made in a short time; try again shortly.',
        retryAt: t0 + 4_201,
      },
    });
  });

  it('a failure without a wait stores no retryAt and runs after the backoff alone', async () => {
    h = await harness();
    const t0 = h.clock.now();
    h.jobs.defineJob(
      'analysis',
      () => {
        throw new BreakwaterError('upstream_unavailable');
      },
      { backoff: fixedBackoff(1_500) },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('analysis', {});
    await flush(h.clock);
    const job = await h.jobs.get(id);
    expect(job).toMatchObject({ status: 'pending', runAt: t0 + 1_500 });
    expect(job?.error).not.toHaveProperty('retryAt');
  });

  it('defineJob rejects a maxRetryWaitMs that is not a whole number of ms >= 0', async () => {
    h = await harness();
    for (const bad of [-1, 1.5, Number.NaN, Infinity]) {
      expect(() => h.jobs.defineJob(`t${String(bad)}`, () => 1, { maxRetryWaitMs: bad })).toThrow(
        /defineJob: maxRetryWaitMs/,
      );
    }
    h.jobs.defineJob('zero', () => 1, { maxRetryWaitMs: 0 });
  });
});

describe('what is left of a stored wait', () => {
  const NOW = 1_700_000_000_000;

  it('retryAfterMsOf is max(0, ceil(retryAt - now)), null when no wait was known', () => {
    expect(retryAfterMsOf({ retryAt: NOW + 20_000 }, NOW)).toBe(20_000);
    expect(retryAfterMsOf({ retryAt: NOW + 20_000 }, NOW + 0.5)).toBe(20_000);
    expect(retryAfterMsOf({ retryAt: NOW + 20_000 }, NOW + 19_999)).toBe(1);
    expect(retryAfterMsOf({ retryAt: NOW + 20_000 }, NOW + 20_000)).toBe(0);
    expect(retryAfterMsOf({ retryAt: NOW + 20_000 }, NOW + 99_000)).toBe(0);
    expect(retryAfterMsOf({}, NOW)).toBeNull();
    expect(retryAfterMsOf(null, NOW)).toBeNull();
    expect(retryAfterMsOf(undefined, NOW)).toBeNull();
  });

  it("jobErrorMessage puts the wait left back into the sentence, in core sentenceFor's words", () => {
    const error = {
      message: 'The gift recommendation service is temporarily unavailable; try again shortly.',
      retryAt: NOW + 29_841,
    };
    expect(jobErrorMessage(error, NOW)).toBe(
      'The gift recommendation service is temporarily unavailable; try again in about 30 seconds.',
    );
    expect(jobErrorMessage(error, NOW + 28_500)).toBe(
      'The gift recommendation service is temporarily unavailable; try again in about 2 seconds.',
    );
    expect(jobErrorMessage(error, NOW + 29_841)).toBe(error.message);
    expect(jobErrorMessage({ message: error.message }, NOW)).toBe(error.message);
    expect(withRetryHint('Check the order first.', 5_000)).toBe('Check the order first.');
    expect(withRetryHint('Busy; try again shortly.', 150_000)).toBe('Busy; try again in about 3 minutes.');
  });
});
