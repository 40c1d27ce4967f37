import { afterEach, describe, expect, it } from 'vitest';
import type { JobEvent, JobStore, StoreNotification } from '../store/index.js';
import { POLL_MS, deferred, flush, harness, type Harness } from './test-support.js';

describe('job event subscriptions', () => {
  let h: Harness;

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
  });

  it('subscribe replays stored events after fromSeq, follows new ones, and ends at the terminal event', async () => {
    h = await harness();
    const steps = [deferred(), deferred()];
    h.jobs.defineJob('steps', async (ctx) => {
      await ctx.progress(1, 3);
      await ctx.progress(2, 3);
      await steps[0]!.promise;
      await ctx.partial({ part: 'a' });
      await steps[1]!.promise;
      await ctx.progress(3, 3);
      return 'done';
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('steps', {});
    await flush(h.clock);
    const seen: [number, string][] = [];
    let ended: unknown = 'not yet';
    const sub = h.jobs.subscribe(id, 1, (e) => seen.push([e.seq, e.type]), { onEnd: (e) => (ended = e) });
    await flush(h.clock);
    expect(seen).toEqual([
      [2, 'job.progress'],
      [3, 'job.progress'],
    ]);
    steps[0]!.resolve();
    await flush(h.clock);
    expect(seen.at(-1)).toEqual([4, 'job.partial']);
    steps[1]!.resolve();
    await flush(h.clock);
    expect(seen).toEqual([
      [2, 'job.progress'],
      [3, 'job.progress'],
      [4, 'job.partial'],
      [5, 'job.progress'],
      [6, 'job.completed'],
    ]);
    expect(ended).toBeUndefined();
    sub.dispose();
  });

  it('the async iterator yields each event once in order and ends after the terminal one', async () => {
    h = await harness();
    const gate = deferred();
    h.jobs.defineJob('iter', async (ctx) => {
      await ctx.progress(1, 2);
      await gate.promise;
      await ctx.progress(2, 2);
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('iter', {});
    const collected: JobEvent[] = [];
    const reading = (async () => {
      for await (const event of h.jobs.events(id)) collected.push(event);
    })();
    await flush(h.clock);
    gate.resolve();
    await flush(h.clock);
    await reading;
    expect(collected.map((e) => [e.seq, e.type])).toEqual([
      [1, 'job.started'],
      [2, 'job.progress'],
      [3, 'job.progress'],
      [4, 'job.completed'],
    ]);
    expect(collected.map((e) => e.eventId)).toEqual([1, 2, 3, 4].map((seq) => `${id}:${seq}`));
  });

  it('a finished job whose events are all before fromSeq ends at once; a missing job ends with not_found', async () => {
    h = await harness();
    h.jobs.defineJob('quick', () => 1);
    h.jobs.start();
    const id = await h.jobs.enqueue('quick', {});
    await flush(h.clock);
    let ended: unknown = 'not yet';
    const seen: JobEvent[] = [];
    h.jobs.subscribe(id, 2, (e) => seen.push(e), { onEnd: (e) => (ended = e) });
    await flush(h.clock);
    expect(seen).toEqual([]);
    expect(ended).toBeUndefined();

    h.jobs.subscribe('job_missing', 0, () => undefined, { onEnd: (e) => (ended = e) });
    await flush(h.clock);
    expect(ended).toMatchObject({ code: 'not_found' });
    await expect(
      (async () => {
        for await (const _ of h.jobs.events('job_missing')) void _;
      })(),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it('lost notifications are covered by the safety-net poll, without duplicates', async () => {
    // A store that drops every job_event notification, as a broken LISTEN connection would.
    const base = await harness();
    await base.jobs.stop();
    const lossy: JobStore = Object.assign(Object.create(base.store) as JobStore, {
      subscribe: (listener: (n: StoreNotification) => void) =>
        base.store.subscribe((n) => (n.kind === 'job_event' ? undefined : listener(n))),
    });
    h = await harness({ clock: base.clock }, lossy);
    const gate = deferred();
    h.jobs.defineJob('quiet', async (ctx) => {
      await ctx.progress(1, 2);
      await gate.promise;
      await ctx.partial(1);
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('quiet', {});
    await flush(h.clock);
    const seqs: number[] = [];
    let ended = false;
    h.jobs.subscribe(id, 0, (e) => seqs.push(e.seq), { onEnd: () => (ended = true) });
    await flush(h.clock);
    expect(seqs).toEqual([1, 2]);
    gate.resolve();
    await flush(h.clock);
    expect(seqs).toEqual([1, 2]);
    await h.clock.tickAsync(POLL_MS);
    await flush(h.clock);
    expect(seqs).toEqual([1, 2, 3, 4]);
    expect(ended).toBe(true);
  });

  it('a watch that fails is warned about, and the poll still delivers every event once, in order', async () => {
    // A store that cannot register watches and drops job_event notifications (on PostgreSQL an unwatched
    // job's events are not announced), so only the safety-net poll can deliver them.
    const base = await harness();
    await base.jobs.stop();
    const unwatchable: JobStore = Object.assign(Object.create(base.store) as JobStore, {
      watchEvents: () => Promise.reject(new Error('watchers table unavailable')),
      subscribe: (listener: (n: StoreNotification) => void) =>
        base.store.subscribe((n) => (n.kind === 'job_event' ? undefined : listener(n))),
    });
    h = await harness({ clock: base.clock }, unwatchable);
    const gate = deferred();
    h.jobs.defineJob('unwatched', async (ctx) => {
      await ctx.progress(1, 2);
      await gate.promise;
      await ctx.partial('a');
      await ctx.progress(2, 2);
    });
    h.jobs.start();
    const id = await h.jobs.enqueue('unwatched', {});
    await flush(h.clock);
    const warnings: Error[] = [];
    const onWarning = (w: Error): number => warnings.push(w);
    process.on('warning', onWarning);
    const seqs: number[] = [];
    let ended: unknown = 'not yet';
    try {
      h.jobs.subscribe(id, 0, (e) => seqs.push(e.seq), { onEnd: (e) => (ended = e) });
      await flush(h.clock);
      // process.emitWarning delivers on the next tick; flush has let it through.
      expect(warnings.map((w) => [w.name, w.message])).toEqual([
        [
          'BreakwaterJobsWarning',
          `jobs: watching job ${id} failed; following it by polling every ${POLL_MS} ms: watchers table unavailable`,
        ],
      ]);
    } finally {
      process.off('warning', onWarning);
    }
    expect(seqs).toEqual([1, 2]); // the first read does not wait for the poll
    gate.resolve();
    await flush(h.clock);
    expect(seqs).toEqual([1, 2]);
    await h.clock.tickAsync(POLL_MS);
    await flush(h.clock);
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
    expect(ended).toBeUndefined();
    await h.clock.tickAsync(POLL_MS); // the follower has ended: no more reads, no duplicates
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
  });

  it('dispose stops delivery; fromSeq must be an integer >= 0', async () => {
    h = await harness();
    h.jobs.defineJob('x', async (ctx) => ctx.partial('a'));
    const id = await h.jobs.enqueue('x', {});
    const seqs: number[] = [];
    const sub = h.jobs.subscribe(id, 0, (e) => seqs.push(e.seq));
    await flush(h.clock);
    sub.dispose();
    h.jobs.start();
    await flush(h.clock);
    expect(seqs).toEqual([]);
    expect(() => h.jobs.subscribe(id, -1, () => undefined)).toThrow(
      'subscribe: fromSeq must be an integer >= 0, got -1',
    );
  });
});
