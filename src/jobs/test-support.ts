/**
 * Shared test helpers for jobs/ (not a test file itself): a runtime on an in-memory SQLite store with a
 * FakeClock, deferred promises, and a deterministic backoff.
 */
import { FakeClock } from '../core/index.js';
import type { Backoff } from '../policy/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type JobEvent, type JobStore } from '../store/index.js';
import { createJobs } from './jobs.js';
import type { Jobs, JobsOptions } from './types.js';

export const LEASE_MS = 30_000;
export const HEARTBEAT_MS = 10_000;
export const POLL_MS = 5_000;

export interface Harness {
  clock: FakeClock;
  store: JobStore;
  jobs: Jobs;
}

/** A runtime on a fresh `:memory:` SQLite store (lease 30 s, heartbeat 10 s, poll 5 s, owner `w1`). */
export async function harness(overrides: Partial<JobsOptions> = {}, store?: JobStore): Promise<Harness> {
  const clock = (overrides.clock as FakeClock | undefined) ?? new FakeClock();
  const s = store ?? (await openSqliteStore({ path: ':memory:', clock }));
  const jobs = createJobs({
    store: s,
    clock,
    owner: 'w1',
    leaseMs: LEASE_MS,
    heartbeatMs: HEARTBEAT_MS,
    pollMs: POLL_MS,
    ...overrides,
  });
  return { clock, store: s, jobs };
}

/** A promise with its resolve and reject exposed. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise chain settle without moving fake time. */
export async function flush(clock: FakeClock): Promise<void> {
  for (let i = 0; i < 5; i++) await clock.tickAsync(0);
}

/** Delays `[d1, d2, ...]` for retries 1, 2, ... (then the last one): exact times in tests. */
export function fixedBackoff(...delays: number[]): Backoff & { calls: number[] } {
  const calls: number[] = [];
  return {
    calls,
    next(retry: number): number {
      calls.push(retry);
      return delays[Math.min(retry, delays.length) - 1]!;
    },
  };
}

/** `[type, seq]` pairs of a job's stored events. */
export async function eventTypes(store: JobStore, jobId: string): Promise<[string, number][]> {
  return (await store.events(jobId)).map((e: JobEvent) => [e.type, e.seq]);
}
