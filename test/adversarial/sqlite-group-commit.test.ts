import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/entries/testing.js';
import { createJobs, type DefineJobOptions, type Jobs } from '../../src/entries/jobs.js';
import { openSqliteStore } from '../../src/entries/sqlite.js';
import { type BreakwaterError } from '../../src/entries/index.js';
import { MAX_BATCH, groupCommitStats } from '../../src/store/sqlite/batch.js';
import type {
  AuditSealer,
  InboxDelivery,
  JobError,
  NewJob,
  Store,
  StoreNotification,
} from '../../src/store/index.js';

/**
 * Attacks on the SQLite group commit without a savepoint per operation (src/store/sqlite/batch.ts): what a
 * step that throws before / after its first write does to the other operations of its batch, operations of one
 * batch that depend on each other, close() and MAX_BATCH, and the worker / run changes shipped with it. The
 * first review found four ways a step could throw after writing (a webhook job the table refused, results,
 * errors and jobs read twice); the tests below hold them fixed.
 */

const T0 = Date.UTC(2026, 0, 1);
const MAX_ATTEMPTS_REFUSED = 'job store: maxAttempts must be an integer from 1 to 2147483647, got 0';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function open(path = ':memory:') {
  const clock = new FakeClock(T0);
  const store = await openSqliteStore({ path, clock, watchMs: 0 });
  cleanups.push(() => store.close());
  const heard: StoreNotification[] = [];
  store.subscribe((n) => heard.push(n));
  return { clock, store, heard };
}

const JOB = { payload: null, runAt: T0, priority: 0, maxAttempts: 3 };
const job = (type: string, extra: Partial<NewJob> = {}): NewJob => ({ type, ...JOB, ...extra });
const DELIVERY = { source: 'shop', eventType: 'paid', receivedAt: T0, occurredAt: null, body: '{}' };
const delivery = (eventId: string): InboxDelivery => ({ ...DELIVERY, eventId });
/** 'ok' or the rejection's message. */
const outcomes = (settled: PromiseSettledResult<unknown>[]) =>
  settled.map((s) => (s.status === 'fulfilled' ? 'ok' : (s.reason as Error).message));
const available = (heard: StoreNotification[]) =>
  heard.flatMap((n) => (n.kind === 'job_available' ? [n.type] : []));
/** A value whose JSON form can be taken once: the second JSON.stringify of it throws. */
function serializableOnce(): { toJSON(): unknown } {
  let calls = 0;
  return {
    toJSON() {
      if (++calls > 1) throw new Error('serialized twice');
      return { ok: true };
    },
  };
}

/** A jobs runtime whose one job `slow` waits for `release()`, then reads its signal for the first time. */
async function runtime(options: DefineJobOptions = {}) {
  const { clock, store } = await open();
  const jobs: Jobs = createJobs({ store, clock, owner: 'w1', leaseMs: 30_000, heartbeatMs: 10_000 });
  cleanups.push(() => jobs.stop({ graceMs: 0 }));
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const seen: [boolean, string | undefined][] = [];
  jobs.defineJob(
    'slow',
    async (ctx) => {
      await gate;
      // The signal is read for the first time only now, after whatever aborted the run.
      const { signal } = ctx;
      seen.push([signal.aborted, (signal.reason as BreakwaterError | undefined)?.code]);
      if (signal.aborted) throw signal.reason;
      return 'done';
    },
    options,
  );
  jobs.start();
  const id = await jobs.enqueue('slow', null);
  await clock.tickAsync(0);
  return { clock, store, jobs, id, release, seen };
}

describe('SQLite group commit: one bad operation and the rest of its batch', () => {
  it('an acceptWebhook whose job the table would refuse is refused before it is queued; the rest of its batch commits, as with enqueue', async () => {
    const { store, heard } = await open();
    // enqueue checks the job (checkNewJob) before queueing it: it rejects alone, the others commit.
    const base = await Promise.allSettled([
      store.enqueue(job('a')),
      store.enqueue(job('bad', { maxAttempts: 0 })),
      store.enqueue(job('b')),
    ]);
    expect(outcomes(base)).toEqual(['ok', MAX_ATTEMPTS_REFUSED, 'ok']);
    heard.length = 0;

    // The accept's job is checked the same way (resolveInboxJob -> checkNewJob) before the delivery row could
    // be written: were its INSERT refused after that row, the step would have written before failing and
    // batch.ts would roll the whole batch back.
    const settled = await Promise.allSettled([
      store.enqueue(job('c')),
      store.acceptWebhook(delivery('evt_1'), job('webhook:shop')),
      store.acceptWebhook(delivery('evt_2'), job('webhook:shop', { maxAttempts: 0 })),
      store.counters.update('k', () => ({ state: 1, expiresAt: null, result: 'counted' })),
    ]);
    const types = (await store.list()).map((j) => j.type).sort();
    // Holds either way: nothing was announced that is not stored.
    for (const type of available(heard)) expect(types).toContain(type);
    expect(outcomes(settled)).toEqual(['ok', 'ok', MAX_ATTEMPTS_REFUSED, 'ok']);
    expect((settled[3] as PromiseFulfilledResult<unknown>).value).toBe('counted');
    expect(types).toEqual(['a', 'b', 'c', 'webhook:shop']);
    expect(await store.getWebhook('shop', 'evt_2')).toBeUndefined();
    expect(available(heard)).toEqual(['c', 'webhook:shop']);
  });

  const poisoned: [string, (store: Store) => Promise<() => Promise<unknown>>][] = [
    [
      'complete serializes the result once, before its UPDATE (the event embeds that text)',
      async (store) => {
        const { job: j } = await store.enqueue(job('t'));
        const [claim] = await store.claim({ owner: 'w1', types: ['t'], limit: 1, leaseMs: 1000 });
        return () => store.complete({ id: j.id, token: claim!.token }, serializableOnce());
      },
    ],
    [
      'fail serializes the error once, before its UPDATE (the event embeds that text)',
      async (store) => {
        const { job: j } = await store.enqueue(job('t'));
        const [claim] = await store.claim({ owner: 'w1', types: ['t'], limit: 1, leaseMs: 1000 });
        const error = { code: 'x', message: 'm', kind: 'permanent', dependencyCode: serializableOnce() };
        return () => store.fail({ id: j.id, token: claim!.token }, error as unknown as JobError);
      },
    ],
    [
      "enqueue reads the caller's NewJob once, into its own copy, before queueing it",
      (store) => {
        let reads = 0;
        const odd = {
          ...job('t'),
          get runAt() {
            if (++reads > 1) throw new Error('serialized twice');
            return T0;
          },
        };
        return Promise.resolve(() => store.enqueue(odd));
      },
    ],
  ];
  it.each(poisoned)(
    '%s: input that would throw on a second read is read once, and nothing else of the batch is harmed',
    async (_, setup) => {
      const { store } = await open();
      const op = await setup(store);
      const settled = await Promise.allSettled([store.enqueue(job('innocent')), op()]);
      expect(outcomes(settled)).toEqual(['ok', 'ok']);
      expect((await store.list({ type: 'innocent' })).length).toBe(1);
    },
  );

  it("a bad acceptWebhook in the turn of a last attempt's complete is refused alone: the job completes", async () => {
    const { clock, store, jobs, id, release, seen } = await runtime({ maxAttempts: 1 });
    release();
    // Another caller of the same store, in the same turn: its own job is invalid.
    const bad = store
      .acceptWebhook(delivery('evt_bad'), job('webhook:shop', { maxAttempts: 0 }))
      .catch((e: Error) => e.message);
    await clock.tickAsync(0);
    expect(await bad).toBe(MAX_ATTEMPTS_REFUSED);
    await clock.tickAsync(31_000); // the lease lapses; the worker's next claim finds it expired
    expect(seen).toEqual([[false, undefined]]);
    expect(await jobs.get(id)).toMatchObject({ status: 'completed', result: 'done' });
  });

  it('claim with bad options after expired leases exist rejects alone and ends nothing; a good claim then ends them', async () => {
    const { clock, store } = await open();
    const { job: j } = await store.enqueue(job('t', { maxAttempts: 1 }));
    await store.claim({ owner: 'w1', types: ['t'], limit: 1, leaseMs: 1000 });
    clock.tick(2000);
    const settled = await Promise.allSettled([
      store.claim({ owner: 'w2', types: ['t'], limit: 1, leaseMs: NaN }),
      store.claim({ owner: 7 as unknown as string, types: ['t'], limit: 1, leaseMs: 1000 }),
      store.claim({ owner: 'w2', types: [true] as unknown as string[], limit: 1, leaseMs: 1000 }),
      store.enqueue(job('u')),
    ]);
    const claimNeeds = 'SQLite job store: claim needs an owner string and a finite leaseMs';
    expect(outcomes(settled)).toEqual([
      claimNeeds,
      claimNeeds,
      'SQLite3 can only bind numbers, strings, bigints, buffers, and null',
      'ok',
    ]);
    expect(await store.get(j.id)).toMatchObject({ status: 'in_progress', leaseOwner: 'w1' });
    await expect(store.claim({ owner: 'w2', types: ['t'], limit: 1, leaseMs: 1000 })).resolves.toEqual([]);
    expect(await store.get(j.id)).toMatchObject({ status: 'failed', error: { code: 'lease_expired' } });
    expect((await store.events(j.id)).map((e) => [e.seq, e.type])).toEqual([
      [1, 'job.started'],
      [2, 'job.failed'],
    ]);
  });

  it('audit sealers that throw or return a bad hash mid-list refuse their own append only; the chain stays gapless', async () => {
    const { store } = await open();
    const seal =
      (body: string): AuditSealer =>
      (seq, prev) => ({ body, hash: `h${seq}-${prev.slice(0, 6)}` });
    const settled = await Promise.allSettled([
      store.audit.append([seal('a')]),
      store.audit.append([seal('b'), () => JSON.parse('sealer boom') as never]),
      store.audit.append([seal('c'), () => ({ body: 'x', hash: '' })]),
      store.audit.append([seal('d'), seal('e')]),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(SyntaxError);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(RangeError);
    const records = await store.audit.read();
    expect(records.map((r) => `${r.seq}${r.body}`)).toEqual(['1a', '2d', '3e']);
    for (let i = 1; i < records.length; i++) expect(records[i]!.prevHash).toBe(records[i - 1]!.hash);
  });

  it('counter steps that throw or return unstorable outcomes reject alone; the others see each other in call order', async () => {
    const { store } = await open();
    const inc = (state: unknown) => {
      const next = ((state as number | undefined) ?? 0) + 1;
      return { state: next, expiresAt: null, result: next };
    };
    const settled = await Promise.allSettled([
      store.counters.update('k', inc),
      store.counters.update('k', () => JSON.parse('step boom') as never),
      store.counters.update('k', () => ({ state: 1n, expiresAt: null, result: 0 })),
      store.counters.update('k', () => ({ state: 5, expiresAt: NaN, result: 0 })),
      store.counters.update('k', inc),
    ]);
    const results = settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).name));
    expect(results).toEqual([1, 'SyntaxError', 'TypeError', 'RangeError', 2]);
    expect(await store.counters.get('k')).toBe(2);
  });
});

describe('SQLite group commit: operations of one batch that depend on each other', () => {
  it('a counter step that calls the store gets its call refused; the batch and its notifications are untouched', async () => {
    const { store, heard } = await open();
    let nested: Promise<unknown> | undefined;
    const settled = await Promise.allSettled([
      store.enqueue(job('innocent')),
      store.counters.update('k', () => {
        nested = store.stats();
        return { state: 1, expiresAt: null, result: 'counted' };
      }),
    ]);
    expect(outcomes(settled)).toEqual(['ok', 'ok']);
    await expect(nested).rejects.toThrow(
      'SQLite store: called from inside a group-committed step (a counter step or an audit sealer must not use the store)',
    );
    expect(available(heard)).toEqual(['innocent']);
    expect(await store.counters.get('k')).toBe(1);
  });

  it('idempotency begin twice in one batch: acquired, then in_progress / mismatch against the first', async () => {
    const { store } = await open();
    const claim = { scope: 's', key: 'k', fingerprint: 'f1', lockMs: 1000, ttlMs: 60_000 };
    const bad = store.idempotency.begin({ ...claim, key: 'k2', lockMs: NaN }).catch((e: unknown) => e);
    const [first, second, third] = await Promise.all([
      store.idempotency.begin(claim),
      store.idempotency.begin(claim),
      store.idempotency.begin({ ...claim, fingerprint: 'f2' }),
    ]);
    expect(await bad).toBeInstanceOf(RangeError);
    expect([first.outcome, second.outcome, third.outcome]).toEqual(['acquired', 'in_progress', 'mismatch']);
    expect(second.record.token).toBe(first.record.token);
    expect(await store.idempotency.get('s', 'k2')).toBeUndefined();
  });

  it('the same webhook event twice, then a claim, in one batch: one job, the duplicate answers the first record', async () => {
    const { store, heard } = await open();
    const [a, b, claims] = await Promise.all([
      store.acceptWebhook(delivery('evt_1'), job('webhook:shop', { payload: 'first' })),
      store.acceptWebhook(delivery('evt_1'), job('webhook:shop', { payload: 'second' })),
      store.claim({ owner: 'w1', types: ['webhook:shop'], limit: 5, leaseMs: 1000 }),
    ]);
    expect([a.duplicate, b.duplicate]).toEqual([false, true]);
    expect(b.record).toEqual(a.record);
    expect(claims.map((c) => [c.job.id, c.job.payload])).toEqual([[a.record.jobId, 'first']]);
    expect(available(heard)).toEqual(['webhook:shop']);
  });

  it('ordering keys: a claim in the batch of two enqueues of one key takes the first only; complete + claim hands over', async () => {
    const { store } = await open();
    const [a, , c, claims] = await Promise.all([
      store.enqueue(job('t', { orderingKey: 'order-1' })),
      store.enqueue(job('t', { orderingKey: 'order-1' })),
      store.enqueue(job('t')),
      store.claim({ owner: 'w1', types: ['t'], limit: 5, leaseMs: 1000 }),
    ]);
    expect(claims.map((x) => x.job.id)).toEqual([a.job.id, c.job.id]);
    const [done, next] = await Promise.all([
      store.complete({ id: a.job.id, token: claims[0]!.token }, 'ok'),
      store.claim({ owner: 'w1', types: ['t'], limit: 5, leaseMs: 1000 }),
    ]);
    expect(done?.type).toBe('job.completed');
    expect(next.map((x) => x.job.orderingKey)).toEqual(['order-1']);
  });

  it('a reclaim and the stale run’s complete in one batch: whichever runs first wins, the other changes nothing', async () => {
    const { clock, store } = await open();
    const { job: j1 } = await store.enqueue(job('t'));
    const [old1] = await store.claim({ owner: 'w1', types: ['t'], limit: 1, leaseMs: 1000 });
    clock.tick(2000);
    const [reclaim, stale] = await Promise.all([
      store.claim({ owner: 'w2', types: ['t'], limit: 1, leaseMs: 1000 }),
      store.complete({ id: j1.id, token: old1!.token }, 'late'),
    ]);
    expect(stale).toBeUndefined();
    expect(reclaim.map((x) => [x.job.id, x.job.attempts, x.token])).toEqual([[j1.id, 2, old1!.token + 1]]);
    expect(await store.get(j1.id)).toMatchObject({ status: 'in_progress', leaseOwner: 'w2', result: null });

    const { job: j2 } = await store.enqueue(job('u'));
    const [old2] = await store.claim({ owner: 'w1', types: ['u'], limit: 1, leaseMs: 1000 });
    clock.tick(2000);
    const [done, none] = await Promise.all([
      store.complete({ id: j2.id, token: old2!.token }, 'late'),
      store.claim({ owner: 'w2', types: ['u'], limit: 1, leaseMs: 1000 }),
    ]);
    expect(done?.type).toBe('job.completed');
    expect(none).toEqual([]);
    expect(await store.get(j2.id)).toMatchObject({ status: 'completed', result: 'late', attempts: 1 });
  });

  it('more than MAX_BATCH operations: two transactions in call order, a refused one rejects alone in each', async () => {
    const { store, heard } = await open();
    const before = groupCommitStats.transactions;
    const calls = Array.from({ length: MAX_BATCH + 10 }, (_, i) =>
      store.enqueue(job(`t${i}`, i === 3 || i === MAX_BATCH + 3 ? { maxAttempts: 0 } : {})),
    );
    const settled = await Promise.allSettled(calls);
    expect(groupCommitStats.transactions - before).toBe(2);
    const failed = settled.flatMap((s, i) => (s.status === 'rejected' ? [i] : []));
    expect(failed).toEqual([3, MAX_BATCH + 3]);
    const expected = calls.map((_, i) => `t${i}`).filter((_, i) => !failed.includes(i));
    expect(available(heard)).toEqual(expected);
    expect((await store.list({ limit: 1000 })).length).toBe(MAX_BATCH + 8);
  });

  it('close() with operations queued commits them to disk first; later calls reject', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-group-commit-'));
    cleanups.push(() => Promise.resolve(rmSync(dir, { recursive: true, force: true })));
    const path = join(dir, 'store.db');
    const { store } = await open(path);
    const queued = Promise.all([
      store.enqueue(job('a')),
      store.counters.update('k', () => ({ state: 7, expiresAt: null, result: 7 })),
      store.audit.append([() => ({ body: 'b', hash: 'h1' })]),
    ]);
    await store.close();
    const [enqueued] = await queued;
    await expect(store.enqueue(job('late'))).rejects.toThrow('SQLite job store: the store is closed');
    const { store: again } = await open(path);
    expect(await again.get(enqueued.job.id)).toMatchObject({ type: 'a', status: 'pending' });
    expect(await again.counters.get('k')).toBe(7);
    expect(await again.audit.head()).toMatchObject({ seq: 1, body: 'b' });
  });
});

describe('jobs runtime changes shipped with the group commit', () => {
  it('a signal first read after a cancel, a timeout or a lost lease is already aborted with the reason', async () => {
    const canceled = await runtime();
    await canceled.jobs.cancel(canceled.id);
    canceled.release();
    await canceled.clock.tickAsync(0);
    expect(canceled.seen).toEqual([[true, 'canceled']]);
    expect(await canceled.jobs.get(canceled.id)).toMatchObject({ status: 'canceled' });

    const timedOut = await runtime({ timeoutMs: 1000, maxAttempts: 1 });
    await timedOut.clock.tickAsync(1000);
    timedOut.release();
    await timedOut.clock.tickAsync(0);
    expect(timedOut.seen).toEqual([[true, 'timeout']]);
    expect(await timedOut.jobs.get(timedOut.id)).toMatchObject({
      status: 'failed',
      error: { code: 'timeout' },
    });

    const lost = await runtime();
    const leased = (await lost.store.get(lost.id))!;
    await lost.store.finishCanceled({ id: lost.id, token: leased.leaseToken });
    await lost.clock.tickAsync(10_000); // the heartbeat answers ok: false
    lost.release();
    await lost.clock.tickAsync(0);
    expect(lost.seen).toEqual([[true, 'canceled']]);
  });

  it('a signal first read after the shutdown grace ran out is aborted; the thrown run is released, not counted', async () => {
    const { clock, jobs, store, id, release, seen } = await runtime();
    const stopped = jobs.stop({ graceMs: 100 });
    await clock.tickAsync(100);
    release();
    await stopped;
    expect(seen).toEqual([[true, 'canceled']]);
    expect(await store.get(id)).toMatchObject({ status: 'pending', attempts: 0, leaseOwner: null });
  });

  it('stop() right after start() or right after handlers settle: the claim round queued on nextTick never claims', async () => {
    const { clock, store } = await open();
    const { job: waiting } = await store.enqueue(job('quick'));
    const jobs = createJobs({ store, clock, owner: 'w1' });
    let runs = 0;
    jobs.defineJob('quick', () => ++runs);
    jobs.start();
    await jobs.stop({ graceMs: 0 });
    await clock.tickAsync(0);
    expect(runs).toBe(0);
    expect(await store.get(waiting.id)).toMatchObject({ status: 'pending', attempts: 0 });

    const second = await runtime();
    const next = await second.jobs.enqueue('slow', null); // concurrency 1: waits behind the first
    second.release();
    const stopped = second.jobs.stop({ graceMs: 0 });
    await second.clock.tickAsync(0);
    await stopped;
    expect(second.seen).toEqual([[false, undefined]]);
    expect(await second.store.get(second.id)).toMatchObject({ status: 'completed', result: 'done' });
    expect(await second.store.get(next)).toMatchObject({ status: 'pending', attempts: 0 });
  });
});
