import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type * as Fs from 'node:fs';
import { EventSource, FakeClock } from '../../core/index.js';
import type { StoreNotification } from '../jobs.js';
import { GroupCommit, groupCommitStats, MAX_BATCH } from './batch.js';
import type { SqliteContext } from './context.js';
import { openSqliteStore } from './index.js';
import { WalSync } from './wal-sync.js';

type Done = (error: NodeJS.ErrnoException | null) => void;

/** The real store's fdatasync: delayed by `delayMs` or completed by hand (`manual`); `snapshot` at its start. */
const disk = vi.hoisted(() => ({
  delayMs: 0,
  manual: undefined as Done[] | undefined,
  snapshot: undefined as (() => () => void) | undefined,
}));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof Fs>();
  const fdatasync = (fd: number, done: Done) => {
    const onDurable = disk.snapshot?.();
    const finish: Done = (error) => {
      if (error === null) onDurable?.();
      done(error);
    };
    if (disk.manual) disk.manual.push(finish);
    else fs.fdatasync(fd, (error) => setTimeout(() => finish(error), disk.delayMs));
  };
  return { ...fs, default: { ...fs, fdatasync }, fdatasync };
});

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const eio = () => Object.assign(new Error('EIO'), { code: 'EIO' });
const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  Object.assign(disk, { delayMs: 0, manual: undefined, snapshot: undefined });
});

/** The private state of a GroupCommit, read (never written) to check that nothing queued is stranded. */
type Internals = { queue: { releasable: unknown }[]; scheduled: boolean; held: boolean };
type Kind = 'plain' | 'claim' | 'throws';

/**
 * A GroupCommit over an in-memory table with a WalSync whose syncs the test completes by hand. A sync records
 * the rows committed when it STARTED; once it succeeds they are `durable`. Every resolution and notification
 * is checked against that at the moment it happens (a breach goes to `violations`).
 */
function harness() {
  const dir = mkdtempSync(join(tmpdir(), 'breakwater-deferral-'));
  writeFileSync(join(dir, 'db-wal'), '');
  const db = new Database(':memory:').exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  const notifications = new EventSource<StoreNotification>();
  const ctx: SqliteContext = { db, clock: new FakeClock(0), notifications, outbox: [], created: [] };
  const insert = db.prepare<[number]>('INSERT INTO t (n) VALUES (?)');
  const select = db.prepare<[], number>('SELECT n FROM t ORDER BY n').pluck();
  const rows = () => select.all();
  const [durable, heard, violations, syncs] = [
    new Set<number>(),
    [] as number[],
    [] as string[],
    [] as Done[],
  ];
  const sync = new WalSync(join(dir, 'db-wal'), (_fd, done) => {
    const covered = rows();
    syncs.push((error) => (error === null && covered.forEach((n) => durable.add(n)), done(error)));
  });
  const group = new GroupCommit(ctx, sync);
  notifications.on((note) => {
    if (note.kind !== 'job_available') return;
    heard.push(Number(note.type));
    if (!durable.has(Number(note.type))) violations.push(`heard ${note.type} before a sync covered it`);
  });
  type Op = { n: number; kind: Kind; ran: boolean; status?: 'resolved' | 'rejected'; reason?: unknown };
  const ops: Op[] = [];
  /** Queues op n (the next number): a write, a claim released at its commit, or a step refused before writing. */
  const submit = (kind: Kind = 'plain') => {
    const op: Op = { n: ops.length + 1, kind, ran: false };
    ops.push(op);
    const step = (n: number) => {
      op.ran = true;
      ctx.outbox.push({ kind: 'job_available', type: String(n), runAt: 0 });
      if (kind === 'throws') throw new TypeError(`refused ${n}`);
      insert.run(n);
      return n;
    };
    const promise =
      kind === 'claim' ? group.submitAtCommit(() => true, step, op.n) : group.submit(step, op.n);
    promise.then(
      (value) => {
        op.status = 'resolved';
        if (value !== op.n) violations.push(`${op.n} resolved with ${value}`);
        if (kind === 'plain' && !durable.has(op.n)) violations.push(`${op.n} answered before its sync`);
        if (kind === 'claim' && !rows().includes(op.n)) violations.push(`claim ${op.n} resolved uncommitted`);
      },
      (reason: unknown) => Object.assign(op, { status: 'rejected', reason }),
    );
    return promise;
  };
  /** Completes the running sync; returns how many operations were committed synchronously at its end. */
  const endSync = (error: NodeJS.ErrnoException | null = null) => {
    const before = groupCommitStats.operations;
    syncs.shift()!(error);
    return groupCommitStats.operations - before;
  };
  const internals = group as unknown as Internals;
  cleanups.push(() => {
    group.release();
    group.flush();
    while (syncs.length > 0) syncs.shift()!(null);
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { group, sync, syncs, rows, durable, heard, violations, ops, submit, endSync, internals };
}

/** A seeded PRNG (an LCG), so a failing interleaving replays. */
function prng(seed: number): () => number {
  let a = seed * 7919;
  return () => (a = (Math.imul(a, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

describe('GroupCommit kept back while a sync runs', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('random interleavings keep invariants 1-5 (seed %i)', async (seed) => {
    const h = harness();
    const { group, syncs, internals: q, ops } = h;
    const random = prng(seed);
    // Even seeds fail one sync somewhere in the run.
    const failAt = seed % 2 === 0 ? 80 + Math.floor(random() * 150) : Infinity;
    let frozen = -1;
    let landed = 0; // rows when the hold began or at the last flush()
    for (let step = 0; step < 300; step++) {
      const r = random();
      let kind = 'noop';
      // The failure comes while ops are kept back for the running sync.
      if (step >= failAt && frozen < 0 && syncs.length > 0 && q.queue.length > 0 && !q.scheduled) {
        kind = 'end';
        h.endSync(eio());
        frozen = h.rows().length;
      } else if (r < 0.3) {
        for (let k = 1 + Math.floor(random() * 6); k > 0; k--) {
          const x = random();
          void h.submit(x < 0.7 ? 'plain' : x < 0.85 ? 'claim' : 'throws');
        }
      } else if (r < 0.33) {
        for (let k = MAX_BATCH - 64 + Math.floor(random() * 192); k > 0; k--) void h.submit();
      } else if (r < 0.55) {
        kind = 'turn';
        await turn();
      } else if (r < 0.7 && syncs.length > 0) {
        kind = 'end';
        // 5: a sync's end commits one batch at most, in one go.
        expect(h.endSync()).toBeLessThanOrEqual(MAX_BATCH);
      } else if (r < 0.78) {
        if (q.held) group.release();
        else group.hold();
        landed = h.rows().length;
      } else if (r < 0.84) {
        kind = 'flush';
        group.flush();
        landed = h.rows().length;
      } else {
        await Promise.resolve();
      }
      const context = `seed ${seed} step ${step} (${kind})`;
      expect(h.violations, context).toEqual([]);
      const queued = q.queue.length;
      // 2: what is queued has something coming for it: a turn, the running sync's end, or the release.
      expect(queued === 0 || q.held || q.scheduled || syncs.length > 0, context).toBe(true);
      // At a sync's end what was kept commits: all of it, or one batch and the rest on the next turn.
      if (kind === 'end' && !q.held) expect(queued === 0 || q.scheduled, context).toBe(true);
      if (kind === 'turn' && !q.held && !q.scheduled && queued > 0) {
        // Kept back only for a running sync, only a short queue, never a claim.
        expect(syncs.length, context).toBe(1);
        expect(queued, context).toBeLessThan(MAX_BATCH);
        expect(q.queue.filter((op) => op.releasable !== undefined).length, context).toBe(0);
      }
      // The gate: while held, only flush() commits.
      if (q.held) expect(h.rows().length, context).toBe(landed);
      if (kind === 'flush') {
        // 3: after flush() (what a read or an unbatched write does first) every call before it has run.
        expect(queued, context).toBe(0);
        const notRun = ops.filter((op) => !op.ran).length;
        if (frozen < 0) expect(notRun, context).toBe(0);
      }
      // 4: nothing commits after a failed sync.
      if (frozen >= 0) expect(h.rows().length, context).toBe(frozen);
    }
    group.release();
    for (let i = 0; i < 20 && (syncs.length > 0 || ops.some((op) => op.status === undefined)); i++) {
      if (syncs.length > 0) h.endSync();
      await turn();
    }
    expect(h.violations).toEqual([]);
    // 2: every operation settled, exactly as its durability says.
    const failure = h.sync.failure;
    expect(failure !== undefined).toBe(seed % 2 === 0); // the failure did come
    const committed = new Set(h.rows());
    for (const op of ops) {
      const expected =
        op.kind === 'throws' ? false : op.kind === 'claim' ? committed.has(op.n) : h.durable.has(op.n);
      expect({ n: op.n, resolved: op.status === 'resolved' }).toEqual({ n: op.n, resolved: expected });
      const reason = op.reason === failure ? 'failure' : op.reason;
      if (op.status === 'rejected' && reason !== 'failure')
        expect(reason).toEqual(new TypeError(`refused ${op.n}`));
      if (failure === undefined && op.kind !== 'throws') expect(h.durable.has(op.n)).toBe(true);
    }
    // Notifications: exactly those of durable writes, in call order, none of a refused step.
    expect(h.heard).toEqual(
      ops.filter((op) => op.kind !== 'throws' && h.durable.has(op.n)).map((op) => op.n),
    );
  });

  // Invariant 5 where it is easiest to break: (a) a burst read in one poll phase, the sync's completion
  // delivered in the same phase, before the next setImmediate; (b) above MAX_BATCH calls per turn while a slow
  // sync runs: each turn commits one full batch and the rest must not pile up for the sync's end.
  it('invariant 5: the end of a sync commits at most one batch in one go', async () => {
    const burst = harness();
    void burst.submit();
    await turn();
    for (let n = 0; n < 4 * MAX_BATCH; n++) void burst.submit();
    expect(burst.endSync(), '(a) a burst').toBe(MAX_BATCH);
    await turn();
    expect(burst.rows()).toHaveLength(1 + 2 * MAX_BATCH); // the rest, a batch per turn
    const load = harness();
    void load.submit();
    await turn();
    for (let round = 0; round < 5; round++) {
      for (let n = 0; n < MAX_BATCH + 144; n++) void load.submit();
      await turn();
    }
    expect(load.rows()).toHaveLength(1 + 5 * MAX_BATCH); // one full batch per turn, as promised
    expect(load.endSync(), '(b) a sustained load').toBe(MAX_BATCH);
  });

  it('flush() while ops are kept back commits them now; only a sync started after acknowledges them', async () => {
    const h = harness();
    const settled: number[] = [];
    const track = (p: Promise<number>) => void p.then((n) => settled.push(n));
    track(h.submit());
    await turn();
    track(h.submit());
    track(h.submit());
    await turn();
    expect(h.rows()).toEqual([1]);
    h.group.flush();
    expect(h.rows()).toEqual([1, 2, 3]);
    expect(h.endSync()).toBe(0); // nothing left kept back for this sync's end
    await turn();
    expect(settled).toEqual([1]); // the running sync started before 2 and 3 committed
    expect(h.heard).toEqual([1]);
    expect(h.syncs).toHaveLength(1);
    h.endSync();
    await turn();
    expect(settled).toEqual([1, 2, 3]);
    expect(h.heard).toEqual([1, 2, 3]);
  });
});

describe('a real store over a slow disk', () => {
  const open = (path: string) =>
    openSqliteStore({ path, clock: new FakeClock(0), watchMs: 0, checkpointWorker: false });
  const newJob = (type: string) => ({ type, payload: {}, runAt: 0, priority: 0, maxAttempts: 3 });
  /** A store on a temp file, and a second connection on it: it sees what is committed, not what is queued. */
  async function opened() {
    const dir = mkdtempSync(join(tmpdir(), 'breakwater-deferral-store-'));
    const file = join(dir, 'jobs.db');
    const store = await open(file);
    const reader = new Database(file, { readonly: true });
    cleanups.push(() => (reader.close(), rmSync(dir, { recursive: true, force: true })));
    const types = reader.prepare<[], string>('SELECT type FROM jobs ORDER BY type').pluck();
    return { file, store, reader, types: () => types.all() };
  }

  it('concurrent enqueue / claim / complete: every answer and event is on disk when heard', async () => {
    disk.delayMs = 2;
    const { file, store, reader } = await opened();
    const statuses = reader.prepare<[], [string, string]>('SELECT id, status FROM jobs').raw();
    const events = reader.prepare<[], string>("SELECT job_id || ':' || seq FROM job_events").pluck();
    let durable = new Map<string, string>();
    const durableEvents = new Set<string>();
    disk.snapshot = () => {
      const [jobs, seen] = [statuses.all(), events.all()];
      return () => void ((durable = new Map(jobs)), seen.forEach((e) => durableEvents.add(e)));
    };
    const violations: string[] = [];
    store.subscribe((n) => {
      if (n.kind === 'job_event' && !durableEvents.has(`${n.jobId}:${n.seq}`)) violations.push(`event`);
    });
    const TOTAL = 120;
    let completed = 0;
    const produce = async () => {
      const unawaited: Promise<unknown>[] = [];
      for (let round = 0; round < 8; round++) {
        const burst = Array.from({ length: TOTAL / 8 }, () =>
          store.enqueue(newJob('t')).then(({ job }) => {
            if (!durable.has(job.id)) violations.push(`enqueue of ${job.id} answered before on disk`);
          }),
        );
        if (round % 2 === 0) unawaited.push(...burst);
        else await Promise.all(burst);
        await turn();
      }
      await Promise.all(unawaited);
    };
    const work = async (owner: string) => {
      while (completed < TOTAL) {
        const claims = await store.claim({ owner, types: ['t'], limit: 4, leaseMs: 60_000 });
        if (claims.length === 0) await turn(); // nothing due yet: let the enqueues and syncs go on
        for (const { job } of claims) if (!durable.has(job.id)) violations.push(`claimed ${job.id} too soon`);
        const done = claims.map(({ job, token }) => store.complete({ id: job.id, token }, { owner }));
        for (const event of await Promise.all(done)) {
          if (durable.get(event!.jobId) !== 'completed') violations.push(`${event!.jobId} done too soon`);
          completed++;
        }
      }
    };
    await Promise.all([produce(), work('w1'), work('w2'), work('w3')]);
    expect(violations).toEqual([]);
    expect(completed).toBe(TOTAL);
    expect((await store.stats()).counts).toMatchObject({ pending: 0, in_progress: 0, completed: TOTAL });
    await store.close();
    const again = await open(file);
    expect((await again.stats()).counts.completed).toBe(TOTAL);
    await again.close();
  });

  it('close() while a sync runs and ops are kept back: a read sees them, each answers after its own sync', async () => {
    disk.manual = [];
    const { file, store, types } = await opened();
    const order: string[] = [];
    const enqueue = (type: string) => void store.enqueue(newJob(type)).then(() => order.push(type));
    enqueue('a');
    await turn();
    expect(disk.manual).toHaveLength(1);
    enqueue('b');
    enqueue('c');
    await turn();
    expect(types()).toEqual(['a']); // kept back for the running sync
    const stats = store.stats().then((s) => (order.push('stats'), s.counts.pending));
    expect(types()).toEqual(['a', 'b', 'c']); // 3: the read committed them first
    const closed = store.close().then(() => void order.push('closed'));
    await expect(store.enqueue(newJob('d'))).rejects.toThrow('the store is closed');
    disk.manual.shift()!(null);
    await turn();
    expect(order).toEqual(['a']); // that sync started before b and c committed
    disk.manual.shift()!(null);
    await closed;
    expect(order).toEqual(['a', 'b', 'c', 'stats', 'closed']);
    await expect(stats).resolves.toBe(3);
    disk.manual = undefined;
    const again = await open(file);
    expect((await again.list()).map((job) => job.type).sort()).toEqual(['a', 'b', 'c']);
    await again.close();
  });

  it('a failed sync with ops kept back: they reject uncommitted, later calls too, close() still ends', async () => {
    disk.manual = [];
    const { store, types } = await opened();
    const calls = [store.enqueue(newJob('a'))];
    await turn();
    calls.push(store.enqueue(newJob('b')), store.enqueue(newJob('c')));
    await turn();
    disk.manual.shift()!(eio());
    const reasons = (await Promise.allSettled(calls)).map((r) => r.status === 'rejected' && r.reason);
    expect((reasons[0] as Error).message).toMatch(/syncing the write-ahead log failed/);
    expect(reasons).toEqual([reasons[0], reasons[0], reasons[0]]);
    await expect(store.claim({ owner: 'w', types: [], limit: 5, leaseMs: 1 })).rejects.toBe(reasons[0]);
    await expect(store.get('x')).rejects.toBe(reasons[0]);
    expect(types()).toEqual(['a']); // b and c were never committed
    expect(disk.manual).toHaveLength(0);
    await store.close();
  });
});
