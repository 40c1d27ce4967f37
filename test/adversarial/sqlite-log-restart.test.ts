import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/entries/sqlite.js';
import { type Store } from '../../src/entries/jobs.js';
import { GroupCommit, groupCommitStats } from '../../src/store/sqlite/batch.js';
import { BOUND_PAGES, Checkpointer, CHECKPOINT_EVERY_COMMITS } from '../../src/store/sqlite/checkpointer.js';
import { spawnScript } from '../support/child.js';
import { walCapacity, walRestarts } from '../support/wal.js';
import { captureWarnings } from '../support/log.js';

/**
 * Attacks on the checkpoint worker's log restart (src/store/sqlite/checkpointer.ts since 3f75254: catch-up
 * checkpoints, then the store's group commit HELD for one last checkpoint; GroupCommit.hold/release in
 * batch.ts), with real files, real worker threads and, where a whole process matters, real child processes.
 *
 * Instrumentation (no change to src/): this file patches two prototypes of the very modules the store uses.
 * - `Checkpointer.prototype.noteCommit`: on a checkpointer's first commit (before its worker starts) it records
 *   the instance and, when the test asks, lowers `restartAtPages` (RESTART_AT_PAGES is 4,000: ~16 MB of log
 *   per restart) and swaps the worker's driver module for `CONTROL_DRIVER` below;
 * - `GroupCommit.prototype.hold` / `release`: every effective hold and release is recorded, with the number of
 *   batch transactions so far, and `probe.onHold` runs right after a hold (the checkpointer calls hold()
 *   before it posts the held checkpoint's request, so whatever the hook arms applies to that checkpoint).
 *
 * The control driver wraps better-sqlite3 in the worker and reads `<db>.ctl` at every checkpoint: `sleep:N`
 * (the checkpoint takes N ms more), `throw-once` (it fails, answered as a failure), `exit` (the worker thread
 * exits, code 7), `uncaught` (an error escapes the worker's own try/catch: the thread dies with code 1).
 */

/** The children import the SQLite store alone (the package root used to load the whole gateway: ~1.2 s more per child). */
const SRC_STORE = resolve('src/store/sqlite/index.ts');
const SRC_BATCH = resolve('src/store/sqlite/batch.ts');
const SRC_CHECKPOINTER = resolve('src/store/sqlite/checkpointer.ts');
const REAL_DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

interface CheckpointerInternals {
  db: Database.Database;
  worker: Worker | undefined;
  restartAtPages: number;
  driver: string;
  holdTimer: NodeJS.Timeout | undefined;
  heldCheckpoint: boolean;
  completed: number;
  restarts: number;
  active: boolean;
}
interface GroupCommitInternals {
  held: boolean;
  queue: unknown[];
}
interface HoldEvent {
  kind: 'hold' | 'release';
  gc: GroupCommit;
  /** groupCommitStats.transactions when it happened. */
  transactions: number;
  /** True for a hold() while already held (never expected). */
  nested?: boolean;
}

const probe = {
  restartAtPages: undefined as number | undefined,
  driver: undefined as string | undefined,
  checkpointers: [] as CheckpointerInternals[],
  events: [] as HoldEvent[],
  onHold: undefined as undefined | ((gc: GroupCommit) => void),
  onRelease: undefined as undefined | ((gc: GroupCommit) => void),
};

const tuned = new WeakSet<object>();
const realNoteCommit = Checkpointer.prototype.noteCommit;
Checkpointer.prototype.noteCommit = function (this: Checkpointer) {
  if (!tuned.has(this)) {
    tuned.add(this);
    const self = this as unknown as CheckpointerInternals;
    probe.checkpointers.push(self);
    if (probe.restartAtPages !== undefined) self.restartAtPages = probe.restartAtPages;
    if (probe.driver !== undefined) self.driver = probe.driver;
  }
  realNoteCommit.call(this);
};
const realHold = GroupCommit.prototype.hold;
GroupCommit.prototype.hold = function (this: GroupCommit) {
  const nested = (this as unknown as GroupCommitInternals).held;
  realHold.call(this);
  probe.events.push({ kind: 'hold', gc: this, transactions: groupCommitStats.transactions, nested });
  probe.onHold?.(this);
};
const realRelease = GroupCommit.prototype.release;
GroupCommit.prototype.release = function (this: GroupCommit) {
  const was = (this as unknown as GroupCommitInternals).held;
  if (was) probe.events.push({ kind: 'release', gc: this, transactions: groupCommitStats.transactions });
  realRelease.call(this);
  if (was) probe.onRelease?.(this);
};

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  const events = probe.events.splice(0);
  probe.onHold = undefined;
  probe.onRelease = undefined;
  probe.restartAtPages = undefined;
  probe.driver = undefined;
  probe.checkpointers.length = 0;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  // Invariants over every test: per group commit, holds and releases alternate (never a hold inside a hold),
  // and none is left held.
  const byGc = new Map<GroupCommit, string[]>();
  for (const e of events) {
    const seq = byGc.get(e.gc) ?? [];
    seq.push(e.kind + (e.nested ? '(nested)' : ''));
    byGc.set(e.gc, seq);
  }
  for (const [gc, seq] of byGc) {
    expect(
      seq.every((k, i) => k === (i % 2 === 0 ? 'hold' : 'release')),
      `hold/release sequence ${seq.join(',')}`,
    ).toBe(true);
    expect(seq.length % 2, 'a group commit left held').toBe(0);
    expect((gc as unknown as GroupCommitInternals).held).toBe(false);
  }
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bw-logrestart-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The control driver (see the file comment), written into `dir`. */
function controlDriver(dir: string): string {
  const file = join(dir, 'control-driver.cjs');
  writeFileSync(
    file,
    `const fs = require('node:fs');
const Real = require(${JSON.stringify(REAL_DRIVER)});
module.exports = function ControlledDatabase(path, options) {
  const db = new Real(path, options);
  const ctl = path + '.ctl';
  const prepare = db.prepare.bind(db);
  db.prepare = (sql) => {
    const statement = prepare(sql);
    if (!/wal_checkpoint/.test(sql)) return statement;
    return {
      get() {
        let mode = '';
        try { mode = fs.readFileSync(ctl, 'utf8'); } catch {}
        if (mode.startsWith('sleep:')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(mode.slice(6)));
        if (mode === 'throw-once') { fs.rmSync(ctl, { force: true }); throw new Error('injected checkpoint failure'); }
        if (mode === 'exit') process.exit(7);
        // The worker's catch reads error.message: this one throws there, out of the message handler.
        if (mode === 'uncaught') throw { get message() { throw new Error('injected: uncaught in the worker'); } };
        return statement.get();
      },
    };
  };
  return db;
};`,
  );
  return file;
}
const arm = (dbPath: string, mode: string) => writeFileSync(`${dbPath}.ctl`, mode);
const disarm = (dbPath: string) => rmSync(`${dbPath}.ctl`, { force: true });

const job = (type: string, payload: unknown = null, maxAttempts = 1) => ({
  type,
  payload,
  runAt: 0,
  priority: 0,
  maxAttempts,
});
const delivery = (eventId: string, body = '{}') => ({
  source: 'src',
  eventId,
  eventType: 'thing.happened',
  receivedAt: 1,
  occurredAt: null,
  body,
});
const runnerOf = (store: Store) => (store as unknown as { runner: { batch: GroupCommit } }).runner;
const gcOf = (store: Store) => runnerOf(store).batch;
const gcState = (store: Store) => gcOf(store) as unknown as GroupCommitInternals;
const dbOf = (store: Store) => (store as unknown as { ctx: { db: Database.Database } }).ctx.db;
function ckOf(store: Store): CheckpointerInternals {
  const found = probe.checkpointers.find((c) => c.db === dbOf(store));
  if (found === undefined) throw new Error('no checkpointer recorded for this store');
  return found;
}
const holdsOf = (store: Store) =>
  probe.events.filter((e) => e.kind === 'hold' && e.gc === gcOf(store)).length;

/** Polls `pred` (every 2 ms) until it holds; fails naming `what` after `ms` of real time. */
async function waitFor(pred: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * Enqueues rounds of `width` concurrent ~`bytes` jobs of `type` (one group commit per round, ~2 pages a job per
 * KB/4) until `done()`; returns how many it wrote. Fails after `maxRounds` rounds.
 */
async function pump(
  store: Store,
  done: () => boolean,
  { type = 'bulk', bytes = 8000, width = 8, maxRounds = 1500 } = {},
): Promise<number> {
  const payload = { blob: 'x'.repeat(bytes) };
  let n = 0;
  for (let round = 0; !done(); round++) {
    if (round >= maxRounds) throw new Error(`pump(${type}): condition not reached after ${round} rounds`);
    await Promise.all(Array.from({ length: width }, () => store.enqueue(job(type, payload))));
    n += width;
  }
  return n;
}

/** `rounds` rounds of `width` concurrent ~`bytes` jobs of `type`, one group commit each; returns how many it wrote. */
async function writeRounds(
  store: Store,
  rounds: number,
  { type = 'bulk', bytes = 8000, width = 8 } = {},
): Promise<number> {
  const payload = { blob: 'x'.repeat(bytes) };
  for (let round = 0; round < rounds; round++) {
    await Promise.all(Array.from({ length: width }, () => store.enqueue(job(type, payload))));
  }
  return rounds * width;
}

/** Opens a store on `path` (closed at cleanup) and writes until its checkpoint worker runs. */
async function openWithWorker(
  path: string,
): Promise<{ store: Store; ck: CheckpointerInternals; warmup: number }> {
  const store = await openSqliteStore({ path, watchMs: 0 });
  cleanups.push(() => store.close());
  let warmup = 0;
  for (let i = 0; i < CHECKPOINT_EVERY_COMMITS; i++) {
    await store.enqueue(job('warmup'));
    warmup++;
  }
  const ck = ckOf(store);
  await waitFor(() => ck.active && ck.completed >= 1, 'the checkpoint worker to be ready');
  return { store, ck, warmup };
}

/** Records the worker's exit code (the worker object is dropped by the checkpointer at close). */
function exitOf(ck: CheckpointerInternals): { code: number | undefined } {
  const seen: { code: number | undefined } = { code: undefined };
  ck.worker!.once('exit', (code) => (seen.code = code));
  return seen;
}

const warnings = (): string[] => captureWarnings((c) => cleanups.push(c));
const UNAVAILABLE = 'SQLite checkpoint worker unavailable; checkpoints run inside commits (SQLite default)';

/** Closes `store`, then checks that its log was removed and that the file is intact and holds `jobs`. */
async function closeAndCheck(store: Store, path: string, jobs: Record<string, number>): Promise<void> {
  await store.close();
  expect(existsSync(`${path}-wal`)).toBe(false);
  expect(inspect(path)).toEqual({ integrity: 'ok', jobs });
}

/** What a file holds, read by a fresh connection: integrity, and jobs by `type/status`. */
function inspect(path: string): { integrity: string; jobs: Record<string, number> } {
  const db = new Database(path);
  try {
    const integrity = db.pragma('integrity_check', { simple: true }) as string;
    const rows = db
      .prepare<[], { k: string; n: number }>(
        "SELECT type || '/' || status AS k, count(*) AS n FROM jobs GROUP BY type, status",
      )
      .all();
    return { integrity, jobs: Object.fromEntries(rows.map((r) => [r.k, r.n])) };
  } finally {
    db.close();
  }
}

/** A child process: `node --import tsx` (ts) or plain node (cjs) on `code`; killed at cleanup. */
function child(dir: string, code: string, kind: 'tsx' | 'cjs', env: Record<string, string> = {}) {
  const file = join(dir, `child-${Math.random().toString(36).slice(2)}.${kind === 'tsx' ? 'mts' : 'cjs'}`);
  writeFileSync(file, code);
  const spawned = spawnScript(file, { tsx: kind === 'tsx', stdin: true, env }, (c) => cleanups.push(c));
  const { proc, exited } = spawned;
  const err = () => spawned.err();
  /** Complete lines only (a line cut by a kill is not one). */
  const lines = () => {
    const all = spawned.out().split('\n');
    all.pop();
    return all;
  };
  return {
    ...spawned,
    proc: proc as typeof proc & { stdin: NonNullable<typeof proc.stdin> },
    lines,
    waitLine: async (pred: (line: string) => boolean, what: string, ms = 15_000) => {
      const deadline = Date.now() + ms;
      for (;;) {
        if (lines().some(pred)) return;
        if (proc.exitCode !== null || proc.signalCode !== null)
          throw new Error(`child ended before ${what}: ${err()}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr: ${err()}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    /** How the child ended, or 'still running' after `ms` (then killed). */
    exitWithin: async (ms: number) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'still running'>((r) => (timer = setTimeout(() => r('still running'), ms)));
      const outcome = await Promise.race([exited, timeout]);
      clearTimeout(timer);
      if (outcome === 'still running') proc.kill('SIGKILL');
      return outcome;
    },
  };
}

/**
 * The prelude of a tsx child: the same instrumentation as this file (tuning from env TUNE, a line `H <n>` at
 * every hold, `onHold` hook), on the modules the child's store uses.
 */
const CHILD_PRELUDE = `
import { writeFileSync } from 'node:fs';
import { openSqliteStore } from ${JSON.stringify(SRC_STORE)};
import { GroupCommit } from ${JSON.stringify(SRC_BATCH)};
import { Checkpointer } from ${JSON.stringify(SRC_CHECKPOINTER)};
const tune = JSON.parse(process.env.TUNE ?? '{}');
const seen = new WeakSet<object>();
const realNote = Checkpointer.prototype.noteCommit;
Checkpointer.prototype.noteCommit = function (this: any) {
  if (!seen.has(this)) {
    seen.add(this);
    if (tune.restartAtPages) this.restartAtPages = tune.restartAtPages;
    if (tune.driver) this.driver = tune.driver;
  }
  return realNote.call(this);
};
let holds = 0;
let onHold: undefined | (() => void);
const realHold = GroupCommit.prototype.hold;
GroupCommit.prototype.hold = function (this: any) {
  realHold.call(this);
  holds++;
  process.stdout.write('H ' + holds + '\\n');
  onHold?.();
};
void writeFileSync;
`;

describe('the log restart under sustained writes (baseline for the attacks below)', () => {
  it('every hold is released once, no batch commits while held, every counted restart is a real one, nothing lost', async () => {
    probe.restartAtPages = 300;
    const path = join(tempDir(), 'jobs.db');
    const lines = warnings();
    const { store, ck, warmup } = await openWithWorker(path);
    const restartsBefore = walRestarts(path);
    const bulk = await pump(store, () => ck.restarts >= 4);
    const mine = probe.events.filter((e) => e.gc === gcOf(store));
    expect(mine.length).toBeGreaterThanOrEqual(2 * 4 - 1);
    // A pure batched workload: nothing flushes, so no transaction may start between a hold and its release.
    for (let i = 0; i + 1 < mine.length; i += 2) {
      expect([mine[i]!.kind, mine[i + 1]!.kind]).toEqual(['hold', 'release']);
      expect(mine[i + 1]!.transactions - mine[i]!.transactions).toBe(0);
    }
    // SQLite's own count: each restart the checkpointer counted did start the log over.
    expect(walRestarts(path) - restartsBefore).toBeGreaterThanOrEqual(ck.restarts);
    expect(walCapacity(path)).toBeLessThan(BOUND_PAGES);
    expect(lines).toEqual([]);
    await closeAndCheck(store, path, { 'warmup/pending': warmup, 'bulk/pending': bulk });
  }, 15_000);
});

describe('close() while the commits are held', () => {
  for (const variant of ['held checkpoint answers at once', 'held checkpoint takes 200 ms'] as const) {
    it(`${variant}: every call queued in the hold settles committed, close resolves, the worker exits 0, the log is removed`, async () => {
      const dir = tempDir();
      const path = join(dir, 'jobs.db');
      probe.restartAtPages = 300;
      probe.driver = controlDriver(dir);
      const { store, ck, warmup } = await openWithWorker(path);
      const exit = exitOf(ck);
      let queued: Promise<unknown>[] | undefined;
      let closing: Promise<void> | undefined;
      let atClose: object | undefined;
      probe.onHold = (gc) => {
        if (gc !== gcOf(store) || queued !== undefined) return;
        if (variant === 'held checkpoint takes 200 ms') arm(path, 'sleep:200');
        queueMicrotask(() => {
          queued = [
            ...Array.from({ length: 10 }, (_, i) => store.enqueue(job('held', i))),
            store.acceptWebhook(delivery('in-hold'), job('hook')),
            store.claim({ owner: 'w', types: ['held'], limit: 3, leaseMs: 60_000 }),
          ];
          atClose = {
            held: gcState(store).held,
            holdTimer: ck.holdTimer !== undefined,
            heldCheckpoint: ck.heldCheckpoint,
            queuedAtLeast12: gcState(store).queue.length >= 12,
          };
          closing = store.close();
        });
      };
      // The round in flight when the hold came is queued too: close() commits it with the rest.
      const written = await pump(store, () => queued !== undefined);
      expect(atClose).toEqual({ held: true, holdTimer: true, heldCheckpoint: true, queuedAtLeast12: true });
      const settled = await Promise.allSettled(queued!);
      expect(settled.map((s) => s.status)).toEqual(settled.map(() => 'fulfilled'));
      const claims = (settled[11] as PromiseFulfilledResult<{ job: { type: string } }[]>).value;
      expect(claims.map((c) => c.job.type)).toEqual(['held', 'held', 'held']);
      await closing;
      expect(exit.code).toBe(0);
      expect(existsSync(`${path}-wal`)).toBe(false);
      await expect(store.enqueue(job('late'))).rejects.toThrow('closed');
      expect(inspect(path)).toEqual({
        integrity: 'ok',
        jobs: {
          'warmup/pending': warmup,
          'bulk/pending': written,
          'held/pending': 7,
          'held/in_progress': 3,
          'hook/pending': 1,
        },
      });
    }, 15_000);
  }
});

describe('the worker fails during the held checkpoint', () => {
  const cases = [
    { mode: 'throw-once', exitCode: undefined, fallsBack: false },
    { mode: 'exit', exitCode: 7, fallsBack: true },
    { mode: 'uncaught', exitCode: 1, fallsBack: true },
  ] as const;
  for (const { mode, exitCode, fallsBack } of cases) {
    it(`${mode}: the hold is released, the write queued in it commits, ${fallsBack ? 'the store falls back to inline checkpoints' : 'the worker goes on and restarts the log later'}; nothing lost`, async () => {
      const dir = tempDir();
      const path = join(dir, 'jobs.db');
      probe.restartAtPages = 300;
      probe.driver = controlDriver(dir);
      const lines = warnings();
      const { store, ck, warmup } = await openWithWorker(path);
      const exit = exitOf(ck);
      let inHold: Promise<unknown> | undefined;
      probe.onHold = (gc) => {
        if (gc !== gcOf(store) || inHold !== undefined) return;
        arm(path, mode);
        inHold = store.enqueue(job('in-hold'));
      };
      let bulk = await pump(store, () => inHold !== undefined);
      await expect(inHold).resolves.toMatchObject({ created: true });
      await waitFor(() => !gcState(store).held, 'the hold to end');
      const restartsAfterFailure = ck.restarts;
      if (fallsBack) {
        await waitFor(() => exit.code !== undefined, 'the worker to exit');
        expect(exit.code).toBe(exitCode);
        expect(lines).toEqual([UNAVAILABLE]);
        expect(ck.active).toBe(false);
        expect(dbOf(store).pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
        // Writes go on, with SQLite's inline checkpoints (1,000 pages): ~2,400 pages more.
        const holdsBefore = holdsOf(store);
        const restartsBefore = walRestarts(path);
        const capacityBefore = walCapacity(path);
        bulk += await writeRounds(store, 150);
        expect(holdsOf(store)).toBe(holdsBefore);
        // SQLite's own checkpoint started the log over (at 1,000 pages), the file grew no further.
        expect(walRestarts(path)).toBeGreaterThan(restartsBefore);
        expect(walCapacity(path)).toBeLessThanOrEqual(Math.max(capacityBefore, 1000 + 100));
      } else {
        // One failure: the worker stays; a later restart holds again and succeeds.
        expect(ck.active).toBe(true);
        bulk += await pump(store, () => ck.restarts > restartsAfterFailure);
        expect(lines).toEqual([]);
        expect(ck.active).toBe(true);
      }
      await store.close();
      if (!fallsBack) expect(exit.code).toBe(0);
      expect(existsSync(`${path}-wal`)).toBe(false);
      expect(inspect(path)).toEqual({
        integrity: 'ok',
        jobs: { 'warmup/pending': warmup, 'bulk/pending': bulk, 'in-hold/pending': 1 },
      });
    }, 15_000);
  }

  it('a held checkpoint that hangs 0.5 s: the limit releases the hold, writes commit meanwhile, its late answer counts no restart and starts no hold; close waits for it', async () => {
    const dir = tempDir();
    const path = join(dir, 'jobs.db');
    probe.restartAtPages = 300;
    probe.driver = controlDriver(dir);
    const { store, ck, warmup } = await openWithWorker(path);
    let at: { completed: number; restarts: number } | undefined;
    let inHold: Promise<unknown> | undefined;
    let releasedWith: number | undefined;
    probe.onHold = (gc) => {
      if (gc !== gcOf(store) || at !== undefined) return;
      arm(path, 'sleep:500');
      at = { completed: ck.completed, restarts: ck.restarts };
      inHold = store.enqueue(job('in-hold'));
    };
    probe.onRelease = (gc) => {
      if (gc === gcOf(store) && at !== undefined && releasedWith === undefined) releasedWith = ck.completed;
    };
    let bulk = await pump(store, () => at !== undefined);
    await inHold;
    // Released by the limit: the held checkpoint had not answered.
    expect(releasedWith).toBe(at!.completed);
    // Writes go on while it hangs (no assertion on time: the answer is counted below).
    disarm(path);
    bulk += await writeRounds(store, 10, { bytes: 10 });
    const holds = holdsOf(store);
    expect(ck.completed).toBe(at!.completed);
    await waitFor(() => ck.completed === at!.completed + 1, 'the late answer');
    expect(ck.restarts).toBe(at!.restarts);
    expect(holdsOf(store)).toBe(holds);
    expect(gcState(store).held).toBe(false);
    await store.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
    expect(inspect(path)).toEqual({
      integrity: 'ok',
      jobs: { 'warmup/pending': warmup, 'bulk/pending': bulk, 'in-hold/pending': 1 },
    });
  }, 15_000);
});

describe('reads and unbatched writes issued during a hold', () => {
  it('see every call made before them (the held ones included) and settle; a batched call after them still waits for the release', async () => {
    const dir = tempDir();
    const path = join(dir, 'jobs.db');
    probe.restartAtPages = 300;
    probe.driver = controlDriver(dir);
    const { store, ck } = await openWithWorker(path);
    // Jobs to act on during the hold.
    const f = (await store.enqueue(job('f'))).job;
    const [fClaim] = await store.claim({ owner: 'w', types: ['f'], limit: 1, leaseMs: 60_000 });
    const k = (await store.enqueue(job('k'))).job;
    const [kClaim] = await store.claim({ owner: 'w', types: ['k'], limit: 1, leaseMs: 60_000 });
    const x = (await store.enqueue(job('x'))).job;
    let calls: Record<string, Promise<unknown>> | undefined;
    let state: object | undefined;
    let released = false;
    let lateBeforeRelease: boolean | undefined;
    probe.onHold = (gc) => {
      if (gc !== gcOf(store) || calls !== undefined) return;
      // The held checkpoint answers late: the hold lasts its whole 50 ms limit, not a few ms.
      arm(path, 'sleep:300');
      queueMicrotask(() => {
        const before = groupCommitStats.transactions;
        calls = {
          fail: store.fail(
            { id: f.id, token: fClaim!.token },
            { code: 'boom', message: 'boom', kind: 'permanent' },
          ),
          retry: store.retryFailed(f.id),
          claimX: store.claim({ owner: 'w2', types: ['x'], limit: 1, leaseMs: 60_000 }),
          cancelX: store.cancel(x.id),
          accept: store.acceptWebhook(delivery('during-hold'), job('hook')),
          getWebhook: store.getWebhook('src', 'during-hold'),
          listWebhooks: store.listWebhooks({ source: 'src' }),
          enqueue: store.enqueue(job('held-enq', { n: 1 })),
          list: store.list({ type: 'held-enq' }),
          heartbeat: store.heartbeat({ id: k.id, token: kClaim!.token }, 60_000),
          stream: store.appendStreamEvent('s-1', { n: 1 }),
          stats: store.stats(),
        };
        state = {
          held: gcState(store).held,
          heldCheckpoint: ck.heldCheckpoint,
          committedByTheFlushes: groupCommitStats.transactions - before > 0,
          queueEmpty: gcState(store).queue.length === 0,
        };
        // A batched call after them: held again.
        const late = store.enqueue(job('late'));
        calls.late = late.then((v) => {
          lateBeforeRelease = !released;
          return v;
        });
      });
    };
    probe.onRelease = (gc) => {
      if (gc === gcOf(store) && calls !== undefined) released = true;
    };
    const bulk = await pump(store, () => calls !== undefined);
    disarm(path);
    const names = Object.keys(calls!);
    const values = await Promise.all(Object.values(calls!));
    const r = Object.fromEntries(names.map((n, i) => [n, values[i]])) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(state).toEqual({
      held: true,
      heldCheckpoint: true,
      committedByTheFlushes: true,
      queueEmpty: true,
    });
    expect(r.fail).toMatchObject({ type: 'job.failed', jobId: f.id });
    expect(r.retry).toMatchObject({ retried: true, job: { id: f.id, status: 'pending', attempts: 0 } });
    expect(r.claimX.map((c: { job: { id: string } }) => c.job.id)).toEqual([x.id]);
    expect(r.cancelX).toMatchObject({ id: x.id, status: 'in_progress', leaseOwner: 'w2' });
    expect(r.cancelX.cancelRequestedAt).not.toBeNull();
    expect(r.getWebhook).toMatchObject({ eventId: 'during-hold', jobId: r.accept.record.jobId });
    expect(r.accept.duplicate).toBe(false);
    expect(r.listWebhooks.map((w: { eventId: string }) => w.eventId)).toEqual(['during-hold']);
    expect(r.list.map((j: { type: string }) => j.type)).toEqual(['held-enq']);
    expect(r.heartbeat).toEqual({ ok: true, cancelRequested: false });
    expect(typeof r.stream).toBe('string');
    expect(r.stats.counts).toMatchObject({ failed: 0, in_progress: 2 });
    expect(lateBeforeRelease).toBe(false);
    await store.close();
    const after = inspect(path);
    expect(after.integrity).toBe('ok');
    expect(after.jobs).toMatchObject({
      'f/pending': 1,
      'k/in_progress': 1,
      'x/in_progress': 1,
      'hook/pending': 1,
      'held-enq/pending': 1,
      'late/pending': 1,
      'bulk/pending': bulk,
    });
  }, 15_000);
});

describe('a process that only awaits a held write', () => {
  it('ends by itself with that write committed, whether the checkpoint answers, hangs past the limit or its worker dies', async () => {
    const dir = tempDir();
    const driver = controlDriver(dir);
    const modes = ['', 'sleep:600', 'exit'] as const;
    const children = modes.map((mode, i) => {
      const path = join(dir, `jobs-${i}.db`);
      const c = child(
        dir,
        `${CHILD_PRELUDE}
const path = ${JSON.stringify(path)};
const store = await openSqliteStore({ path, watchMs: 0 });
let held: Promise<{ job: { id: string } }> | undefined;
onHold = () => {
  if (held !== undefined) return;
  if (${JSON.stringify(mode)} !== '') writeFileSync(path + '.ctl', ${JSON.stringify(mode)});
  held = store.enqueue({ type: 'held', payload: null, runAt: 0, priority: 0, maxAttempts: 1 });
};
const payload = { blob: 'x'.repeat(8000) };
let bulk = 0;
while (held === undefined) {
  await Promise.all(Array.from({ length: 8 }, () => store.enqueue({ type: 'bulk', payload, runAt: 0, priority: 0, maxAttempts: 1 })));
  bulk += 8;
}
console.log('BULK ' + bulk);
// From here on the process waits for nothing but the held write (the worker is unref'd).
const r = await held;
console.log('HELD ' + r.job.id);
`,
        'tsx',
        { TUNE: JSON.stringify({ restartAtPages: 300, driver }) },
      );
      return { mode, path, c };
    });
    const outcomes = await Promise.all(
      children.map(async ({ mode, path, c }) => {
        const ended = await c.exitWithin(12_000);
        const heldLine = c.lines().find((l) => l.startsWith('HELD '));
        const bulk = Number(
          c
            .lines()
            .find((l) => l.startsWith('BULK '))
            ?.slice(5),
        );
        const file = inspect(path);
        return {
          mode,
          ended,
          held: heldLine !== undefined,
          holds: c.lines().filter((l) => l.startsWith('H ')).length >= 1,
          file: {
            integrity: file.integrity,
            held: file.jobs['held/pending'],
            bulkMatches: file.jobs['bulk/pending'] === bulk,
          },
          stderr: mode === 'exit' ? '' : c.err(),
        };
      }),
    );
    expect(outcomes).toEqual(
      modes.map((mode) => ({
        mode,
        ended: { code: 0, signal: null },
        held: true,
        holds: true,
        file: { integrity: 'ok', held: 1, bulkMatches: true },
        stderr: '',
      })),
    );
  }, 20_000);
});

describe('SIGKILL of a process under sustained mixed load, across several log restarts', () => {
  it('two rounds of enqueue / claim+complete / webhook accepts / stream appends + reads, killed after 4+ holds: every acknowledged write is in the reopened file', async () => {
    const dir = tempDir();
    const path = join(dir, 'jobs.db');
    const acked = { E: new Set<string>(), C: new Set<string>(), W: new Set<string>(), S: new Set<string>() };
    const report: { holds: number; restartsAtKill: number }[] = [];
    for (const run of [1, 2]) {
      const c = child(
        dir,
        `${CHILD_PRELUDE}
const RUN = ${run};
const store = await openSqliteStore({ path: ${JSON.stringify(path)}, watchMs: 0 });
const out = (s: string) => process.stdout.write(s + '\\n');
const blob = 'x'.repeat(6000);
async function enqueuer(w: number) {
  for (let i = 0; ; i++) {
    const r = await store.enqueue({ type: 'e', payload: { blob, w, i }, runAt: 0, priority: 0, maxAttempts: 3 });
    out('E ' + r.job.id);
  }
}
async function worker(w: number) {
  for (;;) {
    const claims = await store.claim({ owner: 'w' + w, types: ['e'], limit: 4, leaseMs: 600000 });
    if (claims.length === 0) { await new Promise((r) => setTimeout(r, 1)); continue; }
    await Promise.all(claims.map(async (c) => {
      const ev = await store.complete({ id: c.job.id, token: c.token }, { w });
      if (ev !== undefined) out('C ' + c.job.id);
    }));
  }
}
async function accepter(w: number) {
  for (let i = 0; ; i++) {
    const eventId = 'ev-' + RUN + '-' + w + '-' + i;
    const r = await store.acceptWebhook(
      { source: 'src', eventId, eventType: 't', receivedAt: 1, occurredAt: null, body: blob },
      { type: 'hook', payload: null, runAt: 0, priority: 0, maxAttempts: 1 },
    );
    out('W ' + eventId + ' ' + r.record.jobId + ' ' + r.duplicate);
  }
}
async function streamer() {
  for (let i = 0; ; i++) {
    await store.appendStreamEvent('st-' + RUN, { i });
    out('S ' + RUN + ':' + i);
    // A read between: it flushes whatever is held.
    await store.getWebhook('src', 'ev-' + RUN + '-0-' + i);
  }
}
for (let w = 0; w < 4; w++) void enqueuer(w);
for (let w = 0; w < 2; w++) void worker(w);
for (let w = 0; w < 3; w++) void accepter(w);
void streamer();
`,
        'tsx',
        { TUNE: JSON.stringify({ restartAtPages: 300 }) },
      );
      await c.waitLine((l) => l === 'H 4', 'four holds');
      const base = c.lines().length;
      const extra = 50 + Math.floor(Math.random() * 400);
      await c.waitLine(() => c.lines().length >= base + extra, 'more acknowledgements');
      c.proc.kill('SIGKILL');
      expect((await c.exited).signal).toBe('SIGKILL');
      report.push({
        holds: c.lines().filter((l) => l.startsWith('H ')).length,
        restartsAtKill: walRestarts(path),
      });
      for (const line of c.lines()) {
        const [kind, a, b, dup] = line.split(' ');
        if (kind === 'E' || kind === 'C') acked[kind].add(a!);
        else if (kind === 'W') {
          expect(dup).toBe('false');
          acked.W.add(`${a} ${b}`);
        } else if (kind === 'S') acked.S.add(a!);
      }
      const db = new Database(path);
      try {
        expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
        const count = (sql: string, ids: Set<string>) =>
          db
            .prepare<[string], number>(sql)
            .pluck()
            .get(JSON.stringify([...ids]));
        const found = {
          E: count(
            "SELECT count(*) FROM jobs WHERE type = 'e' AND id IN (SELECT value FROM json_each(?))",
            acked.E,
          ),
          C: count(
            "SELECT count(*) FROM jobs WHERE status = 'completed' AND id IN (SELECT value FROM json_each(?))",
            acked.C,
          ),
          W: count(
            `SELECT count(*) FROM webhook_inbox w JOIN jobs j ON j.id = w.job_id AND j.type = 'hook'
              WHERE w.event_id || ' ' || w.job_id IN (SELECT value FROM json_each(?))`,
            acked.W,
          ),
          S: count(
            `SELECT count(*) FROM stream_events e JOIN streams s USING (stream_key)
              WHERE substr(s.stream_id, 4) || ':' || json_extract(e.message, '$.i') IN (SELECT value FROM json_each(?))`,
            acked.S,
          ),
        };
        expect(found).toEqual({ E: acked.E.size, C: acked.C.size, W: acked.W.size, S: acked.S.size });
        // And nothing beyond what was in flight at the kill (4 enqueuers, 2 workers x 4, 3 accepters, 1 stream).
        const totals = db
          .prepare<[], { e: number; done: number; hooks: number; streamed: number }>(
            `SELECT (SELECT count(*) FROM jobs WHERE type = 'e') AS e,
                    (SELECT count(*) FROM jobs WHERE status = 'completed') AS done,
                    (SELECT count(*) FROM webhook_inbox) AS hooks,
                    (SELECT count(*) FROM stream_events) AS streamed`,
          )
          .get()!;
        expect(totals.e - acked.E.size).toBeLessThanOrEqual(4 * run);
        expect(totals.done - acked.C.size).toBeLessThanOrEqual(8 * run);
        expect(totals.hooks - acked.W.size).toBeLessThanOrEqual(3 * run);
        expect(totals.streamed - acked.S.size).toBeLessThanOrEqual(run);
      } finally {
        db.close();
      }
    }
    console.log(
      `[sigkill] acked E ${acked.E.size}, C ${acked.C.size}, W ${acked.W.size}, S ${acked.S.size}; per round ${JSON.stringify(report)}`,
    );
    for (const r of report) expect(r.holds).toBeGreaterThanOrEqual(4);
    expect(acked.C.size).toBeGreaterThan(0);
    // Reopened by the store: usable, and its close removes the log.
    const store = await openSqliteStore({ path, watchMs: 0 });
    cleanups.push(() => store.close());
    const stats = await store.stats();
    expect(stats.counts.completed).toBeGreaterThanOrEqual(acked.C.size);
    await store.enqueue(job('after'));
    await store.close();
    expect(existsSync(`${path}-wal`)).toBe(false);
    expect(inspect(path).integrity).toBe('ok');
  }, 30_000);
});

/** A reader on `path` in another process: `pin` keeps one read transaction open until stdin ends; `churn` runs short ones back to back. */
function readerCode(path: string, mode: 'pin' | 'churn'): string {
  return `const Database = require(${JSON.stringify(REAL_DRIVER)});
const db = new Database(${JSON.stringify(path)});
const count = db.prepare('SELECT count(*) FROM jobs').pluck();
let open = true;
process.stdin.on('data', () => {});
process.stdin.on('end', () => { open = false; });
if (${JSON.stringify(mode)} === 'pin') {
  db.exec('BEGIN');
  count.get();
  console.log('PINNED');
  process.stdin.on('end', () => { db.exec('COMMIT'); db.close(); console.log('DONE'); });
} else {
  let n = 0;
  console.log('PINNED');
  const loop = () => {
    if (!open) { db.close(); console.log('DONE ' + n); return; }
    db.exec('BEGIN');
    count.get();
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
    db.exec('COMMIT');
    n++;
    setImmediate(loop);
  };
  loop();
}
`;
}

describe('a reader in another process', () => {
  it('holding one read transaction: no hold while it pins the log (the log must grow), restarts resume once it ends; nothing lost', async () => {
    probe.restartAtPages = 300;
    const dir = tempDir();
    const path = join(dir, 'jobs.db');
    const { store, ck, warmup } = await openWithWorker(path);
    let bulk = await pump(store, () => ck.restarts >= 1);
    const reader = child(dir, readerCode(path, 'pin'), 'cjs');
    await reader.waitLine((l) => l === 'PINNED', 'the reader');
    const at = { holds: holdsOf(store), restarts: walRestarts(path), completed: ck.completed };
    bulk += await writeRounds(store, 250);
    const during = {
      holds: holdsOf(store) - at.holds,
      restarts: walRestarts(path) - at.restarts,
      checkpoints: ck.completed - at.completed,
      capacity: walCapacity(path),
    };
    console.log(`[pinned reader] ${JSON.stringify(during)}`);
    expect(during.holds).toBeLessThanOrEqual(1);
    expect(during.restarts).toBeLessThanOrEqual(1);
    expect(during.checkpoints).toBeGreaterThanOrEqual(2); // ~250 commits: one every 64
    expect(ck.active).toBe(true);
    reader.proc.stdin.end();
    await reader.waitLine((l) => l === 'DONE', 'the reader to end');
    const after = { holds: holdsOf(store), restarts: walRestarts(path) };
    bulk += await pump(store, () => walRestarts(path) >= after.restarts + 2 && holdsOf(store) > after.holds);
    await closeAndCheck(store, path, { 'warmup/pending': warmup, 'bulk/pending': bulk });
  }, 20_000);

  it('running short read transactions back to back: holds stay about as many as the log restarts (none wasted in a loop); nothing lost', async () => {
    probe.restartAtPages = 300;
    const dir = tempDir();
    const path = join(dir, 'jobs.db');
    const { store, ck, warmup } = await openWithWorker(path);
    const reader = child(dir, readerCode(path, 'churn'), 'cjs');
    await reader.waitLine((l) => l === 'PINNED', 'the reader');
    const at = {
      holds: holdsOf(store),
      restarts: walRestarts(path),
      counted: ck.restarts,
      completed: ck.completed,
    };
    const bulk = await writeRounds(store, 400);
    reader.proc.stdin.end();
    await reader.waitLine((l) => l.startsWith('DONE '), 'the reader to end');
    const during = {
      holds: holdsOf(store) - at.holds,
      restarts: walRestarts(path) - at.restarts,
      counted: ck.restarts - at.counted,
      checkpoints: ck.completed - at.completed,
      capacity: walCapacity(path),
      readerTransactions: Number(
        reader
          .lines()
          .find((l) => l.startsWith('DONE '))!
          .slice(5),
      ),
    };
    console.log(`[churning reader] ${JSON.stringify(during)}`);
    expect(during.readerTransactions).toBeGreaterThan(50);
    expect(during.holds).toBeLessThanOrEqual(during.restarts + 2);
    // Not asserted: capacity <= BOUND_PAGES. Such a reader also starves SQLite's own restart at the bound
    // (seen here 9,200-10,950 pages; and before this change too, at the default thresholds, 15,000-19,600).
    await closeAndCheck(store, path, { 'warmup/pending': warmup, 'bulk/pending': bulk });
  }, 20_000);
});

describe('two stores in one process', () => {
  /** Checks, a turn after every hold and release, that each store's group commit is held exactly while its own checkpointer's hold timer runs. */
  function watchPairing(stores: Store[]): string[] {
    const violations: string[] = [];
    const check = (what: string) =>
      queueMicrotask(() => {
        for (const [i, s] of stores.entries()) {
          const held = gcState(s).held;
          const timer = ckOf(s).holdTimer !== undefined;
          if (held !== timer) violations.push(`${what}: store ${i} held=${held} timer=${timer}`);
        }
      });
    probe.onHold = (gc) => check(`hold of ${stores.findIndex((s) => gcOf(s) === gc)}`);
    probe.onRelease = (gc) => check(`release of ${stores.findIndex((s) => gcOf(s) === gc)}`);
    return violations;
  }

  it('on two files: each restarts its own log, a hold holds only its own store, nothing lost', async () => {
    probe.restartAtPages = 300;
    const dir = tempDir();
    const a = await openWithWorker(join(dir, 'a.db'));
    const b = await openWithWorker(join(dir, 'b.db'));
    const violations = watchPairing([a.store, b.store]);
    const restarts = { a: walRestarts(join(dir, 'a.db')), b: walRestarts(join(dir, 'b.db')) };
    const enough = () => a.ck.restarts >= 3 && b.ck.restarts >= 3;
    const [bulkA, bulkB] = await Promise.all([
      pump(a.store, enough, { type: 'a' }),
      pump(b.store, enough, { type: 'b' }),
    ]);
    expect(violations).toEqual([]);
    expect(holdsOf(a.store)).toBeGreaterThanOrEqual(3);
    expect(holdsOf(b.store)).toBeGreaterThanOrEqual(3);
    expect(walRestarts(join(dir, 'a.db')) - restarts.a).toBeGreaterThanOrEqual(a.ck.restarts);
    expect(walRestarts(join(dir, 'b.db')) - restarts.b).toBeGreaterThanOrEqual(b.ck.restarts);
    await Promise.all([a.store.close(), b.store.close()]);
    for (const [name, bulk, warmup] of [
      ['a', bulkA, a.warmup],
      ['b', bulkB, b.warmup],
    ] as const) {
      expect(existsSync(join(dir, `${name}.db-wal`))).toBe(false);
      expect(inspect(join(dir, `${name}.db`))).toEqual({
        integrity: 'ok',
        jobs: { 'warmup/pending': warmup, [`${name}/pending`]: bulk },
      });
    }
  }, 20_000);

  /** Two stores on one file, each with its own worker, written at once until `rounds` rounds each. */
  async function twoOnOneFile(rounds: number) {
    probe.restartAtPages = 300;
    const path = join(tempDir(), 'jobs.db');
    const a = await openWithWorker(path);
    const b = await openWithWorker(path);
    const violations = watchPairing([a.store, b.store]);
    const before = {
      log: walRestarts(path),
      a: a.ck.restarts,
      b: b.ck.restarts,
      holds: holdsOf(a.store) + holdsOf(b.store),
    };
    const [bulkA, bulkB] = await Promise.all([
      writeRounds(a.store, rounds, { type: 'a' }),
      writeRounds(b.store, rounds, { type: 'b' }),
    ]);
    const figures = {
      holds: holdsOf(a.store) + holdsOf(b.store) - before.holds,
      counted: a.ck.restarts - before.a + b.ck.restarts - before.b,
      real: walRestarts(path) - before.log,
      capacity: walCapacity(path),
    };
    console.log(`[two stores, one file] ${JSON.stringify(figures)}`);
    return { path, a, b, violations, bulkA, bulkB, figures };
  }

  it('on one file, each with its own worker: holds and releases pair per store, nothing lost', async () => {
    const { path, a, b, violations, bulkA, bulkB } = await twoOnOneFile(150);
    expect(violations).toEqual([]);
    await Promise.all([a.store.close(), b.store.close()]);
    expect(existsSync(`${path}-wal`)).toBe(false);
    expect(inspect(path)).toEqual({
      integrity: 'ok',
      jobs: { 'warmup/pending': a.warmup + b.warmup, 'a/pending': bulkA, 'b/pending': bulkB },
    });
  }, 20_000);

  // Found by this suite (fixed): a hold only holds this store's group commit, and another writer on the same
  // file (a second store, or a second process) commits through it, so the log cannot start over. The
  // checkpointer used to count a restart anyway and hold again at its next checkpoints; it now reads
  // `PRAGMA data_version` and neither holds nor counts while another connection commits (the log is left to
  // the 10,000-page bound then).
  it('on one file: every restart the checkpointers count is a real one, and a hold does not repeat without one', async () => {
    const { a, b, figures } = await twoOnOneFile(300);
    await Promise.all([a.store.close(), b.store.close()]);
    expect(
      figures.counted,
      `counted restarts vs SQLite's own count (${JSON.stringify(figures)})`,
    ).toBeLessThanOrEqual(figures.real);
    expect(figures.holds, `holds vs real restarts (${JSON.stringify(figures)})`).toBeLessThanOrEqual(
      figures.real + 2,
    );
  }, 20_000);
});
