import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock } from '../core/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type JobStore } from '../store/index.js';
import { createJobs } from './jobs.js';
import { harness, type Harness } from './test-support.js';
import { optionsErrorOf } from '../../test/support/options.js';

describe('jobs queue', () => {
  let h: Harness;

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
  });

  it('enqueue stores the job with the type defaults and the options given', async () => {
    h = await harness();
    h.jobs.defineJob('email', () => 'sent', { maxAttempts: 3 });
    const id = await h.jobs.enqueue('email', { to: 'ada@example.com' }, { delayMs: 1500, priority: 7 });
    expect(await h.jobs.get(id)).toMatchObject({
      id,
      type: 'email',
      status: 'pending',
      payload: { to: 'ada@example.com' },
      attempts: 0,
      maxAttempts: 3,
      runAt: h.clock.now() + 1500,
      priority: 7,
      idempotencyKey: null,
      timeoutMs: null,
    });
    const other = await h.jobs.enqueue('email', null, { maxAttempts: 1, timeoutMs: 250 });
    expect(await h.jobs.get(other)).toMatchObject({ maxAttempts: 1, timeoutMs: 250, priority: 0 });
    expect((await h.jobs.list({ type: 'email' })).map((j) => j.id)).toEqual([other, id]);
    expect(await h.jobs.stats()).toEqual({
      counts: { pending: 2, in_progress: 0, input_required: 0, completed: 0, failed: 0, canceled: 0 },
      oldestPendingAgeMs: 0,
    });
  });

  it('50 concurrent enqueues with one idempotency key give one job id', async () => {
    h = await harness();
    h.jobs.defineJob('email', () => undefined);
    const ids = await Promise.all(
      Array.from({ length: 50 }, (_, i) => h.jobs.enqueue('email', { i }, { idempotencyKey: 'order-42' })),
    );
    expect(new Set(ids).size).toBe(1);
    expect(await h.jobs.list()).toHaveLength(1);
    expect(await h.jobs.get(ids[0]!)).toMatchObject({ idempotencyKey: 'order-42', payload: { i: 0 } });
  });

  const cycle: Record<string, unknown> = {};
  cycle['self'] = cycle;
  const badInputs: [string, string, unknown, Record<string, unknown> | undefined][] = [
    ['unknown type', 'nope', {}, undefined],
    ['function payload', 'email', () => 1, undefined],
    ['BigInt payload', 'email', { n: 10n }, undefined],
    ['cyclic payload', 'email', cycle, undefined],
    ['undefined payload', 'email', undefined, undefined],
    ['NaN in payload', 'email', { n: NaN }, undefined],
    ['negative delayMs', 'email', {}, { delayMs: -1 }],
    ['NaN delayMs', 'email', {}, { delayMs: NaN }],
    ['Infinity delayMs', 'email', {}, { delayMs: Infinity }],
    ['maxAttempts 0', 'email', {}, { maxAttempts: 0 }],
    ['maxAttempts 1.5', 'email', {}, { maxAttempts: 1.5 }],
    ['priority 0.5', 'email', {}, { priority: 0.5 }],
    ['priority string', 'email', {}, { priority: '1' }],
    ['priority beyond 32 bits', 'email', {}, { priority: 2 ** 31 }],
    ['timeoutMs 0', 'email', {}, { timeoutMs: 0 }],
    ['timeoutMs NaN', 'email', {}, { timeoutMs: NaN }],
    ['empty idempotency key', 'email', {}, { idempotencyKey: '' }],
    ['idempotency key of 256 characters', 'email', {}, { idempotencyKey: 'k'.repeat(256) }],
    ['idempotency key not a string', 'email', {}, { idempotencyKey: 42 }],
  ];

  it.each(badInputs)(
    'bad input (%s) → invalid_payload 400, nothing written',
    async (_, type, payload, opts) => {
      h = await harness();
      h.jobs.defineJob('email', () => undefined);
      const error = await h.jobs.enqueue(type, payload, opts as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BreakwaterError);
      expect(error).toMatchObject({ code: 'invalid_payload', status: 400, kind: 'permanent' });
      expect((error as Error).message.length).toBeGreaterThan(10);
      expect(await h.jobs.list()).toEqual([]);
    },
  );

  it('an idempotency key of 255 characters is accepted', async () => {
    h = await harness();
    h.jobs.defineJob('email', () => undefined);
    const id = await h.jobs.enqueue('email', {}, { idempotencyKey: 'k'.repeat(255) });
    expect((await h.jobs.get(id))!.idempotencyKey).toHaveLength(255);
  });

  it('the unknown-type message names the type', async () => {
    h = await harness();
    await expect(h.jobs.enqueue('gift.analyse', {})).rejects.toThrow(
      'Unknown job type "gift.analyse": define it with defineJob first.',
    );
  });

  it('cancel of a pending job ends it at once and it never runs', async () => {
    h = await harness();
    let runs = 0;
    h.jobs.defineJob('email', () => void runs++);
    const id = await h.jobs.enqueue('email', {}, { delayMs: 1000 });
    expect(await h.jobs.cancel(id)).toMatchObject({ id, status: 'canceled' });
    h.jobs.start();
    await h.clock.tickAsync(10_000);
    expect(runs).toBe(0);
    expect((await h.store.events(id)).map((e) => [e.type, e.seq])).toEqual([['job.canceled', 1]]);
  });

  it('cancel and retry of a missing job → not_found; retry of a job not failed → invalid_payload', async () => {
    h = await harness();
    h.jobs.defineJob('email', () => undefined);
    await expect(h.jobs.cancel('job_missing')).rejects.toMatchObject({ code: 'not_found', status: 404 });
    await expect(h.jobs.retry('job_missing')).rejects.toMatchObject({ code: 'not_found', status: 404 });
    const id = await h.jobs.enqueue('email', {});
    await expect(h.jobs.retry(id)).rejects.toMatchObject({
      code: 'invalid_payload',
      details: { status: 'pending' },
      message: `Only a failed job can be retried; job ${id} is pending.`,
    });
  });

  it('defineJob rejects a second definition and bad options with an OptionsError naming them', async () => {
    h = await harness();
    h.jobs.defineJob('email', () => undefined);
    expect(() => h.jobs.defineJob('email', () => undefined)).toThrow(
      new RangeError("defineJob: type must be a type not defined yet, got 'email'"),
    );
    expect(() => h.jobs.defineJob('', () => undefined)).toThrow(
      "defineJob: type must be a non-empty string, got ''",
    );
    expect(() => h.jobs.defineJob('a', () => undefined, { concurrency: 0 })).toThrow(
      'defineJob: concurrency must be an integer >= 1, got 0',
    );
    expect(() => h.jobs.defineJob('a', () => undefined, { timeoutMs: -5 })).toThrow(
      'defineJob: timeoutMs must be an integer > 0, got -5',
    );
    expect(() => h.jobs.defineJob('a', () => undefined, { maxAttempts: 0 })).toThrow(
      'defineJob: maxAttempts must be an integer in [1, 2147483647], got 0',
    );
    expect(() => h.jobs.defineJob('a', () => undefined, { backoff: {} as never })).toThrow(
      'defineJob: backoff must be a Backoff with next(retry, previousMs), got an object',
    );
    expect(() => h.jobs.defineJob('a', 'x' as never)).toThrow(
      "defineJob: handler must be a function, got 'x'",
    );
    expect(() => h.jobs.defineJob('a', () => undefined, 'x' as never)).toThrow(
      "defineJob: options must be an object or left out, got 'x'",
    );
    // Nothing was defined by a refused call.
    h.jobs.defineJob('a', () => undefined);
  });

  it('defineJob reports every bad argument and option at once', async () => {
    h = await harness();
    const error = optionsErrorOf(() =>
      h.jobs.defineJob('', 'x' as never, {
        concurrency: 1.5,
        timeoutMs: 0,
        maxAttempts: 2 ** 31,
        backoff: { next: 1 } as never,
        maxRetryWaitMs: -1,
      }),
    );
    expect([error.code, error.owner, error.name]).toEqual(['invalid_options', 'defineJob', 'RangeError']);
    expect(error.problems).toEqual([
      { option: 'type', rule: 'a non-empty string', value: '' },
      { option: 'handler', rule: 'a function', value: 'x' },
      { option: 'concurrency', rule: 'an integer >= 1', value: 1.5 },
      { option: 'timeoutMs', rule: 'an integer > 0', value: 0 },
      { option: 'maxAttempts', rule: 'an integer in [1, 2147483647]', value: 2 ** 31 },
      { option: 'backoff', rule: 'a Backoff with next(retry, previousMs)', value: { next: 1 } },
      { option: 'maxRetryWaitMs', rule: 'an integer >= 0', value: -1 },
    ]);
    expect(error.message).toBe(
      "defineJob: type must be a non-empty string, got ''; handler must be a function, got 'x'; " +
        'concurrency must be an integer >= 1, got 1.5; timeoutMs must be an integer > 0, got 0; ' +
        'maxAttempts must be an integer in [1, 2147483647], got 2147483648; backoff must be a Backoff with ' +
        'next(retry, previousMs), got an object; maxRetryWaitMs must be an integer >= 0, got -1',
    );
  });

  it('stop refuses a bad graceMs, naming it', async () => {
    h = await harness();
    expect(() => h.jobs.stop({ graceMs: -1 })).toThrow(
      new RangeError('stop: graceMs must be a finite number >= 0, got -1'),
    );
    expect(() => h.jobs.stop({ graceMs: Infinity })).toThrow('stop: graceMs must be a finite number >= 0');
  });
});

describe('createJobs options', () => {
  let store: JobStore;
  afterEach(async () => store.close());

  it('validates every option, naming it', async () => {
    const clock = new FakeClock();
    store = await openSqliteStore({ path: ':memory:', clock });
    const make = (extra: object) => () => createJobs({ store, clock, ...extra });
    expect(make({ leaseMs: 0 })).toThrow(new RangeError('createJobs: leaseMs must be an integer > 0, got 0'));
    expect(make({ leaseMs: 1000, heartbeatMs: 1000 })).toThrow(
      'createJobs: heartbeatMs must be an integer in (0, 999], got 1000',
    );
    expect(make({ pollMs: NaN })).toThrow('createJobs: pollMs must be an integer > 0, got NaN');
    expect(make({ owner: '' })).toThrow("createJobs: owner must be a non-empty string, got ''");
    expect(make({ clock: {} })).toThrow(
      'createJobs: clock must be a Clock with now(), setTimeout() and clearTimeout(), got an object',
    );
    expect(make({ logger: { info() {} } })).toThrow(
      'createJobs: logger must be a pino-compatible logger with info, warn and error methods, got an object',
    );
    expect(() => createJobs({ store: undefined as never })).toThrow(
      'createJobs: store must be a JobStore, got undefined',
    );
    expect(() => createJobs(7 as never)).toThrow('createJobs: options must be an object, got 7');
    expect(make({})).not.toThrow();
  });

  it('a heartbeat left out is a third of the lease, which must then be at least 3 ms', async () => {
    const clock = new FakeClock();
    store = await openSqliteStore({ path: ':memory:', clock });
    expect(() => createJobs({ store, clock, leaseMs: 2 })).toThrow(
      new RangeError('createJobs: leaseMs must be an integer >= 3 when heartbeatMs is left out, got 2'),
    );
    expect(() => createJobs({ store, clock, leaseMs: 2, heartbeatMs: 1 })).not.toThrow();
    expect(() => createJobs({ store, clock, leaseMs: 3 })).not.toThrow();
  });

  it('reports every bad option at once, naming createJobs', async () => {
    const clock = new FakeClock();
    store = await openSqliteStore({ path: ':memory:', clock });
    const e = optionsErrorOf(() =>
      createJobs({ store: {} as never, clock, owner: '', leaseMs: 1000, heartbeatMs: 1000, pollMs: 0 }),
    );
    expect([e.code, e.owner]).toEqual(['invalid_options', 'createJobs']);
    expect(e.problems).toEqual([
      { option: 'store', rule: 'a JobStore', value: {} },
      { option: 'owner', rule: 'a non-empty string', value: '' },
      { option: 'pollMs', rule: 'an integer > 0', value: 0 },
      { option: 'heartbeatMs', rule: 'an integer in (0, 999]', value: 1000 },
    ]);
    expect(e.message).toBe(
      "createJobs: store must be a JobStore, got an object; owner must be a non-empty string, got ''; " +
        'pollMs must be an integer > 0, got 0; heartbeatMs must be an integer in (0, 999], got 1000',
    );
  });
});
