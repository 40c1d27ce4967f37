import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, type Logger } from '../core/index.js';
import { CircuitBreakerPolicy, ConsecutiveWindow } from '../policy/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type CounterStore, type Store } from '../store/index.js';
import { shareBreakerState, type SharedBreakerOptions, type SharedBreakerState } from './index.js';
import { expectOptionsError } from '../../test/support/options.js';

const T0 = Date.UTC(2026, 0, 1);
const KEY = 'breaker:gift';

interface Line {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

/** A pino-compatible logger that keeps its lines. */
function recordingLogger(lines: Line[]): Logger {
  const at =
    (level: string) =>
    (fields: object, message: string): void =>
      void lines.push({ level, message, fields: { ...(fields as Record<string, unknown>) } });
  return { info: at('info'), warn: at('warn'), error: at('error') };
}

/** A breaker that opens after 3 failures in a row. */
function breakerOn(clock: FakeClock, openDurationMs = 30_000): CircuitBreakerPolicy {
  return new CircuitBreakerPolicy({ name: 'gift', window: new ConsecutiveWindow(3), openDurationMs, clock });
}

/** `n` counted failures (each an `upstream_unavailable`). */
async function fail(breaker: CircuitBreakerPolicy, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await breaker.execute(() => Promise.reject(new BreakwaterError('upstream_unavailable'))).catch(() => {});
  }
}

/** The `circuit_open` rejection of a call through `breaker`, and whether the call's function ran. */
async function rejected(breaker: CircuitBreakerPolicy): Promise<{ error: BreakwaterError; called: boolean }> {
  let called = false;
  const error = await breaker
    .execute(() => {
      called = true;
      return 'ok';
    })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(error).toBeInstanceOf(BreakwaterError);
  expect((error as BreakwaterError).code).toBe('circuit_open');
  return { error: error as BreakwaterError, called };
}

/** A counter store that fails every call, as an unreachable database does. */
function downStore(): CounterStore {
  const down = (): Promise<never> => Promise.reject(new Error('store down'));
  return { update: down, get: down, delete: down, prune: down };
}

describe('shareBreakerState over one SQLite store', () => {
  let clock: FakeClock;
  let store: Store;
  let lines: Line[];
  const sharings: SharedBreakerState[] = [];

  function share(
    breaker: CircuitBreakerPolicy,
    options: Partial<SharedBreakerOptions> = {},
  ): SharedBreakerState {
    const sharing = shareBreakerState(breaker, {
      store: store.counters,
      refreshMs: 1_000,
      clock,
      logger: recordingLogger(lines),
      ...options,
    });
    sharings.push(sharing);
    return sharing;
  }

  beforeEach(async () => {
    clock = new FakeClock(T0);
    lines = [];
    store = await openSqliteStore({ path: ':memory:', clock });
  });

  afterEach(async () => {
    for (const sharing of sharings.splice(0)) sharing.dispose();
    await store.close();
  });

  it('(a) A opens after 3 failures; after B syncs, B rejects without calling with the rest of A’s open time', async () => {
    const a = breakerOn(clock);
    const b = breakerOn(clock);
    const sharedA = share(a);
    const sharedB = share(b);
    clock.tick(400); // no refresh due yet (the first is at T0 + 1 000)
    await fail(a, 3);
    await sharedA.flush();
    expect(await store.counters.get(KEY)).toEqual({
      snapshot: {
        version: 1,
        name: 'gift',
        state: 'open',
        openedAt: T0 + 400,
        halfOpenAt: T0 + 30_400,
        openDurationMs: 30_000,
        consecutiveOpens: 1,
        takenAt: T0 + 400,
      },
      writer: expect.any(String),
      reason: 'consecutive_failures',
      version: 1,
    });
    expect(b.state().state).toBe('closed');

    clock.tick(100);
    await sharedB.sync();
    const { error, called } = await rejected(b);
    expect(called).toBe(false);
    expect(error.retryAfterMs).toBe(29_900); // A's halfOpenAt (T0 + 30 400) − now (T0 + 500)
    expect(error.details).toEqual({ circuit_state: 'open' });
    expect(b.state()).toMatchObject({
      state: 'open',
      openedAt: T0 + 400,
      halfOpenAt: T0 + 30_400,
      consecutiveOpens: 1,
    });
    // Taken from the store, not written back: the row is still A's.
    expect(await store.counters.get(KEY)).toMatchObject({ reason: 'consecutive_failures' });
    expect(lines).toEqual([]);
  });

  it('(a) without an explicit sync, the next refresh (refreshMs later) brings A’s open to B', async () => {
    const a = breakerOn(clock);
    const b = breakerOn(clock);
    const sharedA = share(a);
    share(b);
    clock.tick(400);
    await fail(a, 3);
    await sharedA.flush();
    await clock.tickAsync(599); // T0 + 999: no refresh yet
    expect(b.state().state).toBe('closed');
    await clock.tickAsync(1); // T0 + 1 000: both refresh
    const { error, called } = await rejected(b);
    expect([called, error.retryAfterMs]).toEqual([false, 29_400]);
  });

  it('(b) an older snapshot does not replace B’s own newer open, even one that would end later', async () => {
    // A's open: 60 s from T0. B's: 30 s from T0 + 500, written nowhere (its writes are lost).
    const a = breakerOn(clock, 60_000);
    const b = breakerOn(clock);
    const sharedA = share(a);
    const lossy: CounterStore = {
      update: () => Promise.reject(new Error('write lost')),
      get: (key) => store.counters.get(key),
      delete: (key) => store.counters.delete(key),
      prune: (limit) => store.counters.prune(limit),
    };
    const sharedB = share(b, { store: lossy });
    await fail(a, 3);
    await sharedA.flush();
    clock.tick(500);
    await fail(b, 3);
    await sharedB.flush();
    expect(lines.map((l) => l.message)).toEqual(['shared breaker state: write failed']);

    await sharedB.sync();
    expect(b.state()).toMatchObject({ state: 'open', openedAt: T0 + 500, halfOpenAt: T0 + 30_500 });
    expect((await rejected(b)).error.retryAfterMs).toBe(30_000);
  });

  it('(b) a newer open elsewhere is taken only when it ends later than this breaker’s own', async () => {
    const a = breakerOn(clock, 60_000);
    const b = breakerOn(clock); // 30 s
    const c = breakerOn(clock, 10_000);
    const sharedA = share(a);
    const sharedB = share(b);
    const sharedC = share(c);
    await fail(b, 3); // B: open until T0 + 30 000
    await sharedB.flush();
    clock.tick(100);
    await fail(c, 3); // C (newer, ends at T0 + 10 100): B keeps its own
    await sharedC.flush();
    await sharedB.sync();
    expect(b.state().halfOpenAt).toBe(T0 + 30_000);
    clock.tick(100);
    await fail(a, 3); // A (newer, ends at T0 + 60 200): B takes it
    await sharedA.flush();
    await sharedB.sync();
    expect(b.state()).toMatchObject({ state: 'open', openedAt: T0 + 200, halfOpenAt: T0 + 60_200 });
  });

  it('(c) A isolated → B isolated; A reset → B closed', async () => {
    const a = breakerOn(clock);
    const b = breakerOn(clock);
    const sharedA = share(a);
    const sharedB = share(b);
    a.isolate();
    await sharedA.flush();
    await sharedB.sync();
    expect(b.state().state).toBe('isolated');
    const { error, called } = await rejected(b);
    expect([called, error.retryAfterMs, error.details]).toEqual([
      false,
      undefined,
      { circuit_state: 'isolated' },
    ]);

    clock.tick(10);
    a.reset();
    await sharedA.flush();
    await sharedB.sync();
    expect(b.state().state).toBe('closed');
    expect(await b.execute(() => 'called')).toBe('called');
  });

  it('(c) a reset on an instance whose clock is 10 minutes behind still lifts an isolation everywhere', async () => {
    const ahead = new FakeClock(T0 + 600_000);
    const g = breakerOn(ahead);
    const h = breakerOn(clock);
    const sharedG = share(g, { clock: ahead });
    const sharedH = share(h);
    g.isolate(); // takenAt T0 + 600 000
    await sharedG.flush();
    await sharedH.sync();
    expect(h.state().state).toBe('isolated');

    h.reset(); // takenAt T0: older by the clocks, newer by the version
    await sharedH.flush();
    expect(await store.counters.get(KEY)).toMatchObject({
      snapshot: { state: 'closed' },
      reason: 'reset',
      version: 2,
    });
    await sharedG.sync();
    await sharedH.sync();
    expect([g.state().state, h.state().state]).toEqual(['closed', 'closed']);
  });

  it('(c) an isolation is lifted only by a reset: another instance’s trial success or open does not', async () => {
    const a = breakerOn(clock, 10_000);
    const b = breakerOn(clock);
    const sharedA = share(a);
    const sharedB = share(b);
    await fail(a, 3);
    await sharedA.flush();
    await clock.tickAsync(10_000); // A's open period ends: its trial runs (B took A's open meanwhile)
    let succeed!: (value: string) => void;
    const trial = a.execute(() => new Promise<string>((resolve) => (succeed = resolve)));
    b.isolate(); // an operator, on B, while A's trial is running
    await sharedB.flush();
    clock.tick(5);
    succeed('fine');
    await trial;
    expect(a.state().state).toBe('closed');
    await sharedA.flush();
    expect(await store.counters.get(KEY)).toMatchObject({
      snapshot: { state: 'isolated' },
      reason: 'isolated',
    });
    await sharedA.sync(); // the isolation is older than A's close, and still taken
    expect(a.state().state).toBe('isolated');

    // Isolated B is not closed by a closed snapshot that is not a reset.
    const c = breakerOn(clock, 10_000);
    const sharedC = share(c, { key: 'breaker:other' });
    await fail(c, 3);
    await clock.tickAsync(10_000);
    await c.execute(() => 'trial');
    await sharedC.flush();
    const record = await store.counters.get('breaker:other');
    await store.counters.update(KEY, () => ({ state: record, expiresAt: null, result: undefined }));
    await sharedB.sync();
    expect(b.state().state).toBe('isolated');
  });

  it('(d) a closed snapshot (A’s trial succeeded) closes B while B is open', async () => {
    const b = breakerOn(clock); // 30 s
    await fail(b, 3); // before sharing: B's own open, until T0 + 30 000, not in the store
    const a = breakerOn(clock, 10_000);
    const sharedA = share(a);
    const sharedB = share(b);
    await fail(a, 3); // ends at T0 + 10 000: earlier than B's own, so B keeps its own
    await sharedA.flush();
    await sharedB.sync();
    expect(b.state().halfOpenAt).toBe(T0 + 30_000);
    await clock.tickAsync(10_000);
    expect(await a.execute(() => 'trial')).toBe('trial');
    expect(a.state().state).toBe('closed');
    await sharedA.flush();
    expect(await store.counters.get(KEY)).toMatchObject({
      snapshot: { state: 'closed', takenAt: T0 + 10_000 },
      reason: 'trials_succeeded',
    });
    expect(b.state().state).toBe('open');
    await sharedB.sync();
    expect(b.state()).toMatchObject({ state: 'closed', consecutiveOpens: 0, halfOpenAt: null });
    expect(await b.execute(() => 'called')).toBe('called');
  });

  it('(d) a closed snapshot is ignored by a closed B: its window keeps its counts', async () => {
    const a = breakerOn(clock, 10_000);
    const sharedA = share(a);
    await fail(a, 3);
    await clock.tickAsync(10_000);
    await a.execute(() => 'trial');
    await sharedA.flush();
    expect(await store.counters.get(KEY)).toMatchObject({ snapshot: { state: 'closed' } });

    const b = breakerOn(clock);
    await fail(b, 2);
    clock.tick(1);
    const sharedB = share(b);
    await sharedB.sync();
    expect(b.state()).toMatchObject({ state: 'closed', window: { calls: 2, failures: 2, slow: 0 } });
    await fail(b, 1); // the third in a row: the counts were kept
    expect(b.state().state).toBe('open');
  });

  it('(e) half-open is never written; a failed trial’s reopen is', async () => {
    const a = breakerOn(clock);
    const sharedA = share(a);
    await fail(a, 3);
    await sharedA.flush();
    await clock.tickAsync(29_999);
    expect(await store.counters.get(KEY)).toMatchObject({ snapshot: { state: 'open' } });
    await clock.tickAsync(1);
    expect(a.state().state).toBe('half-open');
    let failTrial!: (error: unknown) => void;
    const trial = a.execute(() => new Promise((_resolve, reject) => (failTrial = reject)));
    await sharedA.flush();
    // Half-open (a trial running) wrote nothing: the row is still the open one, past its half-open time.
    expect(await store.counters.get(KEY)).toMatchObject({ snapshot: { state: 'open' }, version: 1 });

    failTrial(new BreakwaterError('upstream_unavailable'));
    await trial.catch(() => {});
    await sharedA.flush();
    expect(await store.counters.get(KEY)).toMatchObject({
      snapshot: {
        state: 'open',
        openedAt: T0 + 30_000,
        halfOpenAt: T0 + 60_000,
        consecutiveOpens: 2,
        takenAt: T0 + 30_000,
      },
      reason: 'trial_failed',
    });
  });

  it('(f) a failing store is logged and the breaker works per process', async () => {
    const a = breakerOn(clock);
    const sharedA = share(a, { store: downStore() });
    await sharedA.sync();
    await fail(a, 3);
    await sharedA.flush();
    const first = lines.map((l) => [l.level, l.message]);
    // The sync at creation and the explicit one read; the open writes.
    expect(first).toEqual([
      ['warn', 'shared breaker state: read failed'],
      ['warn', 'shared breaker state: read failed'],
      ['warn', 'shared breaker state: write failed'],
    ]);
    expect(lines[2]!.fields).toEqual({
      breaker: 'gift',
      key: KEY,
      err: { type: 'Error', message: 'store down', stack: expect.any(String) },
    });
    expect((await rejected(a)).error.retryAfterMs).toBe(30_000);
    await clock.tickAsync(30_000); // the refresh goes on failing, every second
    expect(lines.filter((l) => l.message.includes('read failed'))).toHaveLength(32);
    expect(await a.execute(() => 'trial')).toBe('trial');
    expect(a.state().state).toBe('closed');
  });

  it('(f) a read that never answers does not end the refreshes: said once, one read at a time', async () => {
    let reads = 0;
    let answer: ((value: unknown) => void) | undefined;
    const hanging: CounterStore = {
      ...downStore(),
      get: () => {
        reads++;
        return new Promise((resolve) => (answer = resolve));
      },
    };
    share(breakerOn(clock), { store: hanging }); // the read at creation hangs
    await clock.tickAsync(5_000);
    expect(reads).toBe(1); // five refreshes found it pending
    expect(lines.map((l) => [l.level, l.message])).toEqual([['warn', 'shared breaker state: read failed']]);
    expect(lines[0]!.fields).toMatchObject({
      err: { message: 'the previous read has not answered after 1000 ms' },
    });
    answer!(undefined);
    await clock.tickAsync(1_000);
    expect(reads).toBe(2); // the refreshes go on
    answer!(undefined);
    await clock.tickAsync(1_000);
    expect(reads).toBe(3);
    expect(lines).toHaveLength(1);
  });

  it('(g) dispose stops the refresh timer and the listener', async () => {
    const a = breakerOn(clock);
    const b = breakerOn(clock);
    const before = clock.pendingTimers();
    const sharedA = share(a);
    const sharedB = share(b);
    expect(clock.pendingTimers()).toBe(before + 2);
    sharedB.dispose();
    sharedB.dispose(); // idempotent
    expect(clock.pendingTimers()).toBe(before + 1);

    await fail(b, 3); // not written
    await sharedB.flush();
    expect(await store.counters.get(KEY)).toBeUndefined();
    b.reset();

    await fail(a, 3);
    await sharedA.flush();
    await sharedB.sync(); // not taken, explicitly or on the refresh
    await clock.tickAsync(5_000);
    expect(b.state().state).toBe('closed');
  });

  it('(h) a bad argument or option is a RangeError naming it', () => {
    const a = breakerOn(clock);
    const counters = store.counters;
    const cases: [() => unknown, RegExp][] = [
      [
        () => shareBreakerState({} as CircuitBreakerPolicy, { store: counters }),
        /^shareBreakerState: breaker /,
      ],
      [() => shareBreakerState(a, 'x' as unknown as SharedBreakerOptions), /^shareBreakerState: options /],
      [() => shareBreakerState(a, {} as SharedBreakerOptions), /^shareBreakerState: store /],
      [() => shareBreakerState(a, { store: {} as CounterStore }), /^shareBreakerState: store /],
      [() => shareBreakerState(a, { store: counters, refreshMs: 0 }), /^shareBreakerState: refreshMs /],
      [() => shareBreakerState(a, { store: counters, refreshMs: 1.5 }), /^shareBreakerState: refreshMs /],
      [() => shareBreakerState(a, { store: counters, key: '' }), /^shareBreakerState: key /],
      [() => shareBreakerState(a, { store: counters, clock: {} as FakeClock }), /^shareBreakerState: clock /],
      [() => shareBreakerState(a, { store: counters, logger: {} as Logger }), /^shareBreakerState: logger /],
    ];
    for (const [make, message] of cases) {
      expect(make).toThrow(RangeError);
      expect(make).toThrow(message);
    }
    expect(clock.pendingTimers()).toBe(0); // nothing was started
  });

  it('(h) every bad argument and option is reported at once, in one OptionsError', () => {
    expectOptionsError(
      () =>
        shareBreakerState({} as CircuitBreakerPolicy, {
          store: {} as CounterStore,
          refreshMs: 1.5,
          key: '',
          logger: { warn() {} } as unknown as Logger,
        }),
      {
        owner: 'shareBreakerState',
        options: ['breaker', 'store', 'refreshMs', 'key', 'logger'],
        message:
          'shareBreakerState: breaker must be a CircuitBreakerPolicy, got an object; ' +
          'store must be a CounterStore (store.counters), got an object; ' +
          'refreshMs must be an integer >= 1, got 1.5; ' +
          "key must be a non-empty string, got ''; " +
          'logger must be a pino-compatible logger with info, warn and error methods, got an object',
      },
    );
    expect(clock.pendingTimers()).toBe(0);
  });
});
