import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock, isBreakwaterError, retryAfterHeader } from '../core/index.js';
import { MemoryRateLimitStore } from '../policy/index.js';
import { Admission, BacklogGauge } from './admission.js';
import { defineWebhookSource } from './source.js';
import { stripeVerifier } from './verifiers/index.js';

const verifier = stripeVerifier({ secrets: ['whsec_test'] });

/** A backlog count that answers what the test says, counting reads. */
function counter(initial: number) {
  const state = { value: initial, reads: 0, fail: false };
  const read = async () => {
    state.reads++;
    if (state.fail) throw new Error('database is locked');
    return state.value;
  };
  return { state, read };
}

describe('BacklogGauge', () => {
  afterEach(() => vi.restoreAllMocks());

  it('reads once per cache period and adds this process’s accepts in between', async () => {
    const clock = new FakeClock();
    const { state, read } = counter(10);
    const gauge = new BacklogGauge(read, 1_000, clock);

    // The first estimate waits for the first read.
    await expect(Promise.resolve(gauge.estimate())).resolves.toBe(10);
    expect(state.reads).toBe(1);
    gauge.accepted();
    gauge.accepted();
    state.value = 3; // handled meanwhile: not seen until the next read
    expect(gauge.estimate()).toBe(12);
    await clock.tickAsync(999);
    expect(gauge.estimate()).toBe(12);
    expect(state.reads).toBe(1);

    // Cache expired: the caller waits for a fresh read instead of being judged on the old count (the backlog
    // drained meanwhile: 3, not 12).
    await clock.tickAsync(1);
    await expect(Promise.resolve(gauge.estimate())).resolves.toBe(3);
    expect(state.reads).toBe(2);
    expect(gauge.estimate()).toBe(3);
  });

  it('after a quiet spell longer than the cache, the first estimate is a fresh count, not the old one', async () => {
    const clock = new FakeClock();
    const { state, read } = counter(2);
    const gauge = new BacklogGauge(read, 1_000, clock);
    await gauge.estimate();
    state.value = 0; // the backlog drained while nothing arrived
    await clock.tickAsync(5_000);
    await expect(Promise.resolve(gauge.estimate())).resolves.toBe(0);
    expect(state.reads).toBe(2);
  });

  it('shares one read between concurrent first callers', async () => {
    const clock = new FakeClock();
    const { state, read } = counter(7);
    const gauge = new BacklogGauge(read, 1_000, clock);
    const answers = await Promise.all([gauge.estimate(), gauge.estimate(), gauge.estimate()]);
    expect(answers).toEqual([7, 7, 7]);
    expect(state.reads).toBe(1);
  });

  it('keeps the last count when a read fails, warns, and tries again after the cache period', async () => {
    const warnings: Error[] = [];
    vi.spyOn(process, 'emitWarning').mockImplementation((w) => void warnings.push(w as Error));
    const clock = new FakeClock();
    const { state, read } = counter(4);
    const gauge = new BacklogGauge(read, 500, clock);
    expect(await gauge.estimate()).toBe(4);
    state.fail = true;
    await clock.tickAsync(500);
    gauge.estimate();
    await clock.tickAsync(0);
    expect(gauge.estimate()).toBe(4);
    expect(warnings.map((w) => [w.name, w.message])).toEqual([
      ['BreakwaterWebhooksWarning', 'webhooks: reading the webhook backlog failed: database is locked'],
    ]);
    state.fail = false;
    state.value = 9;
    await clock.tickAsync(500);
    gauge.estimate();
    await clock.tickAsync(0);
    expect(gauge.estimate()).toBe(9);
    expect(state.reads).toBe(3);
  });

  it('starts from 0 when the very first read fails', async () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const { state, read } = counter(4);
    state.fail = true;
    const gauge = new BacklogGauge(read, 500, new FakeClock());
    expect(await gauge.estimate()).toBe(0);
  });
});

describe('Admission', () => {
  it('refuses over the rate limit with rate_limited (429) and a whole-second Retry-After', async () => {
    const clock = new FakeClock();
    const source = defineWebhookSource({
      name: 'payments',
      verifier,
      rateLimit: { limit: 2, windowMs: 1_000, algorithm: 'fixed_window' },
    });
    const admission = new Admission(source, {
      backlog: async () => 0,
      backlogCacheMs: 1_000,
      rateLimitStore: new MemoryRateLimitStore(),
      clock,
    });
    expect(await admission.check()).toBeUndefined();
    expect(await admission.check()).toBeUndefined();
    await clock.tickAsync(300);
    const refused = await admission.check();
    expect(isBreakwaterError(refused)).toBe(true);
    expect(refused).toMatchObject({
      code: 'rate_limited',
      status: 429,
      retryAfterMs: 700,
      source: 'webhooks:payments',
    });
    expect(retryAfterHeader(refused!)).toBe('1');
    await clock.tickAsync(700);
    expect(await admission.check()).toBeUndefined();
  });

  it('refuses at the backlog limit with overloaded (503) and the source’s Retry-After', async () => {
    const clock = new FakeClock();
    const source = defineWebhookSource({
      name: 'payments',
      verifier,
      maxBacklog: 3,
      backlogRetryAfterMs: 20_000,
    });
    let backlog = 1;
    const admission = new Admission(source, {
      backlog: async (name) => (name === 'payments' ? backlog : -1),
      backlogCacheMs: 1_000,
      rateLimitStore: new MemoryRateLimitStore(),
      clock,
    });
    expect(await admission.check()).toBeUndefined();
    admission.accepted();
    expect(await admission.check()).toBeUndefined(); // 1 + 1
    admission.accepted();
    const refused = await admission.check(); // 1 + 2 = 3: at the limit
    expect(refused).toMatchObject({
      code: 'overloaded',
      status: 503,
      retryAfterMs: 20_000,
      details: { max_backlog: 3 },
    });
    expect(refused!.message).toBe(
      'The payments webhook backlog is full (3 events waiting); try again in about 20 seconds.',
    );
    expect(retryAfterHeader(refused!)).toBe('20');
    backlog = 0; // the worker caught up: seen at the next read
    await clock.tickAsync(1_000);
    await admission.check();
    await clock.tickAsync(0);
    expect(await admission.check()).toBeUndefined();
  });

  it('with no limits declared admits everything and never reads the backlog', async () => {
    const source = defineWebhookSource({ name: 'free', verifier });
    let reads = 0;
    const admission = new Admission(source, {
      backlog: async () => ++reads,
      backlogCacheMs: 1,
      rateLimitStore: new MemoryRateLimitStore(),
      clock: new FakeClock(),
    });
    for (let i = 0; i < 5; i++) expect(await admission.check()).toBeUndefined();
    expect(reads).toBe(0);
  });
});
