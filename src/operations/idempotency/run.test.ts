import { beforeEach, describe, expect, it } from 'vitest';
import { useCleanups } from '../../../test/support/cleanups.js';
import { BreakwaterError, FakeClock } from '../../core/index.js';
import { openStore, type Store } from '../../store/index.js';
import {
  IN_PROGRESS_RETRY_MS,
  runIdempotent,
  shouldReleaseIdempotency,
  storedBody,
  type IdempotencyClaimOptions,
  type IdempotentResponse,
} from './run.js';

const FP = 'f'.repeat(64);

describe('runIdempotent on the SQLite store', () => {
  const defer = useCleanups();
  let clock: FakeClock;
  let store: Store;
  let runs: number;

  beforeEach(async () => {
    clock = new FakeClock(Date.UTC(2025, 0, 1));
    store = await openStore({ url: ':memory:', clock });
    defer(() => store.close());
    runs = 0;
  });

  const claim = (over: Partial<IdempotencyClaimOptions> = {}): IdempotencyClaimOptions => ({
    store: store.idempotency,
    scope: 'token:a',
    key: 'k1',
    fingerprint: FP,
    clock,
    ...over,
  });
  const answer =
    (response: IdempotentResponse): (() => Promise<IdempotentResponse>) =>
    async () => {
      runs++;
      return response;
    };
  const created: IdempotentResponse = {
    status: 201,
    headers: { 'Content-Type': 'application/json', Location: '/orders/1' },
    body: '{"id":"1"}',
  };
  const stored201 = {
    status: 201,
    headers: { 'content-type': 'application/json', location: '/orders/1' },
    body: '{"id":"1"}',
    bodyEncoding: 'utf8',
  };

  it('runs once, stores the response before answering, and replays it', async () => {
    const first = await runIdempotent(claim(), async () => {
      runs++;
      // Still running: a concurrent request is told to ask again within a second.
      await expect(runIdempotent(claim(), answer(created))).rejects.toMatchObject({
        code: 'idempotency_in_progress',
        status: 409,
        retryAfterMs: IN_PROGRESS_RETRY_MS,
      });
      return created;
    });
    expect(first).toEqual({ response: stored201, replayed: false, settled: 'stored' });
    // Stored by the time the caller has the answer.
    expect((await store.idempotency.get('token:a', 'k1'))?.state).toBe('completed');
    const again = await runIdempotent(claim(), answer(created));
    expect(again).toEqual({ response: stored201, replayed: true });
    expect(runs).toBe(1);
  });

  it('answers 422 idempotency_key_mismatch for the key with another fingerprint', async () => {
    await runIdempotent(claim(), answer(created));
    const error = await runIdempotent(claim({ fingerprint: 'e'.repeat(64) }), answer(created)).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(BreakwaterError);
    expect([error.code, error.status]).toEqual(['idempotency_key_mismatch', 422]);
    expect(runs).toBe(1);
  });

  it('keys are scoped: another scope runs its own request', async () => {
    await runIdempotent(claim(), answer(created));
    const other = await runIdempotent(
      claim({ scope: 'token:b', fingerprint: 'e'.repeat(64) }),
      answer({ status: 200 }),
    );
    expect(other.replayed).toBe(false);
    expect(other.response.status).toBe(200);
    expect((await runIdempotent(claim(), answer(created))).response.status).toBe(201);
    expect(
      (await runIdempotent(claim({ scope: 'token:b', fingerprint: 'e'.repeat(64) }), answer(created)))
        .response.status,
    ).toBe(200);
  });

  it('stores the 500 of a run that threw unexpectedly (it may have done its work), and replays it', async () => {
    const boom = new Error('boom');
    await expect(
      runIdempotent(claim(), async () => {
        runs++;
        throw boom;
      }),
    ).rejects.toBe(boom);
    const replay = await runIdempotent(claim(), answer(created));
    expect([replay.replayed, replay.response.status, runs]).toEqual([true, 500, 1]);
  });

  it('releases the key when the run threw a retry-safe refusal (429, 503), so the retry runs', async () => {
    const limited = new BreakwaterError('rate_limited');
    await expect(runIdempotent(claim(), () => Promise.reject(limited))).rejects.toBe(limited);
    expect(await store.idempotency.get('token:a', 'k1')).toBeUndefined();
    expect((await runIdempotent(claim(), answer(created))).replayed).toBe(false);
    expect(runs).toBe(1);
  });

  it('stores the problem of a run that threw an unknown outcome, and replays it', async () => {
    const unknown = new BreakwaterError('outcome_unknown');
    await expect(runIdempotent(claim(), () => Promise.reject(unknown))).rejects.toBe(unknown);
    const replay = await runIdempotent(claim(), answer(created));
    expect(replay.replayed).toBe(true);
    expect(replay.response.status).toBe(504);
    expect(replay.response.headers).toEqual({ 'content-type': 'application/problem+json; charset=utf-8' });
    expect(JSON.parse(replay.response.body)).toMatchObject({ code: 'outcome_unknown', outcome: 'unknown' });
    expect(runs).toBe(0);
  });

  it.each([408, 409, 425, 429, 503])('releases the key after a %i answer', async (status) => {
    const result = await runIdempotent(claim(), answer({ status }));
    expect(result.settled).toBe('released');
    expect((await runIdempotent(claim(), answer(created))).replayed).toBe(false);
    expect(runs).toBe(2);
  });

  it.each([200, 400, 404, 500, 502, 504])('stores a %i answer', async (status) => {
    expect((await runIdempotent(claim(), answer({ status, body: 'x' }))).settled).toBe('stored');
    expect(await runIdempotent(claim(), answer(created))).toMatchObject({
      replayed: true,
      response: { status },
    });
  });

  it('stores a 503 whose problem says the outcome is unknown', async () => {
    const problem: IdempotentResponse = {
      status: 503,
      headers: { 'content-type': 'application/problem+json' },
      body: JSON.stringify({ code: 'upstream_unavailable', outcome: 'unknown' }),
    };
    expect((await runIdempotent(claim(), answer(problem))).settled).toBe('stored');
    expect((await runIdempotent(claim(), answer(created))).replayed).toBe(true);
  });

  it('takes over a key whose owner died once its lock expires; the late owner does not overwrite', async () => {
    let finishFirst!: (response: IdempotentResponse) => void;
    const first = runIdempotent(
      claim({ lockMs: 5000 }),
      () => new Promise((resolve) => (finishFirst = resolve)),
    );
    await clock.tickAsync(0);
    await expect(runIdempotent(claim(), answer(created))).rejects.toMatchObject({ retryAfterMs: 1000 });
    clock.tick(4999);
    await expect(runIdempotent(claim(), answer(created))).rejects.toMatchObject({ retryAfterMs: 1 });
    clock.tick(1);
    expect(await runIdempotent(claim(), answer(created))).toMatchObject({
      replayed: false,
      settled: 'stored',
    });
    finishFirst({ status: 200, body: 'late' });
    expect(await first).toMatchObject({ replayed: false, settled: 'not_owner', response: { status: 200 } });
    expect(await runIdempotent(claim(), answer({ status: 200 }))).toMatchObject({
      replayed: true,
      response: stored201,
    });
  });

  it('starts afresh once the record expired', async () => {
    await runIdempotent(claim({ lockMs: 500, ttlMs: 1000 }), answer(created));
    clock.tick(1000);
    expect((await runIdempotent(claim({ lockMs: 500, ttlMs: 1000 }), answer(created))).replayed).toBe(false);
    expect(runs).toBe(2);
  });

  it('refuses a ttlMs that is not greater than lockMs: a record must outlive the lock of its run', async () => {
    // ttlMs 1000 under the default 60 s lock: a 2 s run would outlive its record, and every retry would run.
    await expect(runIdempotent(claim({ ttlMs: 1000 }), answer(created))).rejects.toThrow(
      new RangeError(
        'runIdempotent: ttlMs must be greater than lockMs (60000 ms): a record must outlive the lock of the run that holds it, got 1000',
      ),
    );
    await expect(runIdempotent(claim({ lockMs: 5000, ttlMs: 5000 }), answer(created))).rejects.toThrow(
      'runIdempotent: ttlMs must be greater than lockMs (5000 ms)',
    );
    expect(runs).toBe(0);
    expect(await store.idempotency.get('token:a', 'k1')).toBeUndefined();
    expect((await runIdempotent(claim({ lockMs: 5000, ttlMs: 5001 }), answer(created))).settled).toBe(
      'stored',
    );
  });

  it('three requests with one key and a 2 s run, at the tightest lifetimes allowed: one run, one 409, one replay', async () => {
    const lifetimes = { lockMs: 2_001, ttlMs: 2_002 };
    let finish!: () => void;
    const first = runIdempotent(claim(lifetimes), async () => {
      runs++;
      await new Promise<void>((resolve) => (finish = resolve));
      return created;
    });
    await clock.tickAsync(1_000);
    await expect(runIdempotent(claim(lifetimes), answer(created))).rejects.toMatchObject({
      code: 'idempotency_in_progress',
      retryAfterMs: 1_000,
    });
    await clock.tickAsync(1_000);
    finish();
    expect(await first).toMatchObject({ replayed: false, settled: 'stored' });
    await clock.tickAsync(1);
    expect(await runIdempotent(claim(lifetimes), answer(created))).toMatchObject({
      replayed: true,
      response: stored201,
    });
    expect(runs).toBe(1);
  });

  it('stores bytes as base64 and gives them back as a Buffer', async () => {
    const bytes = Buffer.from([0, 255, 1, 254]);
    await runIdempotent(claim(), answer({ status: 200, body: bytes }));
    const replay = await runIdempotent(claim(), answer(created));
    expect(replay.response).toMatchObject({ body: 'AP8B/g==', bodyEncoding: 'base64' });
    expect(storedBody(replay.response)).toEqual(bytes);
  });

  it('answers the response when the store cannot be written after the run', async () => {
    const result = await runIdempotent(claim(), async () => {
      await store.close();
      return created;
    });
    expect(result).toMatchObject({ response: stored201, replayed: false, settled: 'failed' });
    expect(result.settleError).toBeInstanceOf(Error);
  });

  it('checks its options', async () => {
    await expect(runIdempotent(claim({ lockMs: 0 }), answer(created))).rejects.toThrow(
      'runIdempotent: lockMs must be a finite number > 0, got 0',
    );
    await expect(runIdempotent(claim({ key: '' }), answer(created))).rejects.toThrow(RangeError);
    expect(runs).toBe(0);
  });
});

describe('shouldReleaseIdempotency', () => {
  const response = (status: number, outcome?: string) => ({
    status,
    headers: { 'content-type': 'application/problem+json; charset=utf-8' },
    body: JSON.stringify({ outcome }),
    bodyEncoding: 'utf8' as const,
  });

  it('releases the retry-safe statuses, thrown or answered, never an unknown outcome', () => {
    const thrown = { error: new Error('boom') };
    expect(shouldReleaseIdempotency(response(500), thrown)).toBe(false);
    expect(shouldReleaseIdempotency(response(429), { error: new BreakwaterError('rate_limited') })).toBe(
      true,
    );
    expect(shouldReleaseIdempotency(response(500))).toBe(false);
    expect(shouldReleaseIdempotency(response(503))).toBe(true);
    expect(shouldReleaseIdempotency(response(503, 'unknown'))).toBe(false);
    expect(shouldReleaseIdempotency(response(504, 'unknown'), thrown)).toBe(false);
    expect(
      shouldReleaseIdempotency(response(503), {
        error: new BreakwaterError('outcome_unknown', { status: 503 }),
      }),
    ).toBe(false);
  });
});
